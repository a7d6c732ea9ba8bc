package consumequeue

import (
	"errors"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// pathGateFS holds every Sync of a file whose path contains match until
// open is closed, and says when one is waiting (flushsome_test.go's gateFS
// holds the next Sync of any file).
type pathGateFS struct {
	vfs.FS
	match   string
	open    chan struct{}
	waiting chan struct{} // closed at the first held Sync
	once    sync.Once
}

func newPathGateFS(fs vfs.FS, match string) *pathGateFS {
	return &pathGateFS{FS: fs, match: match, open: make(chan struct{}), waiting: make(chan struct{})}
}

func (g *pathGateFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.Contains(name, g.match) {
		return f, err
	}
	return &pathGateFile{File: f, g: g}, nil
}

func (g *pathGateFS) Create(name string, opts vfs.OpenOptions) (vfs.File, error) {
	f, err := g.FS.Create(name, opts)
	return g.wrap(name, f, err)
}

func (g *pathGateFS) Open(name string, opts vfs.OpenOptions) (vfs.File, error) {
	f, err := g.FS.Open(name, opts)
	return g.wrap(name, f, err)
}

type pathGateFile struct {
	vfs.File
	g *pathGateFS
}

func (f *pathGateFile) Sync() error {
	f.g.once.Do(func() { close(f.g.waiting) })
	<-f.g.open
	return f.File.Sync()
}

// TestSealSyncsInTheBackground: appends go on into the next file while
// the sealed file's sync is held; a Flush waits for that sync (its
// answer says every entry is durable); so does sealing the file after
// the next one.
func TestSealSyncsInTheBackground(t *testing.T) {
	mem := vfs.NewMem()
	g := newPathGateFS(mem, fileName(0)) // the first file's syncs only
	tb := openTable(t, g, "/cq", 10)
	q := tb.Queue("T", 0)
	appendN(t, q, 0, 15) // seals file 0, whose sync now waits at the gate
	<-g.waiting
	appendN(t, q, 15, 19) // not behind the sync
	checkRange(t, q, 0, 19)

	flushed := make(chan error, 1)
	go func() { flushed <- q.Flush() }()
	appended := make(chan error, 1)
	go func() { // fills file 10 and seals it: waits for file 0's sync first
		for i := int64(19); i < 25; i++ {
			e := entryFor(i)
			if err := q.Append(i, e.PhysOffset, e.Size, e.TagsCode); err != nil {
				appended <- err
				return
			}
		}
		appended <- nil
	}()
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned %v while the sealed file's sync was held", err)
	case err := <-appended:
		t.Fatalf("sealing the next file returned %v while the previous file's sync was held", err)
	case <-time.After(50 * time.Millisecond): // they wait, as they must
	}
	close(g.open)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	checkRange(t, q, 0, 25)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	reopenCheckAt(t, mem, "/cq", 25)
}

// reopenCheckAt reopens the table in dir and checks T/0 holds [0, want).
func reopenCheckAt(t *testing.T, fs vfs.FS, dir string, want int64) {
	t.Helper()
	tb := openTable(t, fs, dir, 10)
	defer tb.Close()
	q := tb.Queue("T", 0)
	if q.MaxOffset() != want {
		t.Fatalf("reopened: max %d, want %d", q.MaxOffset(), want)
	}
	checkRange(t, q, 0, want)
}

// TestSealPowerLossBeforeSync: a power loss while the newest sealed file
// is unsynced. Recovery reads that file whole, ends the queue at its
// first lost entry (removing the file after it) and keeps everything a
// Flush made durable; re-dispatching the rest restores the queue.
func TestSealPowerLossBeforeSync(t *testing.T) {
	for seed := range int64(40) {
		rng := rand.New(rand.NewSource(seed))
		mem := vfs.NewMem()
		g := newPathGateFS(mem, fileName(20))
		tb := openTable(t, g, "/cq", 10)
		q := tb.Queue("T", 0)
		appendN(t, q, 0, 17)
		if err := q.Flush(); err != nil { // [0, 17) durable
			t.Fatal(err)
		}
		appendN(t, q, 17, 35) // seals files 10 and 20; file 20's sync is held
		<-g.waiting
		crashed := mem.CrashClone(rng)
		close(g.open)
		if err := tb.Close(); err != nil {
			t.Fatal(err)
		}

		tb2 := openTable(t, crashed, "/cq", 10)
		q2 := tb2.Queue("T", 0)
		max := q2.MaxOffset()
		if max < 17 || max > 35 {
			t.Fatalf("seed %d: recovered max %d, flushed 17, appended 35", seed, max)
		}
		if err := verifyAll(q2, 0, max); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := cqRedispatch(q2, 17, 35); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := verifyAll(q2, 0, 35); err != nil {
			t.Fatalf("seed %d after re-dispatch: %v", seed, err)
		}
		if err := tb2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSealSyncFailureSticks: a failed background sync of a sealed file
// is the queue's sticky error: the next Flush and the sealing of a later
// file return it, and nothing claims those entries are durable.
func TestSealSyncFailureSticks(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem(), errorfs.Rule{Op: errorfs.OpSync, Path: fileName(0)})
	tb := openTable(t, efs, "/cq", 10)
	defer tb.Close()
	q := tb.Queue("T", 0)
	appendN(t, q, 0, 10)
	// Entry 10 starts file 1 and seals file 0, whose sync fails: the
	// append that rolls, or one after it, may already meet the failure
	// (the seal's sync may have run by then), or none yet.
	for i := int64(10); i < 12; i++ {
		e := entryFor(i)
		if err := q.Append(i, e.PhysOffset, e.Size, e.TagsCode); err != nil {
			if !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("Append(%d): %v, want nil or the injected error", i, err)
			}
			break
		}
	}
	if err := q.Flush(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Flush after a failed seal: %v, want the injected error", err)
	}
	var err error
	for i := int64(12); i < 30 && err == nil; i++ {
		e := entryFor(i)
		err = q.Append(i, e.PhysOffset, e.Size, e.TagsCode)
	}
	if !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("appends after a failed seal: %v, want the injected error", err)
	}
}
