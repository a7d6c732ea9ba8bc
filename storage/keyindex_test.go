package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/index"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// keyedMessage is a test message of topic with KEYS keys and UNIQ_KEY uniq
// (either may be empty).
func keyedMessage(topic, keys, uniq string, bodyLen int) *Message {
	m := testMessage(topic, 0, bodyLen)
	if keys != "" {
		m.Properties = record.AppendProperty(m.Properties, record.PropertyKeys, keys)
	}
	if uniq != "" {
		m.Properties = record.AppendProperty(m.Properties, PropertyUniqKey, uniq)
	}
	return m
}

func keyOptions(fs vfs.FS) Options {
	return Options{Dir: "/data/store", FS: fs, SegmentSize: 16 << 10, CheckpointInterval: time.Hour,
		MessageIndex: MessageIndexOptions{MaxHashSlots: 7, MaxEntries: 40},
		Retention:    RetentionOptions{MaxAge: -1, DiskRatio: -1, CheckInterval: time.Hour}, Logger: quietLogger()}
}

// waitKeyIndexed waits (with a deadline) until the key index covers every
// written record.
func waitKeyIndexed(t testing.TB, s *Store) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for s.kidx.x.End() < s.WrittenOffset() {
		if time.Now().After(deadline) {
			t.Fatalf("key index stuck at %d, written %d", s.kidx.x.End(), s.WrittenOffset())
		}
		time.Sleep(time.Millisecond)
	}
}

