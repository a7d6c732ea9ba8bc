package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// replOptions are a replication test's store options: small segments (the
// log rolls every few records) and the backend's test buffers.
func replOptions(t testing.TB, mem vfs.FS, dir, be string, policy FlushPolicy) Options {
	o := testOptions(mem, be, policy)
	o.Dir = dir
	o.Backend = ""
	o.SegmentBackend = testBackend(t, be)
	o.Flush.Timeout = time.Minute
	return o
}

// replMessage is a message of random size, topic and queue; one in twenty
// is a prepared transaction (no queue offset, no index entry).
func replMessage(rng *rand.Rand, segSize int64) *Message {
	m := testMessage(crashTopics[rng.Intn(len(crashTopics))], int32(rng.Intn(3)), 0)
	m.Body = make([]byte, rng.Intn(int(segSize)/5))
	rng.Read(m.Body)
	if rng.Intn(20) == 0 {
		m.SysFlag = record.TransactionPrepared
	}
	return m
}

// appendRandom appends n random messages (some in batches) to s.
func appendRandom(t testing.TB, s *Store, rng *rand.Rand, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; {
		if k := 1 + rng.Intn(3); k > 1 && i+k <= n {
			msgs := make([]*Message, k)
			for j := range msgs {
				msgs[j] = replMessage(rng, s.segSize/int64(k))
			}
			if _, err := s.AppendBatch(ctx, msgs); err != nil {
				t.Fatal(err)
			}
			i += k
			continue
		}
		if _, err := s.Append(ctx, replMessage(rng, s.segSize)); err != nil {
			t.Fatal(err)
		}
		i++
	}
}

// replicator copies a master's log to a slave as package ha would: ReadLog
// from the slave's written offset into buf, AppendReplicated.
type replicator struct {
	m, s  *Store
	buf   []byte
	big   []byte // for what does not fit buf
	grown int    // reads that needed big
}

func newReplicator(m, s *Store, bufSize int) *replicator {
	return &replicator{m: m, s: s, buf: make([]byte, bufSize), big: make([]byte, m.MaxRecordSize())}
}

// step copies what one ReadLog gives; false if there was nothing new.
func (r *replicator) step(t testing.TB) bool {
	t.Helper()
	from := r.s.WrittenOffset()
	n, next, err := r.m.ReadLog(from, r.buf)
	buf := r.buf
	if errors.Is(err, io.ErrShortBuffer) {
		r.grown++
		buf = r.big
		n, next, err = r.m.ReadLog(from, buf)
	}
	if err != nil {
		t.Fatalf("ReadLog(%d): %v", from, err)
	}
	if n == 0 {
		return false
	}
	if h := r.m.HandedOffset(); next > h {
		t.Fatalf("ReadLog(%d) returned %d bytes, past the handed offset %d", from, n, h)
	}
	end, err := r.s.AppendReplicated(context.Background(), from, buf[:n])
	if err != nil {
		t.Fatalf("AppendReplicated(%d, %d bytes): %v", from, n, err)
	}
	if end != next || end != r.s.WrittenOffset() {
		t.Fatalf("AppendReplicated(%d, %d bytes) = %d, written %d", from, n, end, r.s.WrittenOffset())
	}
	return true
}

// catchUp copies until the slave has everything the master handed over.
func (r *replicator) catchUp(t testing.TB) {
	t.Helper()
	for r.step(t) {
	}
	if w, h := r.s.WrittenOffset(), r.m.HandedOffset(); w != h {
		t.Fatalf("slave at %d, master handed %d", w, h)
	}
}

