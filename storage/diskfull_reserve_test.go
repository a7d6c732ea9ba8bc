package storage

import (
	"errors"
	"fmt"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestFullDiskAckedReadable: a full disk meets the ConsumeQueues while the
// CommitLog still has room (its segment was allocated when made, as mmap,
// odirect and uring always do). Appends are refused from then on, and every
// append acknowledged before that is readable by queue offset while the
// disk stays full: the index reserve pays for the entries.
func TestFullDiskAckedReadable(t *testing.T) {
	for _, be := range memBackends(t) {
		for _, queues := range []int{1, 24} {
			t.Run(fmt.Sprintf("%s/queues=%d", be, queues), func(t *testing.T) {
				mem := vfs.NewMem()
				opts := testOptions(mem, be, FlushSync)
				opts.SegmentBackend = testBackend(t, be)
				opts.Preallocate = true
				opts.SegmentSize = 256 << 10 // room for every append below: the index fills first
				e := &faultEnv{t: t, mem: mem, opts: opts}
				e.s = mustOpen(t, opts)
				defer func() { e.s.Close() }()
				for q := 0; q < queues; q++ { // every queue has a file
					e.mustAppendTo("T", int32(q), 100)
				}
				waitDispatched(t, e.s)
				mem.SetCapacity(mem.Used()) // the log's segment is allocated: only the indexes need space
				var err error
				n := 0
				for ; n < 2000 && err == nil; n++ {
					_, err = e.appendTo("T", int32(n%queues), 100)
				}
				if !errors.Is(err, ErrDiskFull) {
					t.Fatalf("%d appends on a full disk, the last: %v (want ErrDiskFull)", n, err)
				}
				waitFor(t, "every acknowledged record indexed", func() bool { return e.s.dispatchOK.Load() >= e.s.WrittenOffset() })
				for q := 0; q < queues; q++ {
					e.checkQueue("T", int32(q))
				}
				if !e.s.ReadOnly() {
					t.Fatal("the store takes appends again with its index reserve spent and the disk full")
				}
				t.Logf("%d appends acknowledged before the store turned read-only", len(e.acked))

				mem.SetCapacity(vfs.DefaultMemCapacity) // space is freed
				waitFor(t, "the store to leave read-only", func() bool { return !e.s.ReadOnly() })
				e.mustAppendTo("T", 0, 100)
				waitDispatched(t, e.s)
				e.checkQueue("T", 0)
				e.reopenAfterPowerLoss()
			})
		}
	}
}

func (e *faultEnv) mustAppendTo(topic string, qid int32, size int) {
	e.t.Helper()
	if _, err := e.appendTo(topic, qid, size); err != nil {
		e.t.Fatalf("append to %s/%d: %v", topic, qid, err)
	}
}

// TestOpenWithoutRoomForReserve: a store opened where its index reserve
// cannot be allocated opens read-only (reads served, appends refused with
// ErrDiskFull) and takes appends by itself once space is freed.
func TestOpenWithoutRoomForReserve(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	e := &faultEnv{t: t, mem: mem, opts: opts}
	e.s = mustOpen(t, opts)
	e.mustAppendTo("T", 0, 100)
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mem.Remove("/store/index.reserve"); err != nil {
		t.Fatal(err)
	}
	mem.SetCapacity(mem.Used() + 4096) // room for the checkpoint, not the reserve
	e.s = mustOpen(t, opts)
	defer func() { e.s.Close() }()
	if !e.s.ReadOnly() {
		t.Fatal("opened writable without its index reserve on a full disk")
	}
	if _, err := e.appendTo("T", 0, 100); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append without the reserve: %v, want ErrDiskFull", err)
	}
	e.checkQueue("T", 0)
	mem.SetCapacity(vfs.DefaultMemCapacity)
	waitFor(t, "the store to leave read-only", func() bool { return !e.s.ReadOnly() })
	if size, err := mem.Stat("/store/index.reserve"); err != nil || size != e.s.Options().IndexReserve {
		t.Fatalf("index reserve after space returned: %d bytes, %v", size, err)
	}
	e.mustAppendTo("T", 0, 100)
	waitDispatched(t, e.s)
	e.checkQueue("T", 0)
}
