package storage

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// TestOpenOnFullDisk: Open succeeds on a full disk and serves reads;
// appends are refused with ErrDiskFull; once space is freed appends succeed
// with no restart, and everything acknowledged survives a power loss.
//   - "after a crash": recovery must re-index records into ConsumeQueues
//     that cannot grow and cannot write its checkpoint. (It used to fail
//     Open, calling the full disk corruption.)
//   - "after a clean close": the abort marker cannot be created (the store
//     opens read-only until it can) nor the checkpoint written.
//
// After a crash only pwrite: recovery cuts the reserved tail of the active
// segment, and the mmap and O_DIRECT backends must reserve it again to
// open the segment, which a disk kept full cannot give.
func TestOpenOnFullDisk(t *testing.T) {
	for _, be := range memBackends(t) {
		for _, crash := range []bool{true, false} {
			if crash && be != "pwrite" {
				continue
			}
			name := be + "/after a clean close"
			if crash {
				name = be + "/after a crash"
			}
			t.Run(name, func(t *testing.T) {
				e := newFaultEnv(t, be, false)
				for i := 0; i < 40; i++ { // several ConsumeQueue files per queue
					if _, err := e.appendTo("T", int32(i%2), 300); err != nil {
						t.Fatal(err)
					}
				}
				mem := e.mem
				if crash {
					mem = e.mem.CrashClone(nil)
				}
				if err := e.s.Close(); err != nil {
					t.Fatal(err)
				}
				mem.SetCapacity(0) // full, whatever recovery frees by cutting a torn tail
				efs := errorfs.Wrap(mem)
				if !crash {
					efs.AddRule(errorfs.Rule{Op: errorfs.OpCreate, Path: "abort", Sticky: true, Err: syscall.ENOSPC})
				}
				e.mem, e.efs = mem, efs
				e.opts.FS = efs
				s, err := Open(e.opts)
				if err != nil {
					t.Fatalf("Open on a full disk: %v", err)
				}
				e.s = s
				t.Cleanup(func() { s.Close() })
				if ok, _ := exists(mem, "/store/checkpoint.tmp"); ok {
					t.Fatal("the failed checkpoint left its temp file on the full disk")
				}
				w := watchWakes(s)
				if _, err := e.appendTo("T", 0, 300); !errors.Is(err, ErrDiskFull) {
					t.Fatalf("append on a full disk: %v, want ErrDiskFull", err)
				}
				if !crash {
					e.checkQueue("T", 0) // nothing to re-index: all readable
					e.checkQueue("T", 1)
					if !s.ReadOnly() {
						t.Fatal("opened without an abort marker, yet not read-only")
					}
				}
				mem.SetCapacity(vfs.DefaultMemCapacity)
				efs.ClearRules()
				for _, q := range []int32{0, 1} {
					w.waitWakeOrIndexed(t, s, queueKey{"T", q}, e.lastOffset("T", q))
				}
				waitFor(t, "the store to leave read-only", func() bool { return !s.ReadOnly() })
				e.checkQueue("T", 0)
				e.checkQueue("T", 1)
				for i := 0; i < 10; i++ {
					if _, err := e.appendTo("T", int32(i%2), 300); err != nil {
						t.Fatalf("append with space again: %v", err)
					}
				}
				waitDispatched(t, s)
				e.checkQueue("T", 0)
				e.checkQueue("T", 1)
				e.reopenAfterPowerLoss()
			})
		}
	}
}

func (e *faultEnv) lastOffset(topic string, qid int32) int64 {
	last := int64(-1)
	for _, a := range e.acked {
		if a.topic == topic && a.qid == qid {
			last = a.qoff
		}
	}
	return last
}

// waitWakeOrIndexed waits (deadline 60 s) until queue offset off of k is
// readable: its wake came, or the queue holds it. Both are watched to the
// end: a dispatcher round that read its callback list before watchWakes
// registered, and stalled until space returned, indexes the record and
// wakes only the callbacks it read (CI saw it under -race), so the queue is
// polled beside the wakes.
func (w *wakes) waitWakeOrIndexed(t *testing.T, s *Store, k queueKey, off int64) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for !w.reached(k, off) && s.MaxQueueOffset(k.topic, k.qid) <= off {
		select {
		case <-w.ch:
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s/%d offset %d neither woken nor indexed (max offset %d)",
				k.topic, k.qid, off, s.MaxQueueOffset(k.topic, k.qid))
		}
	}
}
