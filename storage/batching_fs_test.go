package storage

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/countfs"
)

// TestGroupCommitFsyncsAtTheFS proves batching from outside the store:
// the fsyncs are counted by a wrapper at the file system (countfs), not
// read from the store's own metrics, which a bug could keep reporting as
// groups while every waiter paid its own fsync. With one fsync held, 64
// concurrent sync appends are written and wait; once it is released every
// one is acknowledged durable, and the file system saw at most 64/8
// fsyncs of the commit log (here: the held one and one more), never two
// at once (one flusher).
func TestGroupCommitFsyncsAtTheFS(t *testing.T) {
	const n = 64
	for _, be := range memBackends(t) {
		t.Run("backend="+be, func(t *testing.T) {
			// A record's size, from a store of its own.
			probe := mustOpen(t, testOptions(vfs.NewMem(), be, FlushSync))
			first, err := probe.Append(context.Background(), testMessage("T", 0, 100))
			if err != nil {
				t.Fatal(err)
			}
			if err := probe.Close(); err != nil {
				t.Fatal(err)
			}
			cfs := countfs.Wrap(vfs.NewMem(), func(name string) bool { return strings.Contains(name, "commitlog") })
			g := &gateFS{FS: cfs, gate: make(chan struct{})}
			opts := testOptions(g, be, FlushSync)
			opts.SegmentBackend = testBackend(t, be)
			opts.SegmentSize = 1 << 20
			s := mustOpen(t, opts)
			holdGate(t, g, s)
			base := s.WrittenOffset()
			before := cfs.Counts()
			var wg sync.WaitGroup
			type ack struct {
				r   AppendResult
				err error
			}
			acks := make(chan ack, n)
			for i := 0; i < n; i++ {
				wg.Go(func() {
					r, err := s.Append(context.Background(), testMessage("T", int32(i%4), 100))
					acks <- ack{r, err}
				})
			}
			// Every append is written (the log grew by n records of the
			// first one's size) and one fsync is held at the gate.
			deadline := time.Now().Add(60 * time.Second)
			for s.WrittenOffset()-base < n*int64(first.Size) || g.blocked.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("written %d of %d bytes, blocked syncs %d", s.WrittenOffset()-base, n*int64(first.Size), g.blocked.Load())
				}
				time.Sleep(time.Millisecond)
			}
			select {
			case a := <-acks:
				t.Fatalf("acknowledged while its fsync is held: %+v %v", a.r, a.err)
			default:
			}
			g.release()
			wg.Wait()
			close(acks)
			durable := s.DurableOffset()
			for a := range acks {
				if a.err != nil {
					t.Fatal(a.err)
				}
				if end := a.r.PhysicalOffset + int64(a.r.Size); end > durable {
					t.Fatalf("acknowledged up to %d, durable %d", end, durable)
				}
			}
			after := cfs.Counts()
			fsyncs := after.Syncs - before.Syncs
			if fsyncs < 1 || fsyncs > n/8 {
				t.Fatalf("%d sync appends reached the file system as %d fsyncs, want 1 to %d", n, fsyncs, n/8)
			}
			if after.MaxConcurrent != 1 {
				t.Fatalf("%d commit-log fsyncs ran at once, want one flusher", after.MaxConcurrent)
			}
			t.Logf("%d sync appends, %d fsyncs at the file system", n, fsyncs)
		})
	}
}
