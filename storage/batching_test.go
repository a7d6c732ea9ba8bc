package storage

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/testutil"
	"github.com/samsamq/samsa/storage/vfs"
)

// gateFS holds every fsync of a commit-log file until the gate opens,
// and then (if set) until holdUntil says so.
type gateFS struct {
	vfs.FS
	gate    chan struct{} // closed: syncs pass
	delay   time.Duration // each sync takes this long after the gate
	blocked atomic.Int64  // syncs waiting at the gate
	syncs   atomic.Int64
	opened  sync.Once
	// holdUntil, if set, holds each sync past the gate until it returns
	// true; a sync that waits a minute for it gives up, notes it in stuck
	// and unsets it.
	holdUntil atomic.Pointer[func() bool]
	stuck     atomic.Bool
}

// BootID is the inner file system's (vfs.Booter), so stores on it stage.
func (g *gateFS) BootID() (string, error) { return vfs.InnerBootID(g.FS) }

// release opens the gate (once; later calls do nothing).
func (g *gateFS) release() { g.opened.Do(func() { close(g.gate) }) }

// holdGate makes a store's Close safe while g holds fsyncs: it registers
// the store's bounded Close, then (to run before it) the gate's release,
// so a test that fails while the gate is shut still closes and reports
// its failure instead of hanging until the package timeout.
func holdGate(t testing.TB, g *gateFS, s *Store) {
	t.Helper()
	testutil.CleanupClose(t, "store", s.Close)
	t.Cleanup(g.release)
}

func (g *gateFS) wrap(f vfs.File, name string) vfs.File {
	if !strings.Contains(name, "commitlog") {
		return f
	}
	return &gateFile{File: f, g: g}
}

func (g *gateFS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := g.FS.Create(name, o)
	if err != nil {
		return nil, err
	}
	return g.wrap(f, name), nil
}

func (g *gateFS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := g.FS.Open(name, o)
	if err != nil {
		return nil, err
	}
	return g.wrap(f, name), nil
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f *gateFile) wait() {
	f.g.syncs.Add(1)
	f.g.blocked.Add(1)
	<-f.g.gate
	if p := f.g.holdUntil.Load(); p != nil {
		deadline := time.Now().Add(time.Minute)
		for !(*p)() {
			if time.Now().After(deadline) {
				f.g.stuck.Store(true)
				f.g.holdUntil.Store(nil)
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	f.g.blocked.Add(-1)
	if f.g.delay > 0 {
		time.Sleep(f.g.delay)
	}
}

func (f *gateFile) Sync() error { f.wait(); return f.File.Sync() }

func (f *gateFile) Map(size int) ([]byte, error) { return f.File.(vfs.Mapper).Map(size) }
func (f *gateFile) Unmap(b []byte) error         { return f.File.(vfs.Mapper).Unmap(b) }
func (f *gateFile) SyncMapped(m []byte, off, n int64) error {
	f.wait()
	return f.File.(vfs.MapSyncer).SyncMapped(m, off, n)
}

// TestGroupCommitBatches: with the first fsync held, N concurrent sync
// appends pile up; once it is released they are all acknowledged by at
// most N/3 fsyncs (here: that one and one more).
func TestGroupCommitBatches(t *testing.T) {
	const n = 48
	for _, be := range memBackends(t) {
		t.Run("backend="+be, func(t *testing.T) {
			g := &gateFS{FS: vfs.NewMem(), gate: make(chan struct{})}
			opts := testOptions(g, be, FlushSync)
			opts.SegmentBackend = testBackend(t, be)
			opts.SegmentSize = 1 << 20
			s := mustOpen(t, opts)
			holdGate(t, g, s)
			before := s.Metrics()
			syncsBefore := g.syncs.Load()
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := s.Append(context.Background(), testMessage("T", int32(i%4), 100))
					errs <- err
				}()
			}
			// Every append is written and waiting; one fsync is held.
			deadline := time.Now().Add(10 * time.Second)
			for s.Metrics().Appends-before.Appends < n || g.blocked.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("appends %d, blocked syncs %d", s.Metrics().Appends-before.Appends, g.blocked.Load())
				}
				time.Sleep(time.Millisecond)
			}
			g.release()
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			m := s.Metrics()
			fsyncs := m.Fsyncs - before.Fsyncs
			if gs := g.syncs.Load() - syncsBefore; fsyncs > n/3 || gs > n/3 {
				t.Fatalf("%d appends took %d fsyncs (%d at the file), want at most %d", n, fsyncs, gs, n/3)
			}
			if m.AvgGroup < 3 {
				t.Fatalf("average group %.1f", m.AvgGroup)
			}
			t.Logf("%d appends, %d fsyncs, %d groups (avg %.1f), flush p99 %v", n, fsyncs, m.SyncGroups, m.AvgGroup, m.FlushP99)
		})
	}
}

// TestLoneWriterWaitsForNoTimer: with no linger, a single sync append is
// acknowledged by its own fsync, well under any timer's period.
func TestLoneWriterWaitsForNoTimer(t *testing.T) {
	opts := testOptions(vfs.NewMem(), "pwrite", FlushSync)
	opts.Flush.Interval = time.Hour // nothing periodic may be involved
	s := mustOpen(t, opts)
	defer s.Close()
	for i := 0; i < 20; i++ {
		r, err := s.Append(context.Background(), testMessage("T", 0, 10))
		if err != nil {
			t.Fatal(err)
		}
		if d := s.DurableOffset(); d < r.PhysicalOffset+int64(r.Size) {
			t.Fatalf("acknowledged at %d, durable %d", r.PhysicalOffset, d)
		}
	}
	if m := s.Metrics(); m.SyncGroups != 20 || m.Gathers != 0 {
		t.Fatalf("%d groups for 20 sequential appends, %d gathers", m.SyncGroups, m.Gathers)
	}
}
