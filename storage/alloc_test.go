package storage

import (
	"context"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestAppendZeroAllocs: a steady-state Append allocates nothing, on every
// flush policy (pooled waiters with their own timers, pooled encode
// buffers, recycled dispatch and waiter queues).
func TestAppendZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, policy := range []FlushPolicy{FlushSync, FlushAsync, FlushNone} {
		t.Run(policy.String(), func(t *testing.T) {
			opts := testOptions(vfs.NewMem(), "pwrite", policy)
			opts.SegmentSize = 64 << 20
			opts.Preallocate = true // MemFS grows files by reallocating
			opts.ConsumeQueueEntries = 1 << 20
			s := mustOpen(t, opts)
			defer s.Close()
			m := testMessage("T", 1, 1000)
			ctx := context.Background()
			for i := 0; i < 2000; i++ { // warm the pools and queues
				if _, err := s.Append(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			allocs := testing.AllocsPerRun(5000, func() {
				if _, err := s.Append(ctx, m); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("Append allocates %.2f times per call", allocs)
			}
		})
	}
}