func appendOK(t testing.TB, s *Store, m *Message) AppendResult {
	t.Helper()
	r, err := s.Append(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func queryPhys(t testing.TB, s *Store, topic, key string, maxNum int, begin, end int64) []int64 {
	t.Helper()
	res, err := s.QueryByKey(topic, key, maxNum, begin, end)
	if err != nil {
		t.Fatal(err)
	}
	return res.PhysOffsets
}

func TestQueryByKey(t *testing.T) {
	clock := newClock()
	opts := keyOptions(vfs.NewMem())
	opts.Clock = clock.now
	s := mustOpen(t, opts)
	defer s.Close()
	var ab, c, u []int64
	for i := range 60 {
		clock.advance(700 * time.Millisecond)
		switch i % 3 {
		case 0:
			ab = append(ab, appendOK(t, s, keyedMessage("T", "a b", fmt.Sprintf("U%d", i), 200)).PhysicalOffset)
		case 1:
			c = append(c, appendOK(t, s, keyedMessage("T", "c", "", 200)).PhysicalOffset)
		default:
			u = append(u, appendOK(t, s, keyedMessage("T2", "a", "", 200)).PhysicalOffset)
		}
	}
	waitKeyIndexed(t, s)
	newestFirst := func(p []int64) []int64 { q := slices.Clone(p); slices.Reverse(q); return q }
	all := int64(1 << 62)
	for _, k := range []string{"a", "b"} {
		if got := queryPhys(t, s, "T", k, 100, 0, all); !slices.Equal(got, newestFirst(ab)) {
			t.Fatalf("key %s: %v want %v", k, got, newestFirst(ab))
		}
	}
	if got := queryPhys(t, s, "T", "c", 100, 0, all); !slices.Equal(got, newestFirst(c)) {
		t.Fatalf("key c: %v", got)
	}
	if got := queryPhys(t, s, "T2", "a", 100, 0, all); !slices.Equal(got, newestFirst(u)) {
		t.Fatalf("T2 key a: %v", got)
	}
	if got := queryPhys(t, s, "T", "U9", 100, 0, all); !slices.Equal(got, []int64{ab[3]}) {
		t.Fatalf("uniq key U9: %v want %v", got, ab[3])
	}
	for _, k := range []string{"a b", "", "zz", "U"} {
		if got := queryPhys(t, s, "T", k, 100, 0, all); len(got) != 0 {
			t.Fatalf("key %q: %v", k, got)
		}
	}
	if got := queryPhys(t, s, "T", "a", 3, 0, all); !slices.Equal(got, newestFirst(ab)[:3]) {
		t.Fatalf("maxNum 3: %v", got)
	}
	// A time range: exactly the records stored in it (ms, not the
	// index's seconds).
	res, _ := s.QueryByKey("T", "c", 100, 0, all)
	var times []int64
	for _, raw := range res.Records {
		times = append(times, record.StoreTimestampOf(raw))
	}
	lo, hi := times[len(times)-3], times[2]
	got := queryPhys(t, s, "T", "c", 100, lo, hi)
	if want := newestFirst(c)[2 : len(c)-2]; !slices.Equal(got, want) {
		t.Fatalf("range [%d, %d]: %v want %v", lo, hi, got, want)
	}
	if res.IndexLastUpdatePhyoffset != u[len(u)-1] && res.IndexLastUpdatePhyoffset != c[len(c)-1] {
		t.Fatalf("IndexLastUpdatePhyoffset %d", res.IndexLastUpdatePhyoffset)
	}
}

// TestKeyIndexLargeRecords: records larger than the index's 256 KiB read
// window are indexed (the dispatcher once looped on one for ever), and the
// small ones around them too.
func TestKeyIndexLargeRecords(t *testing.T) {
	opts := keyOptions(vfs.NewMem())
	opts.SegmentSize = 4 << 20
	opts.MaxMessageSize = 1 << 20
	s := mustOpen(t, opts)
	defer s.Close()
	var want []int64
	for i, n := range []int{100, 600 << 10, 200, 1 << 20, 300} {
		want = append(want, appendOK(t, s, keyedMessage("T", fmt.Sprintf("k%d all", i), "", n)).PhysicalOffset)
	}
	waitKeyIndexed(t, s)
	for i, p := range want {
		if got := queryPhys(t, s, "T", fmt.Sprintf("k%d", i), 10, 0, 1<<62); !slices.Equal(got, []int64{p}) {
			t.Fatalf("key k%d: %v, want [%d]", i, got, p)
		}
	}
	if got := queryPhys(t, s, "T", "all", 10, 0, 1<<62); len(got) != len(want) {
		t.Fatalf("key all: %d records, want %d", len(got), len(want))
	}
}

func TestQueryByKeyFiltersCollisions(t *testing.T) {
	// Two keys with one 32-bit index hash in topic T (birthday search).
	seen := map[uint32]string{}
	var k1, k2 string
	for i := 0; k2 == ""; i++ {
		k := fmt.Sprintf("key-%d", i)
		h := index.Hash("T", []byte(k))
		if o, ok := seen[h]; ok {
			k1, k2 = o, k
		}
		seen[h] = k
	}
	s := mustOpen(t, keyOptions(vfs.NewMem()))
	defer s.Close()
	p1 := appendOK(t, s, keyedMessage("T", k1, "", 10)).PhysicalOffset
	waitKeyIndexed(t, s)
	if got := queryPhys(t, s, "T", k1, 10, 0, 1<<62); !slices.Equal(got, []int64{p1}) {
		t.Fatalf("%s: %v", k1, got)
	}
	if got := queryPhys(t, s, "T", k2, 10, 0, 1<<62); len(got) != 0 {
		t.Fatalf("%s collides with %s: the record at %v must be filtered out", k2, k1, got)
	}
}

func TestQueryByKeyDisabled(t *testing.T) {
	fs := vfs.NewMem()
	opts := keyOptions(fs)
	opts.MessageIndex.Disabled = true
	s := mustOpen(t, opts)
	appendOK(t, s, keyedMessage("T", "a", "", 10))
	if _, err := s.QueryByKey("T", "a", 1, 0, 1<<62); !errors.Is(err, ErrIndexDisabled) {
		t.Fatalf("disabled: %v", err)
	}
	s.Close()
	// Turned on later, it indexes the whole log at Open.
	s = mustOpen(t, keyOptions(fs))
	defer s.Close()
	if got := queryPhys(t, s, "T", "a", 10, 0, 1<<62); len(got) != 1 {
		t.Fatalf("after enabling: %v", got)
	}
}

// checkKeyIndex requires every key of every record in the log to find
// exactly the records holding it (no record missing, none extra).
func checkKeyIndex(t *testing.T, s *Store, where string) {
	t.Helper()
	want := map[[2]string][]int64{}
	var rec record.Record
	for _, lr := range walkLog(t, s, where) {
		if err := record.DecodeUnchecked(lr.b, &rec); err != nil {
			t.Fatal(err)
		}
		topic := string(rec.Topic)
		record.ForEachProperty(rec.Properties, func(name, value []byte) bool {
			var keys []string
			switch string(name) {
			case record.PropertyKeys:
				keys = strings.Fields(string(value))
			case PropertyUniqKey:
				keys = []string{string(value)}
			}
			for _, key := range keys {
				k := [2]string{topic, key}
				want[k] = append([]int64{lr.phys}, want[k]...)
			}
			return true
		})
	}
	for k, w := range want {
		if got := queryPhys(t, s, k[0], k[1], 1000, 0, 1<<62); !slices.Equal(got, w) {
			t.Fatalf("%s: %s/%s: got %v want %v", where, k[0], k[1], got, w)
		}
	}
}

// TestKeyIndexCrash appends keyed messages while checkpoints run, crashes
// the machine or the process at a random point, reopens and requires the
// index to answer exactly what the recovered log holds; then again after
// more appends and a clean reopen.
func TestKeyIndexCrash(t *testing.T) {
	for seed := range int64(12) {
		rng := rand.New(rand.NewSource(seed))
		fs := vfs.NewMem()
		opts := keyOptions(fs)
		opts.CheckpointInterval = time.Duration(1+rng.Intn(3)) * time.Millisecond
		opts.Flush.Policy = []FlushPolicy{FlushAsync, FlushSync}[rng.Intn(2)]
		s := mustOpen(t, opts)
		n := 50 + rng.Intn(200)
		for i := range n {
			keys := fmt.Sprintf("k%d", rng.Intn(9))
			if rng.Intn(3) == 0 {
				keys += fmt.Sprintf(" j%d", rng.Intn(4))
			}
			appendOK(t, s, keyedMessage([]string{"A", "B"}[rng.Intn(2)], keys, fmt.Sprintf("u%d", i), rng.Intn(600)))
		}
		var cfs *vfs.MemFS
		if seed%2 == 0 {
			cfs = fs.ProcessCrashClone()
		} else {
			cfs = fs.CrashClone(rng)
		}
		s.Close()
		if seed%4 == 1 { // a damaged index file is not trusted
			names, _ := cfs.List("/data/store/index")
			if len(names) > 1 {
				f, err := cfs.Open("/data/store/index/"+names[0], vfs.OpenOptions{})
				if err == nil {
					f.WriteAt([]byte("garbage!"), 0)
					f.Sync()
					f.Close()
				}
			}
		}
		opts.FS = cfs
		s = mustOpen(t, opts)
		checkKeyIndex(t, s, fmt.Sprintf("seed %d after the crash", seed))
		for i := range 30 {
			appendOK(t, s, keyedMessage("A", fmt.Sprintf("k%d", rng.Intn(9)), fmt.Sprintf("v%d", i), rng.Intn(600)))
		}
		waitKeyIndexed(t, s)
		checkKeyIndex(t, s, fmt.Sprintf("seed %d after more appends", seed))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = mustOpen(t, opts)
		checkKeyIndex(t, s, fmt.Sprintf("seed %d after a clean reopen", seed))
		s.Close()
	}
}

// TestKeyIndexTruncateTo: a replica's cut drops the index entries past it,
// and records appended at the same offsets afterwards are found.
func TestKeyIndexTruncateTo(t *testing.T) {
	s := mustOpen(t, keyOptions(vfs.NewMem()))
	defer s.Close()
	var rs []AppendResult
	for i := range 40 {
		rs = append(rs, appendOK(t, s, keyedMessage("T", fmt.Sprintf("k%d", i%3), "", 300)))
	}
	waitKeyIndexed(t, s)
	if err := s.TruncateTo(rs[25].PhysicalOffset); err != nil {
		t.Fatal(err)
	}
	checkKeyIndex(t, s, "after the cut")
	for range 10 {
		appendOK(t, s, keyedMessage("T", "new", "", 300))
	}
	waitKeyIndexed(t, s)
	checkKeyIndex(t, s, "after regrowth")
}

// TestKeyIndexRetention: index files wholly below the log's first offset
// go with the segments.
func TestKeyIndexRetention(t *testing.T) {
	fs := vfs.NewMem()
	clock := newClock()
	opts := keyOptions(fs)
	opts.Clock = clock.now
	opts.Flush.Policy = FlushSync
	opts.Retention = RetentionOptions{MaxAge: time.Hour, DiskRatio: -1, CheckInterval: time.Hour}
	s := mustOpen(t, opts)
	defer s.Close()
	for i := range 300 {
		appendOK(t, s, keyedMessage("T", fmt.Sprintf("k%d", i%5), "", 500))
	}
	waitKeyIndexed(t, s)
	before, _ := fs.List("/data/store/index")
	clock.advance(2 * time.Hour)
	appendOK(t, s, keyedMessage("T", "late", "", 500))
	waitKeyIndexed(t, s)
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ApplyRetention(); err != nil || n == 0 {
		t.Fatalf("retention: %d segments, %v", n, err)
	}
	after, _ := fs.List("/data/store/index")
	if len(after) >= len(before) {
		t.Fatalf("index files %d before retention, %d after", len(before), len(after))
	}
	checkKeyIndex(t, s, "after retention")
}

// TestKeyIndexWriteErrors: while the index cannot create its file (a full
// disk) appends go on and a query finds nothing rather than anything
// wrong; once the disk has room the dispatcher catches the index up from
// the log. While its checkpoint cannot be written, a crash makes the next
// Open index the log again.
func TestKeyIndexWriteErrors(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem, errorfs.Rule{Op: errorfs.OpCreate, Path: "/data/store/index/20", Sticky: true, Err: syscall.ENOSPC})
	opts := keyOptions(efs)
	opts.CheckpointInterval = time.Millisecond
	s := mustOpen(t, opts)
	for i := range 20 {
		appendOK(t, s, keyedMessage("T", fmt.Sprintf("k%d", i%4), "", 100))
	}
	waitDispatched(t, s)
	for deadline := time.Now().Add(10 * time.Second); efs.Injected() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the index never tried to create its file")
		}
	}
	if got := queryPhys(t, s, "T", "k1", 100, 0, 1<<62); len(got) != 0 {
		t.Fatalf("an index that could not write answered %v", got)
	}
	efs.ClearRules()
	appendOK(t, s, keyedMessage("T", "k1", "", 100)) // a dispatcher round
	waitKeyIndexed(t, s)
	checkKeyIndex(t, s, "after the disk had room")

	efs.AddRule(errorfs.Rule{Op: errorfs.OpRename, Path: "/data/store/index/checkpoint", Sticky: true})
	for i := range 20 {
		appendOK(t, s, keyedMessage("T", fmt.Sprintf("k%d", i%4), "", 100))
	}
	waitKeyIndexed(t, s)
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.ProcessCrashClone()
	s.Close()
	opts.FS = crashed
	s = mustOpen(t, opts)
	defer s.Close()
	checkKeyIndex(t, s, "after a crash with the index checkpoint failing")
}

