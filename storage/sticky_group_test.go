package storage

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// TestFailedFsyncFailsItsWholeGroupForGood: a group of sync appends waits
// on one held fsync, which then fails once (the disk is healthy right
// after). Every waiter of the group gets ErrBroken (none is acknowledged
// by a later, successful fsync), the durable offset never covers them, and
// every later append, single or batched, fails too, with the disk
// healthy. TestSyncErrorIsTerminal checks a lone append; this one the
// group the flusher releases together.
func TestFailedFsyncFailsItsWholeGroupForGood(t *testing.T) {
	const n = 16
	for _, be := range memBackends(t) {
		t.Run("backend="+be, func(t *testing.T) {
			efs := errorfs.Wrap(vfs.NewMem())
			g := &gateFS{FS: efs, gate: make(chan struct{})}
			opts := testOptions(g, be, FlushSync)
			opts.SegmentBackend = testBackend(t, be)
			opts.SegmentSize = 1 << 20
			s := mustOpen(t, opts)
			holdGate(t, g, s)
			durable := s.DurableOffset()
			errs := make(chan error, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Go(func() {
					_, err := s.Append(context.Background(), testMessage("T", int32(i%2), 64))
					errs <- err
				})
			}
			deadline := time.Now().Add(60 * time.Second)
			for s.Metrics().Appends < n || g.blocked.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("appends %d, blocked syncs %d", s.Metrics().Appends, g.blocked.Load())
				}
				time.Sleep(time.Millisecond)
			}
			efs.AddRule(errorfs.Rule{Op: errorfs.OpSync, Path: "commitlog"}) // the held fsync fails, once
			g.release()
			wg.Wait()
			close(errs)
			for err := range errs {
				if !errors.Is(err, ErrBroken) {
					t.Fatalf("a waiter of the failed group: %v, want ErrBroken", err)
				}
			}
			if got := s.DurableOffset(); got != durable {
				t.Fatalf("durable offset moved %d -> %d over a failed fsync", durable, got)
			}
			if efs.Injected() != 1 {
				t.Fatalf("%d fsyncs failed, want one", efs.Injected())
			}
			for i := 0; i < 3; i++ {
				if _, err := s.Append(context.Background(), testMessage("T", 0, 64)); !errors.Is(err, ErrBroken) {
					t.Fatalf("append %d with the disk healthy again: %v, want ErrBroken", i, err)
				}
			}
			if _, err := s.AppendBatch(context.Background(), []*Message{testMessage("T", 0, 8), testMessage("T", 0, 8)}); !errors.Is(err, ErrBroken) {
				t.Fatalf("batch with the disk healthy again: %v, want ErrBroken", err)
			}
			if s.DurableOffset() != durable || s.Err() == nil {
				t.Fatalf("durable %d (was %d), Err %v", s.DurableOffset(), durable, s.Err())
			}
		})
	}
}
