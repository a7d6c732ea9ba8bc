package storage

import (
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/countfs"
)

// TestLazyCheckpoint: the periodic checkpoint syncs a busy ConsumeQueue
// and the oldest quiet one (its share, rounded up) and leaves the other
// quiet one, so its dispatched offset stops at that queue's first unsynced
// entry; a power loss then loses no entry (recovery re-indexes from
// there); once ConsumeQueueFlushMaxDelay has passed the quiet queue is
// synced too.
func TestLazyCheckpoint(t *testing.T) {
	mem := vfs.NewMem()
	cfs := countfs.Wrap(mem, func(name string) bool { return strings.HasPrefix(name, "/store/consumequeue/") })
	clk := newClock()
	opts := testOptions(cfs, "pwrite", FlushSync)
	opts.SegmentSize = 1 << 20
	opts.ConsumeQueueEntries = 1000
	opts.Clock = clk.now
	opts.ConsumeQueueFlushMaxDelay = 2 * time.Hour // CheckpointInterval is 1h: only the calls below checkpoint
	s := mustOpen(t, opts)
	appendN(t, s, "O", 0, 2, 100) // the oldest quiet queue
	quiet := appendN(t, s, "Q", 0, 3, 100)
	appendN(t, s, "B", 0, 500, 100)
	waitDispatched(t, s)

	syncs := cfs.Counts().Syncs
	if err := s.writeLazyCheckpoint(); err != nil {
		t.Fatal(err)
	}
	if got := cfs.Counts().Syncs - syncs; got != 2 {
		t.Fatalf("%d ConsumeQueue file syncs, want 2 (the busy queue's and the oldest quiet one's)", got)
	}
	s.ckpt.Lock()
	x := s.ckpt.last.dispatched
	s.ckpt.Unlock()
	if x != quiet[0].PhysicalOffset {
		t.Fatalf("checkpoint's dispatched offset %d, want %d (the quiet queue's first record)", x, quiet[0].PhysicalOffset)
	}

	// Power loss now: every record is in the log (FlushSync), and recovery
	// re-indexes the quiet queue's from the checkpoint.
	img := mem.CrashClone(nil)
	o2 := opts
	o2.FS = img
	s2 := mustOpen(t, o2)
	for _, q := range []struct {
		topic string
		n     int64
	}{{"O", 2}, {"Q", 3}, {"B", 500}} {
		if got := s2.cq.Queue(q.topic, 0).MaxOffset(); got != q.n {
			t.Errorf("after the power loss %s/0 holds %d entries, want %d", q.topic, got, q.n)
		}
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}

	// MaxDelay later the quiet queue is due: the checkpoint covers
	// everything.
	clk.advance(opts.ConsumeQueueFlushMaxDelay)
	if err := s.writeLazyCheckpoint(); err != nil {
		t.Fatal(err)
	}
	s.ckpt.Lock()
	x = s.ckpt.last.dispatched
	s.ckpt.Unlock()
	if x != s.WrittenOffset() {
		t.Fatalf("after MaxDelay the checkpoint's dispatched offset is %d, want %d (the end)", x, s.WrittenOffset())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