// TestKeyIndexTakesKeysAtAppend: the dispatcher indexes a record from the
// keys its append took, without reading it back from the log; only a
// record with more keys than a dispatch request holds (and the blank
// closing a segment) is read back. Both are found by key.
func TestKeyIndexTakesKeysAtAppend(t *testing.T) {
	opts := keyOptions(vfs.NewMem())
	opts.MessageIndex.MaxEntries = 1000
	s := mustOpen(t, opts)
	defer s.Close()
	var one, many []int64
	for i := range 40 {
		if i%10 == 9 {
			many = append(many, appendOK(t, s, keyedMessage("M", "k1 k2 k3 k4 k5", fmt.Sprintf("V%d", i), 200)).PhysicalOffset)
			continue
		}
		if i%10 >= 6 { // keyless runs: put as one
			appendOK(t, s, keyedMessage("M", "", "", 200))
			continue
		}
		one = append(one, appendOK(t, s, keyedMessage("M", "solo", fmt.Sprintf("V%d", i), 200)).PhysicalOffset)
	}
	waitKeyIndexed(t, s)
	if got := queryPhys(t, s, "M", "solo", 100, 0, 1<<62); len(got) != len(one) {
		t.Fatalf("key solo: %d records, want %d", len(got), len(one))
	}
	if got := queryPhys(t, s, "M", "k5", 100, 0, 1<<62); len(got) != len(many) {
		t.Fatalf("key k5: %d records, want %d", len(got), len(many))
	}
	if got := queryPhys(t, s, "M", "V13", 100, 0, 1<<62); len(got) != 1 || got[0] != one[9] { // i 13 is the tenth solo
		t.Fatalf("uniq key V13: %v want %d", got, one[9])
	}
	rolls := int64(s.Metrics().Rolls)
	if rb := s.kidx.readBack.Load(); rb > int64(len(many))+2*rolls+2 {
		t.Fatalf("%d records read back from the log (%d with 6 keys, %d rolls): the appends' keys were not used", rb, len(many), rolls)
	}
}