// sameLog checks the slave's log is the master's from the slave's min
// offset to its written one: the same records, the same segment files
// byte for byte (bytes past a file's end read as zeros), the same queues.
func sameLog(t *testing.T, m, s *Store, where string) {
	t.Helper()
	lo, end := s.CommitLogMinOffset(), s.WrittenOffset()
	var mine []logRecord
	for _, r := range walkLog(t, m, where+": master") {
		if r.phys >= lo && r.phys < end {
			mine = append(mine, r)
		}
	}
	theirs := walkLog(t, s, where+": slave")
	if len(mine) != len(theirs) {
		t.Fatalf("%s: master has %d records in [%d, %d), slave %d", where, len(mine), lo, end, len(theirs))
	}
	for i := range mine {
		if mine[i].phys != theirs[i].phys || !bytes.Equal(mine[i].b, theirs[i].b) {
			t.Fatalf("%s: record %d: master at %d, slave at %d (equal bytes: %v)", where, i, mine[i].phys, theirs[i].phys,
				bytes.Equal(mine[i].b, theirs[i].b))
		}
	}
	// The files themselves: what a buffering backend still holds goes out
	// first (a replicated append under sync flush does not wait for its
	// flush round).
	for _, st := range []*Store{m, s} {
		if err := st.FlushTo(context.Background(), st.WrittenOffset()); err != nil {
			t.Fatalf("%s: flush: %v", where, err)
		}
	}
	for base := lo; base < end; base += s.segSize {
		n := min(end-base, s.segSize)
		a := readFileZeros(t, m, base, n)
		b := readFileZeros(t, s, base, n)
		if !bytes.Equal(a, b) {
			i := 0
			for a[i] == b[i] {
				i++
			}
			t.Fatalf("%s: segment %d differs at byte %d (offset %d)", where, base, i, base+int64(i))
		}
	}
	sameQueues(t, m, s, where)
}

// readFileZeros reads n bytes of the segment file at base, zeros past its
// end.
func readFileZeros(t *testing.T, s *Store, base, n int64) []byte {
	t.Helper()
	b := make([]byte, n)
	f, err := s.fs.Open(s.segmentPath(base), vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("open segment %d: %v", base, err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("read segment %d: %v", base, err)
	}
	return b
}

// sameQueues checks GetMessages gives the slave's every queue as the
// master's (from the slave's first offset of each).
func sameQueues(t *testing.T, m, s *Store, where string) {
	t.Helper()
	waitDispatched(t, m)
	waitDispatched(t, s)
	for _, topic := range crashTopics {
		for q := int32(0); q < 3; q++ {
			want, have := m.MaxQueueOffset(topic, q), s.MaxQueueOffset(topic, q)
			if have == 0 && s.CommitLogMinOffset() > 0 {
				continue // the queue's records may all lie below the slave's log
			}
			if want != have {
				t.Fatalf("%s: %s/%d: max offset %d on the master, %d on the slave", where, topic, q, want, have)
			}
			from := s.MinQueueOffset(topic, q)
			for lo := s.CommitLogMinOffset(); from < have; from++ { // after a restart MinOffset lags retention
				if e, err := s.queue(topic, q).Entry(from); err != nil || e.PhysOffset >= lo {
					break
				}
			}
			a, errA := m.GetMessages(topic, q, from, 1<<20, 0, nil)
			b, errB := s.GetMessages(topic, q, from, 1<<20, 0, nil)
			if errA != nil || errB != nil || a.Status != b.Status || len(a.Records) != len(b.Records) {
				t.Fatalf("%s: %s/%d from %d: master %v %v %d records, slave %v %v %d", where, topic, q, from,
					errA, a.Status, len(a.Records), errB, b.Status, len(b.Records))
			}
			for i := range a.Records {
				if a.QueueOffsets[i] != b.QueueOffsets[i] || !bytes.Equal(a.Records[i], b.Records[i]) {
					t.Fatalf("%s: %s/%d: message %d differs (queue offsets %d, %d)", where, topic, q, i, a.QueueOffsets[i], b.QueueOffsets[i])
				}
			}
		}
	}
}

// TestReplicate: a master store's log copied by ReadLog (small and large
// buffers) into a slave by AppendReplicated, while the master takes
// appends, across segment rolls, on every backend and flush policy: the
// slave's log and segment files are the master's byte for byte, its queues
// serve the same messages at the same offsets, OnDispatch fires for each
// indexed record; a restart of the slave keeps it all and replication
// goes on.
func TestReplicate(t *testing.T) {
	for _, be := range memBackends(t) {
		for _, policy := range []FlushPolicy{FlushSync, FlushAsync, FlushNone} {
			for _, bufSize := range []int{3 << 10, 64 << 10} {
				t.Run(fmt.Sprintf("backend=%s/flush=%s/buf=%d", be, policy, bufSize), func(t *testing.T) {
					testReplicate(t, be, policy, bufSize)
				})
			}
		}
	}
}

func testReplicate(t *testing.T, be string, policy FlushPolicy, bufSize int) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	mo := replOptions(t, vfs.NewMem(), "/master", be, policy)
	so := replOptions(t, vfs.NewMem(), "/slave", be, policy)
	m := mustOpen(t, mo)
	defer m.Close()
	s := mustOpen(t, so)
	var dispatched atomic.Int64
	s.OnDispatch(func(string, int32, int64) { dispatched.Add(1) })
	handed := make(chan struct{}, 1)
	m.OnHanded(func(int64) { kick(handed) })

	// The replicator follows the master while it takes appends.
	r := newReplicator(m, s, bufSize)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for r.step(t) {
			}
			select {
			case <-handed:
			case <-stop:
				return
			}
		}
	}()
	appendRandom(t, m, rng, 150)
	close(stop)
	wg.Wait()
	r.catchUp(t)
	if m.WrittenOffset() < 4*m.segSize {
		t.Fatalf("the master wrote %d bytes: fewer than 4 segments", m.WrittenOffset())
	}
	sameLog(t, m, s, "after replication")
	var indexedN int64
	for _, r := range walkLog(t, s, "slave") {
		if isIndexed(r.b) {
			indexedN++
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for dispatched.Load() != indexedN {
		if time.Now().After(deadline) {
			t.Fatalf("OnDispatch fired %d times on the slave, %d records indexed", dispatched.Load(), indexedN)
		}
		time.Sleep(time.Millisecond)
	}

	// Restart the slave: recovery keeps it; replication goes on.
	s = restartAndFollow(t, m, s, so, rng, bufSize)
	defer s.Close()
	if d := s.DurableOffset(); policy == FlushSync && d != s.WrittenOffset() {
		t.Fatalf("sync slave: durable %d, written %d", d, s.WrittenOffset())
	}
}

// restartAndFollow restarts the slave s (opened with so) and checks its
// log is still m's; then m takes more appends and the slave follows,
// copying with a bufSize buffer. It returns the reopened slave.
func restartAndFollow(t *testing.T, m, s *Store, so Options, rng *rand.Rand, bufSize int) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, so)
	sameLog(t, m, s, "after the slave's restart")
	appendRandom(t, m, rng, 30)
	newReplicator(m, s, bufSize).catchUp(t)
	sameLog(t, m, s, "after the restart and more")
	return s
}

