package consumequeue

import (
	"flag"
	"fmt"
	"math/rand"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

var long = flag.Bool("long", false, "run the long crash soak")

const crashDir = "/store/consumequeue"

// crashQueue is what a test knows of one queue: what was appended and how
// much of it a Flush made durable.
type crashQueue struct {
	topic   string
	qid     int32
	min     int64 // offsets below were cut by retention (files gone)
	end     int64 // appended: [0, end) are entryFor(i)
	flushed int64 // durable: [min, flushed) must survive a crash
}

// TestCrash appends, flushes, appends more without a flush, crashes (MemFS
// CrashClone: unsynced blocks kept, lost or torn at random) and reopens:
// every flushed entry must be there, the unflushed ones a prefix of what was
// appended with at most the last one torn, and re-dispatching the rest (as
// the store does) must give the whole sequence, durable across a second
// crash. Then a TruncateFromPhys after reopen must be durable too.
func TestCrash(t *testing.T) {
	seeds := 60
	if *long {
		seeds = 5000
	}
	for seed := range int64(seeds) {
		if err := crashOnce(t, seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	t.Logf("%d seeds, %d torn last entries seen", seeds, crashTorn)
}

func crashOnce(t *testing.T, seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	perFile := []int{7, 50, 300}[rng.Intn(3)]
	fs := vfs.NewMem()
	tb, err := OpenTable(Options{FS: fs, Dir: crashDir, EntriesPerFile: perFile, Logger: testLogger(t)})
	if err != nil {
		return err
	}
	qs := []*crashQueue{{topic: "A", qid: 0}, {topic: "A", qid: 1}, {topic: "B", qid: 0}}
	for _, cq := range qs {
		q := tb.Queue(cq.topic, cq.qid)
		rounds := 1 + rng.Intn(3)
		for range rounds {
			if err := cqAppend(q, cq, int64(rng.Intn(700))); err != nil {
				return err
			}
			if rng.Intn(4) == 0 && cq.end > 0 {
				// Retention: entries below a random point.
				if err := q.DeleteBelowPhys(entryFor(rng.Int63n(cq.end)).PhysOffset); err != nil {
					return err
				}
				cq.min = q.files0Start()
			}
			if err := q.Flush(); err != nil {
				return err
			}
			cq.flushed = cq.end
		}
		if err := cqAppend(q, cq, int64(rng.Intn(700))); err != nil { // not flushed
			return err
		}
	}
	// Power loss while the table is open.
	crashed := fs.CrashClone(rng)
	tb2, err := OpenTable(Options{FS: crashed, Dir: crashDir, EntriesPerFile: perFile, Logger: testLogger(t)})
	if err != nil {
		return fmt.Errorf("reopen after crash: %w", err)
	}
	for _, cq := range qs {
		q := tb2.Queue(cq.topic, cq.qid)
		if err := checkCrashed(q, cq); err != nil {
			return err
		}
		// Re-dispatch from the last flush, as the store would from its
		// checkpoint; a torn last entry is replaced.
		if err := cqRedispatch(q, cq.flushed, cq.end); err != nil {
			return err
		}
		if err := verifyAll(q, q.MinOffset(), cq.end); err != nil {
			return fmt.Errorf("%s after re-dispatch: %w", q, err)
		}
	}
	if err := tb2.Flush(); err != nil {
		return err
	}
	// A second crash loses nothing flushed; then a durable trim.
	crashed2 := crashed.CrashClone(rng)
	tb3, err := OpenTable(Options{FS: crashed2, Dir: crashDir, EntriesPerFile: perFile, Logger: testLogger(t)})
	if err != nil {
		return err
	}
	cuts := map[*crashQueue]int64{}
	for _, cq := range qs {
		q := tb3.Queue(cq.topic, cq.qid)
		if q.MaxOffset() != cq.end {
			return fmt.Errorf("%s second crash: max %d, want %d", q, q.MaxOffset(), cq.end)
		}
		if err := verifyAll(q, q.MinOffset(), cq.end); err != nil {
			return fmt.Errorf("%s second crash: %w", q, err)
		}
		if cq.end == q.MinOffset() {
			cuts[cq] = cq.end
			continue
		}
		cut := q.MinOffset() + rng.Int63n(cq.end-q.MinOffset())
		if err := q.TruncateFromPhys(entryFor(cut).PhysOffset); err != nil {
			return err
		}
		cuts[cq] = cut
		// Unflushed appends after the cut; the crash must not resurrect
		// the old entries past the cut either.
		if err := cqRedispatch(q, cut, cut+int64(rng.Intn(20))); err != nil {
			return err
		}
	}
	crashed3 := crashed2.CrashClone(rng)
	tb4, err := OpenTable(Options{FS: crashed3, Dir: crashDir, EntriesPerFile: perFile, Logger: testLogger(t)})
	if err != nil {
		return err
	}
	defer tb4.Close()
	for _, cq := range qs {
		q := tb4.Queue(cq.topic, cq.qid)
		cut := cuts[cq]
		if q.MaxOffset() < cut || q.MaxOffset() > cut+20 {
			return fmt.Errorf("%s after trim and crash: max %d, cut at %d", q, q.MaxOffset(), cut)
		}
		if err := cqRedispatch(q, cut, cut+25); err != nil { // repairs a torn tail past the cut
			return err
		}
		if err := verifyAll(q, q.MinOffset(), cut+25); err != nil {
			return fmt.Errorf("%s after trim and crash: %w", q, err)
		}
	}
	return nil
}

var crashTorn int

// verifyAll checks [from, to) with one Entries call (verifyRange is too
// slow under -race for many seeds).
func verifyAll(q *Queue, from, to int64) error {
	got, err := q.Entries(from, int(to-from), nil)
	if err != nil {
		return fmt.Errorf("Entries(%d, %d): %w", from, to-from, err)
	}
	if int64(len(got)) != to-from {
		return fmt.Errorf("Entries(%d, %d): %d entries", from, to-from, len(got))
	}
	for i, e := range got {
		if want := entryFor(from + int64(i)); e != want {
			return fmt.Errorf("entry %d = %v, want %v", from+int64(i), e, want)
		}
	}
	return nil
}

func cqAppend(q *Queue, cq *crashQueue, n int64) error {
	for i := cq.end; i < cq.end+n; i++ {
		e := entryFor(i)
		if err := q.Append(i, e.PhysOffset, e.Size, e.TagsCode); err != nil {
			return err
		}
	}
	cq.end += n
	return nil
}

func cqRedispatch(q *Queue, from, to int64) error {
	for i := from; i < to; i++ {
		e := entryFor(i)
		if err := q.Append(i, e.PhysOffset, e.Size, e.TagsCode); err != nil {
			return fmt.Errorf("%s re-dispatch %d: %w", q, i, err)
		}
	}
	return nil
}

// checkCrashed checks a queue just recovered from a crash.
func checkCrashed(q *Queue, cq *crashQueue) error {
	max := q.MaxOffset()
	if q.MinOffset() != cq.min {
		return fmt.Errorf("%s: min %d, want %d (first file's start)", q, q.MinOffset(), cq.min)
	}
	if max < cq.flushed || max > cq.end {
		return fmt.Errorf("%s: max %d, flushed %d, appended %d", q, max, cq.flushed, cq.end)
	}
	if err := verifyAll(q, cq.min, cq.flushed); err != nil {
		return fmt.Errorf("%s flushed entries: %w", q, err)
	}
	for i := cq.flushed; i < max; i++ {
		got, err := q.Entry(i)
		if err != nil {
			return err
		}
		want := entryFor(i)
		if got == want {
			continue
		}
		crashTorn++
		// Only the last entry can be torn, and only in its trailing bytes
		// (the physical offset survives, or the entry would not be valid).
		if i != max-1 || got.PhysOffset != want.PhysOffset {
			return fmt.Errorf("%s: entry %d of %d is %v, want %v", q, i, max, got, want)
		}
	}
	return nil
}

// files0Start returns the first file's start (test hook).
func (q *Queue) files0Start() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.mu.files) == 0 {
		return q.mu.max
	}
	return q.mu.files[0].start
}
