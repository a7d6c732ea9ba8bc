package storage

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// faultEnv is a store on errorfs over a MemFS.
type faultEnv struct {
	t     *testing.T
	mem   *vfs.MemFS
	efs   *errorfs.FS
	opts  Options
	s     *Store
	acked []expected
	// maybe are records written but refused (ErrResourceBusy from their
	// flush round): a crash may keep them or not.
	maybe []expected
}

func newFaultEnv(t *testing.T, be string, prealloc bool) *faultEnv {
	e := &faultEnv{t: t, mem: vfs.NewMem()}
	e.efs = errorfs.Wrap(e.mem)
	e.opts = testOptions(e.efs, be, FlushSync)
	e.opts.SegmentBackend = testBackend(t, be)
	e.opts.Preallocate = prealloc
	e.opts.SegmentSize = 16 << 10
	e.s = mustOpen(t, e.opts)
	return e
}

// append appends one message and records it if acknowledged.
func (e *faultEnv) append(size int) (AppendResult, error) {
	m := testMessage("T", 0, size)
	r, err := e.s.Append(context.Background(), m)
	if err == nil {
		e.acked = append(e.acked, expectedOf(m, r))
	} else if errors.Is(err, ErrResourceBusy) && r.Size > 0 {
		e.maybe = append(e.maybe, expectedOf(m, r))
	}
	return r, err
}

func (e *faultEnv) mustAppend(n, size int) {
	e.t.Helper()
	for i := 0; i < n; i++ {
		if _, err := e.append(size); err != nil {
			e.t.Fatalf("append %d: %v", i, err)
		}
	}
}

// reopenAfterPowerLoss crashes the machine (only synced bytes survive),
// reopens and checks every acknowledged record and the log's integrity.
func (e *faultEnv) reopenAfterPowerLoss() *Store {
	e.t.Helper()
	img := e.mem.CrashClone(nil)
	e.s.Close()
	opts := e.opts
	opts.FS = img
	s, err := Open(opts)
	if err != nil {
		e.t.Fatalf("reopen: %v", err)
	}
	e.t.Cleanup(func() { s.Close() })
	m := &crashModel{durable: map[int64]expected{}, written: map[int64]expected{}}
	for _, a := range e.acked {
		m.durable[a.phys] = a
	}
	for _, a := range e.maybe {
		m.written[a.phys] = a
	}
	// Unacknowledged records may survive only whole; with nil rng nothing
	// unsynced survives, so the log is exactly the acknowledged records.
	m.verify(e.t, s, "after power loss")
	return s
}

func TestWriteErrorsRefuseCleanly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rule     errorfs.Rule
		prealloc bool
		diskFull bool
	}{
		{"ENOSPC on write", errorfs.Rule{Op: errorfs.OpWrite, Path: "commitlog", Err: syscall.ENOSPC}, false, true},
		{"EIO on write", errorfs.Rule{Op: errorfs.OpWrite, Path: "commitlog"}, false, false},
		{"torn write", errorfs.Rule{Op: errorfs.OpWrite, Path: "commitlog", Tear: true, TearAt: 100}, false, false},
		{"ENOSPC on fallocate", errorfs.Rule{Op: errorfs.OpAllocate, Path: "commitlog", Err: syscall.ENOSPC}, true, true},
		{"ENOSPC on create", errorfs.Rule{Op: errorfs.OpCreate, Path: "commitlog", Err: syscall.ENOSPC}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newFaultEnv(t, "pwrite", tc.prealloc)
			e.mustAppend(10, 900) // into the second segment
			before := e.s.WrittenOffset()
			if tc.rule.Op == errorfs.OpAllocate || tc.rule.Op == errorfs.OpCreate {
				// Fails at the next roll: fill the segment until one comes.
				e.efs.AddRule(tc.rule)
				var err error
				for i := 0; i < 40 && err == nil; i++ {
					before = e.s.WrittenOffset()
					_, err = e.append(900)
				}
				checkRefused(t, e, err, before, tc.diskFull)
			} else {
				e.efs.AddRule(tc.rule)
				_, err := e.append(900)
				checkRefused(t, e, err, before, tc.diskFull)
			}
			e.efs.ClearRules()
			// The store carries on: more appends, across a roll.
			e.mustAppend(20, 900)
			if err := e.s.Err(); err != nil {
				t.Fatalf("store broken by a write error: %v", err)
			}
			if m := e.s.Metrics(); m.WriteErrors == 0 {
				t.Fatalf("metrics count no write error: %+v", m)
			}
			e.reopenAfterPowerLoss()
		})
	}
}