func isIndexed(rec []byte) bool { return indexed(record.SysFlagOf(rec)) }

// replFixture is a master with records over several segments, and the
// bytes ReadLog gives from offset 0 (chunks, each what one ReadLog gave
// with a large buffer).
func replFixture(t *testing.T, be string, policy FlushPolicy, n int) (*Store, [][]byte) {
	t.Helper()
	m := mustOpen(t, replOptions(t, vfs.NewMem(), "/master", be, policy))
	t.Cleanup(func() { m.Close() })
	appendRandom(t, m, rand.New(rand.NewSource(1)), n)
	var chunks [][]byte
	buf := make([]byte, m.MaxRecordSize())
	for from := int64(0); from < m.HandedOffset(); {
		k, next, err := m.ReadLog(from, buf)
		if err != nil || k == 0 {
			t.Fatalf("ReadLog(%d) = %d, %v", from, k, err)
		}
		chunks = append(chunks, bytes.Clone(buf[:k]))
		from = next
	}
	return m, chunks
}

// TestReplicaMismatch: every kind of bytes that do not continue the log is
// refused with ErrReplicaMismatch naming the offset, and appends nothing
// (the right bytes then go in).
func TestReplicaMismatch(t *testing.T) {
	m, chunks := replFixture(t, "pwrite", FlushAsync, 30)
	s := mustOpen(t, replOptions(t, vfs.NewMem(), "/slave", "pwrite", FlushAsync))
	defer s.Close()
	ctx := context.Background()
	// Take the first segment in (its records, then its blank filler), so
	// that queue offsets are under way.
	from := takeChunks(t, s, chunks[:2])
	good := chunks[2]
	recs := splitRecords(t, good)
	if len(recs) < 2 {
		t.Fatalf("chunk 1 has %d records; want 2 or more", len(recs))
	}
	last := recs[len(recs)-1] // its offset in good
	// reseal rewrites the last record's offsets in a copy and seals it.
	reseal := func(qdelta, pdelta int64) []byte {
		b := bytes.Clone(good)
		rec := b[last[0]:last[1]]
		ts := record.StoreTimestampOf(rec)
		if !isIndexed(rec) && qdelta != 0 {
			t.Skip("the last record of the chunk has no queue offset")
		}
		record.Seal(rec, record.QueueOffsetOf(rec)+qdelta, record.PhysOffsetOf(rec)+pdelta, ts)
		return b
	}
	flip := bytes.Clone(good)
	flip[last[0]+record.OffBodyCRC+100]++ // a body byte: the CRC fails
	for _, tc := range []struct {
		name string
		from int64
		data []byte
	}{
		{"gap", from + 8, good},
		{"behind", from - 8, good},
		{"corrupted CRC", from, flip},
		{"wrong physical offset field", from, reseal(0, 8)},
		{"queue-offset gap", from, reseal(1, 0)},
		{"queue offset repeated", from, reseal(-1, 0)},
		{"partial record", from, good[:len(good)-5]},
		{"partial header", from, good[:last[0]+4]},
		{"another chunk's bytes", from, chunks[4]},
		{"bad magic", from, append(bytes.Clone(good[:last[0]]), make([]byte, last[1]-last[0])...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.WrittenOffset()
			counters := s.countersSnapshot()
			end, err := s.AppendReplicated(ctx, tc.from, tc.data)
			if !errors.Is(err, ErrReplicaMismatch) {
				t.Fatalf("err %v, want ErrReplicaMismatch", err)
			}
			if !strings.Contains(err.Error(), "at ") {
				t.Fatalf("the error names no offset: %v", err)
			}
			if end != before || s.WrittenOffset() != before {
				t.Fatalf("returned %d, written %d; was %d", end, s.WrittenOffset(), before)
			}
			if got := s.countersSnapshot(); fmt.Sprint(got) != fmt.Sprint(counters) {
				t.Fatalf("queue counters moved: %v, were %v", got, counters)
			}
		})
	}
	// Nothing went in: the right bytes continue the log.
	r := newReplicator(m, s, 64<<10)
	r.catchUp(t)
	sameLog(t, m, s, "after the refused appends")
}

