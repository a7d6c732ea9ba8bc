package storage

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/countfs"
)

// TestGroupCommitClosedLoop proves group commit the way producers use it:
// each writer appends again the moment it is acknowledged, and the fsyncs
// are counted at the file system (countfs), not by the store.
//
// TestGroupCommitFsyncsAtTheFS writes every append before it lets the
// first fsync go, so a flusher that released one waiter per round would
// still pass it: the second fsync covers every byte, and the rounds after
// it release the rest without one. Here nothing is written ahead: a waiter
// released late is a writer that has not appended again, and each of its
// appends then costs an fsync of its own.
//
// The bound is exact, not timed. Every commit-log fsync is held until
// every writer still running has a waiter queued and not yet released
// (Metrics.Waits minus the waiters rounds released; writers that are done
// no longer count). A group-commit round releases every waiter queued
// before its snapshot, and the next round takes every one queued after
// it, so between two held fsyncs every running writer is released at
// least once: W writers of N appends each need at most 2N+2 fsyncs
// (0.13 per append here), where one fsync per waiter needs W·N (320).
//
// Every backend with sync flush, and every staging backend with async
// flush and FlushTo after each append (a stage's Flush: the write-behind
// writes, the round's Flush syncs once).
func TestGroupCommitClosedLoop(t *testing.T) {
	const writers, each = 16, 20
	type run struct {
		be     string
		policy FlushPolicy
	}
	var runs []run
	for _, be := range memBackends(t) {
		runs = append(runs, run{be, FlushSync})
	}
	for _, be := range stagingBackends {
		runs = append(runs, run{be, FlushAsync})
	}
	for _, r := range runs {
		t.Run("backend="+r.be+"/flush="+r.policy.String(), func(t *testing.T) {
			cfs := countfs.Wrap(vfs.NewMem(), func(name string) bool { return strings.Contains(name, "commitlog") })
			g := &gateFS{FS: cfs, gate: make(chan struct{})}
			g.release()
			opts := testOptions(g, r.be, r.policy)
			opts.SegmentBackend = testBackend(t, r.be)
			opts.SegmentSize = 1 << 20
			opts.Flush.Interval, opts.Flush.FullInterval = time.Hour, time.Hour // async: FlushTo rounds only
			s := mustOpen(t, opts)
			defer s.Close()
			if r.policy == FlushAsync && !s.staged {
				t.Fatal("the async store does not stage")
			}
			var running atomic.Int64
			running.Store(writers)
			hold := func() bool { return s.m.waits.Load()-s.m.groupWaiters.Load() >= running.Load() }
			g.holdUntil.Store(&hold)
			before := cfs.Counts()

			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := 0; w < writers; w++ {
				wg.Go(func() {
					defer running.Add(-1)
					for i := 0; i < each; i++ {
						res, err := s.Append(ctx, testMessage("L", int32(w%4), 100))
						if err == nil && r.policy != FlushSync {
							err = s.FlushTo(ctx, res.PhysicalOffset+int64(res.Size))
						}
						if err == nil && s.DurableOffset() < res.PhysicalOffset+int64(res.Size) {
							t.Errorf("acknowledged up to %d, durable %d", res.PhysicalOffset+int64(res.Size), s.DurableOffset())
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
			g.holdUntil.Store(nil)
			if g.stuck.Load() {
				t.Fatal("an fsync waited a minute for the running writers to queue: a round kept a waiter it had synced")
			}
			after := cfs.Counts()
			fsyncs := after.Syncs - before.Syncs
			const appends = writers * each
			if fsyncs < 1 || fsyncs > 2*each+2 {
				t.Fatalf("%d closed-loop appends reached the file system as %d fsyncs (%.2f per append), want 1 to %d",
					appends, fsyncs, float64(fsyncs)/appends, 2*each+2)
			}
			if after.MaxConcurrent != 1 {
				t.Fatalf("%d commit-log fsyncs ran at once, want one flusher", after.MaxConcurrent)
			}
			t.Logf("%d closed-loop appends, %d fsyncs at the file system (%.1f appends each)", appends, fsyncs, float64(appends)/float64(fsyncs))
		})
	}
}