func checkRefused(t *testing.T, e *faultEnv, err error, before int64, diskFull bool) {
	t.Helper()
	if err == nil {
		t.Fatal("append succeeded despite the fault")
	}
	if diskFull != errors.Is(err, ErrDiskFull) || diskFull != errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("error %v: want ErrDiskFull (wrapping ENOSPC) = %v", err, diskFull)
	}
	if errors.Is(err, ErrBroken) || e.s.Err() != nil {
		t.Fatalf("a write error broke the store: %v", err)
	}
	if got := e.s.WrittenOffset(); got != before {
		t.Fatalf("refused append moved the written offset %d -> %d", before, got)
	}
}

func TestSyncErrorIsTerminal(t *testing.T) {
	for _, be := range memBackends(t) {
		for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
			t.Run(be+"/"+errno.Error(), func(t *testing.T) {
				e := newFaultEnv(t, be, false)
				e.mustAppend(5, 300)
				e.efs.AddRule(errorfs.Rule{Op: errorfs.OpSync, Path: "commitlog", Err: errno})
				_, err := e.append(300)
				if !errors.Is(err, ErrBroken) || !errors.Is(err, errno) {
					t.Fatalf("append with a failing fsync: %v, want ErrBroken wrapping %v", err, errno)
				}
				if e.s.Err() == nil || !e.s.Metrics().Broken {
					t.Fatal("store not broken")
				}
				// Terminal: with the disk healthy again nothing is
				// acknowledged, nothing more written, durable frozen.
				e.efs.ClearRules()
				written, durable := e.s.WrittenOffset(), e.s.DurableOffset()
				for i := 0; i < 5; i++ {
					if _, err := e.append(300); !errors.Is(err, ErrBroken) || !errors.Is(err, errno) {
						t.Fatalf("append after the failure: %v", err)
					}
				}
				if e.s.WrittenOffset() != written || e.s.DurableOffset() != durable {
					t.Fatalf("offsets moved after the failure: written %d->%d durable %d->%d",
						written, e.s.WrittenOffset(), durable, e.s.DurableOffset())
				}
				if err := e.s.Close(); !errors.Is(err, ErrBroken) {
					t.Fatalf("Close of a broken store: %v", err)
				}
				e.reopenAfterPowerLoss()
			})
		}
	}
}

func TestDirSyncErrorIsTerminal(t *testing.T) {
	e := newFaultEnv(t, "pwrite", false)
	e.mustAppend(3, 300)
	e.efs.AddRule(errorfs.Rule{Op: errorfs.OpSyncDir, Path: "commitlog"})
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = e.append(900) // until a roll needs the directory synced
	}
	if !errors.Is(err, ErrBroken) {
		t.Fatalf("append after a failed directory sync: %v", err)
	}
	e.efs.ClearRules()
	e.reopenAfterPowerLoss()
}

// TestRefusedBatchThenCleanClose: a write that put all its bytes on disk
// but failed leaves whole, valid records past the tail. A clean Close must
// not let a later append overwrite them in place (a record of the same
// size would line the stale ones up with their physical offsets, and a
// crash would bring them back): Close seals the segment first.
func TestRefusedBatchThenCleanClose(t *testing.T) {
	e := newFaultEnv(t, "pwrite", false)
	e.mustAppend(2, 300)
	var batch []*Message
	for i := 0; i < 3; i++ {
		batch = append(batch, testMessage("T", 0, 300))
	}
	e.efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Path: "commitlog", Tear: true, TearAt: 1 << 20})
	if _, err := e.s.AppendBatch(context.Background(), batch); err == nil {
		t.Fatal("batch acknowledged despite the write error")
	}
	e.efs.ClearRules()
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	e.s = mustOpen(t, e.opts)
	e.mustAppend(1, 300) // the size of the first refused record: the others line up
	e.reopenAfterPowerLoss()
}