// takeChunks appends chunks to s from offset 0 and returns the end.
func takeChunks(t *testing.T, s *Store, chunks [][]byte) int64 {
	t.Helper()
	from := int64(0)
	for _, c := range chunks {
		end, err := s.AppendReplicated(context.Background(), from, c)
		if err != nil {
			t.Fatalf("AppendReplicated(%d, %d bytes): %v", from, len(c), err)
		}
		from = end
	}
	return from
}

// splitRecords returns each record's [start, end) in b.
func splitRecords(t *testing.T, b []byte) [][2]int {
	var out [][2]int
	for p := 0; p < len(b); {
		size, magic, err := record.Header(b[p:])
		if err != nil {
			t.Fatal(err)
		}
		if magic == record.MagicBlank {
			break
		}
		out = append(out, [2]int{p, p + int(size)})
		p += int(size)
	}
	return out
}

// countersSnapshot copies the queue counters.
func (s *Store) countersSnapshot() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for k, c := range s.mu.counters {
		out[fmt.Sprintf("%s/%d", k.topic, k.qid)] = *c
	}
	return out
}

// TestReadLogBounds: ReadLog never copies past HandedOffset (here held
// back by AckBuffered and FlushNone: only FlushTo moves it), returns whole
// records and the whole blank filler, says when nothing is new, refuses
// offsets below the log, past the handed offset or off a record boundary
// and buffers that hold no record; OnHanded reports each move.
func TestReadLogBounds(t *testing.T) {
	o := replOptions(t, vfs.NewMem(), "/master", "pwrite", FlushNone)
	o.AckBuffered = true
	m := mustOpen(t, o)
	defer m.Close()
	var mu sync.Mutex
	var seen []int64
	m.OnHanded(func(h int64) {
		mu.Lock()
		seen = append(seen, h)
		mu.Unlock()
	})
	appendRandom(t, m, rand.New(rand.NewSource(2)), 40)
	buf := make([]byte, m.MaxRecordSize())
	if h := m.HandedOffset(); h >= m.WrittenOffset() {
		t.Fatalf("handed %d, written %d: the test wants the hand-over behind", h, m.WrittenOffset())
	}
	for from := int64(0); ; {
		n, next, err := m.ReadLog(from, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			if from != m.HandedOffset() {
				t.Fatalf("ReadLog(%d) = 0 below the handed offset %d", from, m.HandedOffset())
			}
			break
		}
		if next > m.HandedOffset() {
			t.Fatalf("ReadLog(%d) = %d, past the handed offset %d", from, n, m.HandedOffset())
		}
		from = next
	}
	if err := m.FlushTo(context.Background(), m.WrittenOffset()); err != nil {
		t.Fatal(err)
	}
	if h, w := m.HandedOffset(), m.WrittenOffset(); h != w || m.DurableOffset() != w {
		t.Fatalf("after FlushTo: handed %d, durable %d, written %d", h, m.DurableOffset(), w)
	}
	mu.Lock()
	if len(seen) == 0 || seen[len(seen)-1] != m.HandedOffset() {
		t.Fatalf("OnHanded saw %v; handed %d", seen, m.HandedOffset())
	}
	mu.Unlock()

	// Record by record, with a buffer that holds one: each call one record,
	// or a blank filler's header alone, which spans to its segment's end.
	from := int64(0)
	for from < m.HandedOffset() {
		size, magic, _ := record.Header(mustRead(t, m, from, record.BlankSize))
		want := int(size)
		if magic == record.MagicBlank {
			want = record.BlankSize
		}
		n, next, err := m.ReadLog(from, buf[:want])
		if err != nil || n != want {
			t.Fatalf("ReadLog(%d, %d-byte buffer) = %d, %v", from, want, n, err)
		}
		if magic == record.MagicBlank && from+int64(size) != next {
			t.Fatalf("blank at %d of %d bytes: next %d is not its segment's end", from, size, next)
		} else if magic != record.MagicBlank && next != from+int64(n) {
			t.Fatalf("record at %d of %d bytes: next %d", from, n, next)
		}
		if n > record.BlankSize+1 {
			if _, _, err := m.ReadLog(from, buf[:size-1]); !errors.Is(err, io.ErrShortBuffer) {
				t.Fatalf("ReadLog(%d) with a buffer one byte short: %v, want io.ErrShortBuffer", from, err)
			}
		}
		from = next
	}
	if _, _, err := m.ReadLog(from+1, buf); err == nil {
		t.Fatal("ReadLog past the handed offset succeeded")
	}
	if _, _, err := m.ReadLog(100, buf); err == nil {
		t.Fatal("ReadLog off a record boundary succeeded")
	}
	if _, _, err := m.ReadLog(m.segSize-4, buf); err == nil { // in the first segment's blank
		t.Fatal("ReadLog inside a blank filler succeeded")
	}
	if _, _, err := m.ReadLog(0, buf[:4]); err == nil {
		t.Fatal("ReadLog with a 4-byte buffer succeeded")
	}
	// Below the log: a master reset to a later base has nothing below it.
	if err := m.ResetTo(4 * m.segSize); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.ReadLog(0, buf); !errors.Is(err, ErrLogTrimmed) {
		t.Fatalf("ReadLog below the min offset: %v, want ErrLogTrimmed", err)
	}
	if n, _, err := m.ReadLog(4*m.segSize, buf); n != 0 || err != nil {
		t.Fatalf("ReadLog at the end of an empty log: %d, %v", n, err)
	}
}

