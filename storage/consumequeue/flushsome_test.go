package consumequeue

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/countfs"
)

// physLog hands out increasing CommitLog offsets across queues, as one
// CommitLog would, and remembers every queue's entries.
type physLog struct {
	next int64
	ents map[*Queue][]Entry
}

func (l *physLog) add(t testing.TB, q *Queue, n int) {
	t.Helper()
	if l.ents == nil {
		l.ents = map[*Queue][]Entry{}
	}
	for range n {
		e := Entry{PhysOffset: l.next, Size: 100, TagsCode: l.next}
		l.next += 100
		if err := q.Append(int64(len(l.ents[q])), e.PhysOffset, e.Size, e.TagsCode); err != nil {
			t.Fatalf("Append: %v", err)
		}
		l.ents[q] = append(l.ents[q], e)
	}
}

// TestFlushSomeSelects checks each rule of FlushPolicy from outside: the
// fsyncs counted at the file system, the floor returned, and what a power
// loss right after keeps.
func TestFlushSomeSelects(t *testing.T) {
	mem := vfs.NewMem()
	cfs := countfs.Wrap(mem, nil)
	tb := openTable(t, cfs, "/cq", 1000)
	defer func() { _ = tb.Close() }()
	var l physLog
	busy, a, b, c := tb.Queue("T", 0), tb.Queue("T", 1), tb.Queue("T", 2), tb.Queue("T", 3)
	l.add(t, a, 3) // a's first entry is the oldest
	l.add(t, busy, 450)
	l.add(t, b, 2)
	l.add(t, c, 1)
	l.add(t, a, 2)
	first := func(q *Queue) int64 { return l.ents[q][0].PhysOffset }

	syncs := cfs.Counts().Syncs
	floor, err := tb.FlushSome(FlushPolicy{MinPending: 400})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfs.Counts().Syncs - syncs; got != 1 {
		t.Fatalf("MinPending 400: %d file syncs, want 1 (the busy queue's)", got)
	}
	if floor != first(a) {
		t.Fatalf("floor %d, want %d (the quiet queue a's first entry)", floor, first(a))
	}
	// A power loss now keeps the busy queue whole.
	tb2 := openTable(t, mem.CrashClone(nil), "/cq", 1000)
	if got := tb2.Queue("T", 0).MaxOffset(); got != 450 {
		t.Fatalf("after a crash the flushed queue holds %d entries, want 450", got)
	}
	_ = tb2.Close()

	// Before: a's first entry lies below it, b's does not.
	syncs = cfs.Counts().Syncs
	if floor, err = tb.FlushSome(FlushPolicy{MinPending: 400, Before: first(a) + 1}); err != nil {
		t.Fatal(err)
	}
	if got := cfs.Counts().Syncs - syncs; got != 1 {
		t.Fatalf("Before: %d file syncs, want 1 (queue a's)", got)
	}
	if floor != first(b) {
		t.Fatalf("floor %d, want %d (queue b's first entry)", floor, first(b))
	}

	// Share: half of the two left, rounded up: b, the older.
	if floor, err = tb.FlushSome(FlushPolicy{MinPending: 400, Share: 0.5}); err != nil {
		t.Fatal(err)
	}
	if floor != first(c) {
		t.Fatalf("Share 0.5: floor %d, want %d (queue c's first entry)", floor, first(c))
	}

	// Nothing pending in a: new entries there start the count again.
	l.add(t, a, 1)
	if floor, err = tb.FlushSome(FlushPolicy{MinPending: 400}); err != nil {
		t.Fatal(err)
	}
	if floor != first(c) {
		t.Fatalf("floor %d, want %d (c is still the oldest left)", floor, first(c))
	}
	syncs = cfs.Counts().Syncs
	if floor, err = tb.FlushSome(FlushPolicy{MinPending: 1}); err != nil {
		t.Fatal(err)
	}
	if floor != math.MaxInt64 {
		t.Fatalf("MinPending 1: floor %d, want none", floor)
	}
	if got := cfs.Counts().Syncs - syncs; got != 2 {
		t.Fatalf("MinPending 1: %d file syncs, want 2 (a and c)", got)
	}
	// Nothing pending anywhere: no syncs.
	syncs = cfs.Counts().Syncs
	if _, err = tb.FlushSome(FlushPolicy{MinPending: 1}); err != nil {
		t.Fatal(err)
	}
	if got := cfs.Counts().Syncs - syncs; got != 0 {
		t.Fatalf("nothing pending: %d file syncs", got)
	}

	// MarkUnsynced (recovery) makes every queue's files due, however quiet.
	tb.MarkUnsynced()
	syncs = cfs.Counts().Syncs
	if floor, err = tb.FlushSome(FlushPolicy{MinPending: 400}); err != nil {
		t.Fatal(err)
	}
	if got := cfs.Counts().Syncs - syncs; got != 4 || floor != math.MaxInt64 {
		t.Fatalf("after MarkUnsynced: %d file syncs, floor %d; want 4, none", got, floor)
	}
}

