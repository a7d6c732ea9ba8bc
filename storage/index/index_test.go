package index

import (
	"fmt"
	"log/slog"
	"math/rand"
	"slices"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

const (
	testDir  = "/store/index"
	recSize  = 100
	baseTime = int64(1_700_000_000_000)
	nKeys    = 7
)

// model record i: at phys i*recSize, stored at baseTime + i*130 ms, keys
// "k<i%nKeys>" and its unique id "u<i>" in topic T.
func phys(i int) int64 { return int64(i) * recSize }
func ts(i int) int64   { return baseTime + int64(i)*130 }
func hashes(i int) []uint32 {
	return []uint32{Hash("T", []byte(fmt.Sprintf("k%d", i%nKeys))), Hash("T", []byte(fmt.Sprintf("u%d", i)))}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func open(t *testing.T, fs vfs.FS, slots, entries int) *Index {
	t.Helper()
	x, err := Open(Options{FS: fs, Dir: testDir, MaxHashSlots: slots, MaxEntries: entries, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func put(t *testing.T, x *Index, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := x.Put(phys(i), phys(i)+recSize, ts(i), hashes(i)); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
}

// want is what a lookup of key k over records [0, n) must return, newest
// first, within [begin, end].
func want(k int, n int, begin, end int64) []int64 {
	var out []int64
	for i := n - 1; i >= 0; i-- {
		if i%nKeys == k && ts(i) >= begin-999 && ts(i) <= end+999 {
			out = append(out, phys(i))
		}
	}
	return out
}

func lookup(t *testing.T, x *Index, key string, begin, end int64) []int64 {
	t.Helper()
	got, err := x.Lookup(Hash("T", []byte(key)), begin, end, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// check requires every key's lookup to be exactly the model's over [0, n).
func check(t *testing.T, x *Index, n int) {
	t.Helper()
	for k := range nKeys {
		got := lookup(t, x, fmt.Sprintf("k%d", k), 0, 1<<62)
		if w := want(k, n, 0, 1<<62); !slices.Equal(got, w) {
			t.Fatalf("k%d over %d records: got %v, want %v", k, n, got, w)
		}
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if i < 0 || n == 0 {
			continue
		}
		if got := lookup(t, x, fmt.Sprintf("u%d", i), 0, 1<<62); !slices.Equal(got, []int64{phys(i)}) {
			t.Fatalf("u%d: got %v", i, got)
		}
	}
}

func TestPutLookupRollAndCollisions(t *testing.T) {
	fs := vfs.NewMem()
	x := open(t, fs, 3, 25) // 3 slots: every chain mixes keys; 25 entries a file: rolls
	defer x.Close()
	put(t, x, 0, 200)
	check(t, x, 200)
	if x.End() != phys(200) {
		t.Fatalf("End %d", x.End())
	}
	names, _ := fs.List(testDir)
	if len(names) < 200*2/25 {
		t.Fatalf("files %v: want a roll every 12 records", names)
	}
	// A record below End is a no-op; no keys still moves End.
	if err := x.Put(phys(3), phys(4), ts(3), hashes(3)); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(phys(200), phys(201), ts(200), nil); err != nil {
		t.Fatal(err)
	}
	check(t, x, 200)
	// Time range and limit.
	b, e := ts(50), ts(120)
	if got, w := lookup(t, x, "k2", b, e), want(2, 200, b, e); !slices.Equal(got, w) {
		t.Fatalf("range: got %v want %v", got, w)
	}
	got, _ := x.Lookup(Hash("T", []byte("k2")), 0, 1<<62, 3)
	if !slices.Equal(got, want(2, 200, 0, 1<<62)[:3]) {
		t.Fatalf("limit: %v", got)
	}
	// Another topic's key of the same name is another hash.
	if got := x.mustLookup(t, Hash("U", []byte("k2"))); len(got) != 0 {
		t.Fatalf("topic U: %v", got)
	}
	// Two keys with one 32-bit hash are both candidates (the store filters).
	if err := x.Put(phys(201), phys(202), ts(201), []uint32{42}); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(phys(202), phys(203), ts(202), []uint32{42}); err != nil {
		t.Fatal(err)
	}
	if got := x.mustLookup(t, 42); !slices.Equal(got, []int64{phys(202), phys(201)}) {
		t.Fatalf("hash 42: %v", got)
	}
}

func (x *Index) mustLookup(t *testing.T, h uint32) []int64 {
	got, err := x.Lookup(h, 0, 1<<62, 100)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestReopenClean(t *testing.T) {
	fs := vfs.NewMem()
	x := open(t, fs, 5, 40)
	put(t, x, 0, 150)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x = open(t, fs, 5, 40)
	if x.End() != phys(150) {
		t.Fatalf("End %d", x.End())
	}
	check(t, x, 150)
	put(t, x, 150, 170)
	check(t, x, 170)
	// A crash now (nothing flushed since Open) must not trust the slot
	// table Close wrote: Open made the checkpoint unclean.
	x2 := open(t, fs.CrashClone(nil), 5, 40)
	defer x2.Close()
	if x2.End() != phys(150) {
		t.Fatalf("End after crash %d", x2.End())
	}
	check(t, x2, 150)
	put(t, x2, 150, 170)
	check(t, x2, 170)
	x.Close()
}

// TestCrash puts, flushes, puts more, crashes (power loss with a random
// share of unsynced blocks, or a process crash) and reopens: End is at or
// past the flush, every record below End is found and none at or past it,
// and putting the rest again gives the whole index, across a second crash.
func TestCrash(t *testing.T) {
	for seed := range int64(40) {
		rng := rand.New(rand.NewSource(seed))
		slots, entries := []int{1, 4, 64}[rng.Intn(3)], []int{9, 30, 1000}[rng.Intn(3)]
		fs := vfs.NewMem()
		x := open(t, fs, slots, entries)
		n1 := rng.Intn(150)
		put(t, x, 0, n1)
		if err := x.Flush(); err != nil {
			t.Fatal(err)
		}
		n2 := n1 + rng.Intn(150)
		put(t, x, n1, n2)
		var cfs *vfs.MemFS
		if seed%3 == 0 {
			cfs = fs.ProcessCrashClone()
		} else {
			cfs = fs.CrashClone(rng)
		}
		x.Close()
		y := open(t, cfs, slots, entries)
		end := y.End()
		if end < phys(n1) || end > phys(n2) || end%recSize != 0 {
			t.Fatalf("seed %d: End %d, flushed %d, put %d", seed, end, phys(n1), phys(n2))
		}
		m := int(end / recSize)
		check(t, y, m)
		put(t, y, m, n2+20)
		check(t, y, n2+20)
		if err := y.Flush(); err != nil {
			t.Fatal(err)
		}
		y.Close()
		z := open(t, cfs.CrashClone(rng), slots, entries)
		if z.End() != phys(n2+20) {
			t.Fatalf("seed %d: End after the second crash %d, want %d", seed, z.End(), phys(n2+20))
		}
		check(t, z, n2+20)
		z.Close()
	}
}

func TestTruncateFrom(t *testing.T) {
	fs := vfs.NewMem()
	x := open(t, fs, 4, 30)
	put(t, x, 0, 100)
	if err := x.TruncateFrom(phys(61)); err != nil {
		t.Fatal(err)
	}
	if x.End() != phys(61) {
		t.Fatalf("End %d", x.End())
	}
	check(t, x, 61)
	// The log grows again from the cut: the new records are found.
	put(t, x, 61, 80)
	check(t, x, 80)
	// The cut is durable: the harshest crash does not bring back 80..99.
	x2 := open(t, fs.CrashClone(nil), 4, 30)
	if e := x2.End(); e < phys(61) || e > phys(80) {
		t.Fatalf("End after crash %d", e)
	}
	check(t, x2, int(x2.End()/recSize))
	// A cut before every file empties the index.
	if err := x2.TruncateFrom(0); err != nil {
		t.Fatal(err)
	}
	check(t, x2, 0)
	put(t, x2, 0, 10)
	check(t, x2, 10)
	x2.Close()
	x.Close()
}

func TestDeleteBefore(t *testing.T) {
	fs := vfs.NewMem()
	x := open(t, fs, 4, 20) // 10 records a file
	defer x.Close()
	put(t, x, 0, 100)
	n, err := x.DeleteBefore(phys(35))
	if err != nil || n != 3 {
		t.Fatalf("deleted %d files (want 3: records 0-29): %v", n, err)
	}
	for k := range nKeys {
		got := lookup(t, x, fmt.Sprintf("k%d", k), 0, 1<<62)
		var w []int64
		for _, p := range want(k, 100, 0, 1<<62) {
			if p >= phys(30) {
				w = append(w, p)
			}
		}
		if !slices.Equal(got, w) {
			t.Fatalf("k%d: got %v want %v", k, got, w)
		}
	}
	// Never the newest file, even when the whole log is gone.
	if _, err := x.DeleteBefore(phys(1000)); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.List(testDir)
	if len(names) != 2 { // the newest file and the checkpoint
		t.Fatalf("left %v", names)
	}
	x.Close()
	y := open(t, fs.CrashClone(nil), 4, 20)
	defer y.Close()
	if y.End() != phys(100) {
		t.Fatalf("End %d", y.End())
	}
}

func TestFileName(t *testing.T) {
	if got := fileName(baseTime); got != "20231114221320000" {
		t.Fatalf("fileName %s", got)
	}
	if got := nextName("20231114221320999"); got != "20231114221321000" {
		t.Fatalf("nextName %s", got)
	}
}

// TestDamagedFile: a file whose header fails its CRC is dropped with every
// later one, and End goes back to the last record the file before it
// holds, so putting the log again from End restores every key (that
// record's keys twice: the caller's check drops duplicates).
func TestDamagedFile(t *testing.T) {
	fs := vfs.NewMem()
	x := open(t, fs, 4, 30) // 15 records a file
	put(t, x, 0, 100)
	x.Close()
	names, _ := fs.List(testDir)
	f, err := fs.Open(testDir+"/"+names[1], vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("XX"), 20) // inside BEGINTIME: the CRC fails
	f.Close()
	y := open(t, fs, 4, 30)
	defer y.Close()
	if y.End() != phys(14) {
		t.Fatalf("End %d, want the last record of the first file, %d", y.End(), phys(14))
	}
	put(t, y, 14, 100)
	for k := range nKeys {
		got := slices.Compact(lookup(t, y, fmt.Sprintf("k%d", k), 0, 1<<62))
		if w := want(k, 100, 0, 1<<62); !slices.Equal(got, w) {
			t.Fatalf("k%d: got %v want %v", k, got, w)
		}
	}
}