// mustRead reads n bytes of s's log at off.
func mustRead(t *testing.T, s *Store, off int64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := s.readInto(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFlushTo: FlushTo returns with the log durable to the offset under
// every policy, at once (the async flusher's interval is an hour), and
// refuses offsets past the written one.
func TestFlushTo(t *testing.T) {
	for _, policy := range []FlushPolicy{FlushSync, FlushAsync, FlushNone} {
		t.Run(policy.String(), func(t *testing.T) {
			o := replOptions(t, vfs.NewMem(), "/s", "pwrite", policy)
			o.Flush.Interval, o.Flush.FullInterval = time.Hour, time.Hour
			s := mustOpen(t, o)
			defer s.Close()
			appendRandom(t, s, rand.New(rand.NewSource(3)), 20)
			w := s.WrittenOffset()
			if err := s.FlushTo(context.Background(), w+1); err == nil {
				t.Fatal("FlushTo past the written offset succeeded")
			}
			if err := s.FlushTo(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			if d := s.DurableOffset(); d < w {
				t.Fatalf("durable %d after FlushTo(%d)", d, w)
			}
		})
	}
}

// TestReplicaZeroAllocs: in steady state neither ReadLog nor
// AppendReplicated allocates, on every flush policy.
func TestReplicaZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, policy := range []FlushPolicy{FlushSync, FlushAsync, FlushNone} {
		t.Run(policy.String(), func(t *testing.T) {
			mk := func(dir string) *Store {
				o := testOptions(vfs.NewMem(), "pwrite", policy)
				o.Dir = dir
				o.SegmentSize = 64 << 20
				o.Preallocate = true // MemFS grows files by reallocating
				o.ConsumeQueueEntries = 1 << 20
				return mustOpen(t, o)
			}
			m, s := mk("/master"), mk("/slave")
			defer m.Close()
			defer s.Close()
			msg := testMessage("T", 1, 1000)
			ctx := context.Background()
			for i := 0; i < 8000; i++ {
				if _, err := m.Append(ctx, msg); err != nil {
					t.Fatal(err)
				}
			}
			buf := make([]byte, 2048) // one record a call
			step := func() {
				from := s.WrittenOffset()
				n, _, err := m.ReadLog(from, buf)
				if err != nil || n == 0 {
					t.Fatalf("ReadLog(%d) = %d, %v", from, n, err)
				}
				if _, err := s.AppendReplicated(ctx, from, buf[:n]); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 2000; i++ { // warm the pools and queues
				step()
			}
			if allocs := testing.AllocsPerRun(5000, step); allocs != 0 {
				t.Fatalf("ReadLog + AppendReplicated allocate %.2f times per record", allocs)
			}
		})
	}
}

// TestAppendReplicatedWriteError: a write that fails part way (torn, some
// bytes past the tail) refuses the replicated bytes without breaking the
// store; the same bytes then go in, written over the cut-off tail, and the
// slave is the master's, across a power loss too.
func TestAppendReplicatedWriteError(t *testing.T) {
	m, chunks := replFixture(t, "pwrite", FlushSync, 30)
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem)
	so := replOptions(t, efs, "/slave", "pwrite", FlushSync)
	s := mustOpen(t, so)
	defer s.Close()
	ctx := context.Background()
	from := takeChunks(t, s, chunks[:2])
	// The flusher's round for those (a replicated append does not wait
	// for it) ends before the fault: the torn write is the append's own.
	if err := s.FlushTo(ctx, from); err != nil {
		t.Fatal(err)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Path: "commitlog", Tear: true, TearAt: 100})
	end, err := s.AppendReplicated(ctx, from, chunks[2])
	if err == nil || errors.Is(err, ErrReplicaMismatch) || end != from || s.WrittenOffset() != from {
		t.Fatalf("a torn write: end %d, written %d, err %v; want a write error at %d", end, s.WrittenOffset(), err, from)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("the store broke: %v", err)
	}
	efs.ClearRules()
	newReplicator(m, s, 64<<10).catchUp(t)
	sameLog(t, m, s, "after the write error")
	img := mem.CrashClone(nil)
	s.Close()
	so.FS = img
	s2 := mustOpen(t, so)
	defer s2.Close()
	sameLog(t, m, s2, "after a power loss")
}
