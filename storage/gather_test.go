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
	g := make(chan struct{})
	close(g)
	return &gateFS{FS: vfs.NewMem(), gate: g, delay: d}
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
// come back within a gather's bound; after each unfilled wait the next
// rounds skip gathering, so most rounds do not wait at all.
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
				time.Sleep(3 * time.Millisecond) // think: back after the bound
			}
		}()
	}
	wg.Wait()
	m := s.Metrics()
	t.Logf("%d groups (avg %.1f): %d gathers, %d unfilled", m.SyncGroups, m.AvgGroup, m.Gathers, m.GatherMisses)
	if m.GatherMisses > m.SyncGroups/3 {
		t.Fatalf("%d of %d rounds waited unfilled", m.GatherMisses, m.SyncGroups)
	}
}