// TestFlushSomeFloorUnderAppends is the property the store's checkpoint
// rests on, with appends running beside the flushes: read the dispatched
// offset x, then FlushSome; after a power loss every entry below min(x,
// floor) of the last FlushSome is there, in every queue.
func TestFlushSomeFloorUnderAppends(t *testing.T) {
	seeds := 8
	if *long {
		seeds = 200
	}
	for seed := range int64(seeds) {
		if err := flushSomeOnce(t, seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func flushSomeOnce(t *testing.T, seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	perFile := []int{7, 50, 300}[rng.Intn(3)]
	mem := vfs.NewMem()
	tb, err := OpenTable(Options{FS: mem, Dir: "/cq", EntriesPerFile: perFile, Logger: testLogger(t)})
	if err != nil {
		return err
	}
	defer func() { _ = tb.Close() }()
	const nq = 20
	qs := make([]*Queue, nq)
	for i := range qs {
		qs[i] = tb.Queue(fmt.Sprintf("T%d", i%3), int32(i))
	}
	// The dispatcher: appends, skewed (queue 0 busiest), and publishes
	// the end of what it appended, as the store's dispatchOK.
	var dispatched atomic.Int64
	ents := make([][]Entry, nq)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var appendErr error
	var appendDone atomic.Bool
	go func() {
		defer wg.Done()
		defer appendDone.Store(true)
		r := rand.New(rand.NewSource(seed + 1))
		phys := int64(0)
		for n := 0; n < 1_000_000; n++ {
			select {
			case <-stop:
				return
			default:
			}
			i := 0
			if r.Intn(3) != 0 {
				i = r.Intn(nq)
			}
			if err := qs[i].Append(int64(len(ents[i])), phys, 100, phys); err != nil {
				appendErr = err
				return
			}
			ents[i] = append(ents[i], Entry{PhysOffset: phys, Size: 100, TagsCode: phys})
			phys += 100
			dispatched.Store(phys)
		}
	}()
	var claim int64
	for range 30 {
		// Let the dispatcher move on (a few hundred entries) between
		// flushes, so flushes overlap appends.
		for from := dispatched.Load(); dispatched.Load()-from < 300*100; {
			runtime.Gosched()
			if appendDone.Load() {
				break
			}
		}
		x := dispatched.Load()
		p := FlushPolicy{MinPending: int64(1 + rng.Intn(300)), Share: rng.Float64() / 2}
		if rng.Intn(3) == 0 {
			p.Before = rng.Int63n(x + 1)
		}
		floor, err := tb.FlushSome(p)
		if err != nil {
			close(stop)
			wg.Wait()
			return err
		}
		if c := min(x, floor); c > claim {
			claim = c
		} else if c < claim {
			// Not wrong (it claims less), but it never happens: an entry
			// below the last claim was synced then.
			close(stop)
			wg.Wait()
			return fmt.Errorf("claim went back from %d to %d", claim, c)
		}
	}
	close(stop)
	wg.Wait()
	if appendErr != nil {
		return appendErr
	}
	crashed := mem.CrashClone(nil) // every unsynced byte lost
	if rng.Intn(2) == 0 {
		crashed = mem.CrashClone(rng)
	}
	tb2, err := OpenTable(Options{FS: crashed, Dir: "/cq", EntriesPerFile: perFile, Logger: testLogger(t)})
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer func() { _ = tb2.Close() }()
	var got []Entry
	for i, q := range qs {
		q2 := tb2.Queue(q.Topic(), q.QueueID())
		// Entries of queue i are at increasing phys; those below claim
		// must have survived, and be the ones appended.
		want := sort.Search(len(ents[i]), func(j int) bool { return ents[i][j].PhysOffset >= claim })
		if n := q2.MaxOffset(); n < int64(want) {
			return fmt.Errorf("queue %d: %d entries after the crash, want at least %d (claim %d)", i, n, want, claim)
		}
		if got, err = q2.Entries(0, want, got); err != nil {
			return fmt.Errorf("queue %d after the crash: %w", i, err)
		}
		if !slices.Equal(got, ents[i][:want]) {
			return fmt.Errorf("queue %d after the crash: entries below the claim differ", i)
		}
	}
	return nil
}

// gateFS holds the next file Sync until released.
type gateFS struct {
	vfs.FS
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f gateFile) Sync() error {
	if f.g.armed.CompareAndSwap(true, false) {
		f.g.entered <- struct{}{}
		<-f.g.release
	}
	return f.File.Sync()
}

func (g *gateFS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := g.FS.Create(name, o)
	if err != nil {
		return nil, err
	}
	return gateFile{f, g}, nil
}

func (g *gateFS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := g.FS.Open(name, o)
	if err != nil {
		return nil, err
	}
	return gateFile{f, g}, nil
}

// TestFlushKeepsEntriesAppendedDuringItsSync: entries appended while a
// Flush syncs are not counted synced by it, and the first of them is what
// FlushSome then reports as its floor.
func TestFlushKeepsEntriesAppendedDuringItsSync(t *testing.T) {
	g := &gateFS{FS: vfs.NewMem(), entered: make(chan struct{}), release: make(chan struct{})}
	tb := openTable(t, g, "/cq", 1000)
	var l physLog
	q := tb.Queue("T", 0)
	l.add(t, q, 3)
	g.armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- q.Flush() }()
	<-g.entered
	t.Cleanup(func() { // a failure below must not leave the Flush (and Close) waiting
		select {
		case <-g.release:
		default:
			close(g.release)
		}
		_ = tb.Close()
	})
	l.add(t, q, 2) // offsets 3 and 4, during the sync
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, phys, all := q.pending(); n != 2 || phys != l.ents[q][3].PhysOffset || all {
		t.Fatalf("pending after the Flush: %d from phys %d (all %v), want 2 from %d", n, phys, all, l.ents[q][3].PhysOffset)
	}
	floor, err := tb.FlushSome(FlushPolicy{MinPending: 400})
	if err != nil {
		t.Fatal(err)
	}
	if floor != l.ents[q][3].PhysOffset {
		t.Fatalf("floor %d, want %d", floor, l.ents[q][3].PhysOffset)
	}
}

// TestPrepare: Prepare makes the queue's first file before any Append,
// which then creates nothing; a replica's StartAt replaces that empty file
// durably, so a power loss right after leaves contiguous files.
func TestPrepare(t *testing.T) {
	mem := vfs.NewMem()
	cfs := countfs.Wrap(mem, nil)
	tb := openTable(t, cfs, "/cq", 10)
	q := tb.Queue("T", 0)
	if err := q.Prepare(); err != nil {
		t.Fatal(err)
	}
	if got := cfs.Counts().Creates; got != 1 {
		t.Fatalf("Prepare created %d files, want 1", got)
	}
	if err := q.Prepare(); err != nil { // again: nothing to do
		t.Fatal(err)
	}
	appendN(t, q, 0, 5)
	if got := cfs.Counts().Creates; got != 1 {
		t.Fatalf("%d files created after the first Append, want 1 (Prepare's)", got)
	}
	checkRange(t, q, 0, 5)

	r := tb.Queue("T", 1)
	if err := r.Prepare(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Flush(); err != nil { // the empty file's name is durable
		t.Fatal(err)
	}
	if err := r.StartAt(25); err != nil {
		t.Fatalf("StartAt after Prepare: %v", err)
	}
	for i := int64(25); i < 28; i++ {
		e := entryFor(i)
		if err := r.Append(i, e.PhysOffset, e.Size, e.TagsCode); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	tb2 := openTable(t, mem.CrashClone(nil), "/cq", 10)
	defer func() { _ = tb2.Close() }()
	r2 := tb2.Queue("T", 1)
	if r2.MinOffset() != 25 || r2.MaxOffset() != 28 {
		t.Fatalf("after a power loss the queue spans [%d, %d), want [25, 28)", r2.MinOffset(), r2.MaxOffset())
	}
	checkRange(t, r2, 25, 28)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
}
