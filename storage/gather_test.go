package storage

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// newSlowSyncFS makes every commit-log fsync take d, like a disk.
func newSlowSyncFS(d time.Duration) *gateFS {
	g := &gateFS{FS: vfs.NewMem(), gate: make(chan struct{}), delay: d}
	g.release()
	return g
}

// runClosedLoop has writers append n sync records each, one at a time.
func runClosedLoop(t *testing.T, s *Store, writers, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if _, err := s.Append(context.Background(), testMessage("T", int32(w%4), 100)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestGroupCommitOneCohort: closed-loop writers released by one fsync are
// back in the very next group, so groups hold (nearly) every writer rather
// than the two alternating halves a round that starts at once would get.
func TestGroupCommitOneCohort(t *testing.T) {
	const writers, n = 32, 40
	run := func(gather time.Duration) Metrics {
		opts := testOptions(newSlowSyncFS(4*time.Millisecond), "pwrite", FlushSync)
		opts.Flush.MaxGather = gather
		s := mustOpen(t, opts)
		defer s.Close()
		runClosedLoop(t, s, writers, n)
		return s.Metrics()
	}
	off := run(-1)
	on := run(20 * time.Millisecond)
	t.Logf("average group: %.1f without gathering, %.1f with (%d gathers, %d unfilled)",
		off.AvgGroup, on.AvgGroup, on.Gathers, on.GatherMisses)
	if off.Gathers != 0 {
		t.Fatalf("MaxGather<0 gathered %d times", off.Gathers)
	}
	if on.AvgGroup < 0.75*writers {
		t.Fatalf("average group %.1f of %d closed-loop writers", on.AvgGroup, writers)
	}
}

// TestGatherBacksOffOpenLoop: writers that think between appends do not
// come back within a gather's bound; after each wait that ends with few of
// them back the next rounds skip gathering, so most rounds do not wait.
func TestGatherBacksOffOpenLoop(t *testing.T) {
	const writers, n = 8, 25
	opts := testOptions(newSlowSyncFS(2*time.Millisecond), "pwrite", FlushSync)
	opts.Flush.MaxGather = 5 * time.Millisecond // bound: half the 2 ms fsync
	s := mustOpen(t, opts)
	defer s.Close()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if _, err := s.Append(context.Background(), testMessage("T", int32(w%4), 100)); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(8 * time.Millisecond) // think: back well after the 1 ms bound
			}
		}()
	}
	wg.Wait()
	m := s.Metrics()
	t.Logf("%d groups (avg %.1f): %d gathers, %d unfilled", m.SyncGroups, m.AvgGroup, m.Gathers, m.GatherMisses)
	// Without the back-off every round would wait unfilled (the writers
	// think longer than the bound). A busy machine stretches sleeps and
	// fsyncs and makes some rounds miss: half is the line that still tells
	// backing off from not (a third failed under -race on a loaded CI).
	if m.GatherMisses > m.SyncGroups/2 {
		t.Fatalf("%d of %d rounds waited unfilled", m.GatherMisses, m.SyncGroups)
	}
}

// TestGatherKeepsCohortWithALaggard: one writer that thinks between
// appends keeps the others' waits from filling whenever it was in the
// last round; since most of the missing writers do come, the store keeps
// gathering instead of backing off, and groups still hold nearly every
// closed-loop writer.
func TestGatherKeepsCohortWithALaggard(t *testing.T) {
	const writers, n = 15, 40
	opts := testOptions(newSlowSyncFS(4*time.Millisecond), "pwrite", FlushSync)
	opts.Flush.MaxGather = 20 * time.Millisecond // bound: half the 4 ms fsync
	s := mustOpen(t, opts)
	defer s.Close()
	done := make(chan struct{})
	laggard := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				laggard <- nil
				return
			default:
			}
			if _, err := s.Append(context.Background(), testMessage("T", 0, 100)); err != nil {
				laggard <- err
				return
			}
			time.Sleep(7 * time.Millisecond)
		}
	}()
	runClosedLoop(t, s, writers, n)
	close(done)
	if err := <-laggard; err != nil {
		t.Fatal(err)
	}
	m := s.Metrics()
	t.Logf("%d groups (avg %.1f): %d gathers, %d unfilled", m.SyncGroups, m.AvgGroup, m.Gathers, m.GatherMisses)
	// The cohort is 15; a gatherer cut short by the laggard's rhythm
	// would make groups of 1-3. Half the cohort leaves room for a machine
	// so busy that writers miss a gather (10.2 seen at load 11.6).
	if m.AvgGroup < 0.5*writers {
		t.Fatalf("average group %.1f of %d closed-loop writers (and a laggard)", m.AvgGroup, writers)
	}
}

// TestFlushToOneCohort: under async flush, closed-loop writers that
// append and then FlushTo their record are gathered as sync appends are:
// groups hold nearly every writer, not two alternating halves.
func TestFlushToOneCohort(t *testing.T) {
	const writers, n = 32, 40
	run := func(gather time.Duration) Metrics {
		opts := testOptions(newSlowSyncFS(4*time.Millisecond), "pwrite", FlushAsync)
		opts.Flush.MaxGather = gather
		opts.Flush.Interval, opts.Flush.FullInterval = time.Hour, time.Hour // FlushTo rounds only
		s := mustOpen(t, opts)
		defer s.Close()
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			wg.Go(func() {
				for i := 0; i < n; i++ {
					res, err := s.Append(context.Background(), testMessage("T", int32(w%4), 100))
					if err == nil {
						err = s.FlushTo(context.Background(), res.PhysicalOffset+int64(res.Size))
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		return s.Metrics()
	}
	off := run(-1)
	on := run(20 * time.Millisecond)
	t.Logf("average group: %.1f without gathering, %.1f with (%d gathers, %d unfilled)",
		off.AvgGroup, on.AvgGroup, on.Gathers, on.GatherMisses)
	if off.Gathers != 0 {
		t.Fatalf("MaxGather<0 gathered %d times", off.Gathers)
	}
	if on.AvgGroup < 0.75*writers {
		t.Fatalf("average group %.1f of %d closed-loop writers", on.AvgGroup, writers)
	}
}
