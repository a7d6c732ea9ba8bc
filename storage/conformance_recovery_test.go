package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// TestRecoveryMakesAdoptedStateDurable: after a process crash the page
// cache holds what the dead process wrote and never synced: segment files
// whose names no directory sync covered, ConsumeQueue entries no flush
// reached. Recovery adopts them; before it reports them durable (the
// checkpoint it writes says so) it must sync them, or the power loss that
// follows leaves a store Open refuses. The deterministic form of what the
// conformance suite's crash=mixed leaves find at random: a process crash
// (nothing synced since the store was made), a restart, a power loss
// that keeps only what was synced, a restart that must find every record
// the first restart found.
func TestRecoveryMakesAdoptedStateDurable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  FlushPolicy
		n       int
		sysFlag int32
	}{
		// Flush none: the dead process synced no segment name; prepared
		// transaction records have no ConsumeQueue entry.
		{"segment names", FlushNone, 12, record.TransactionPrepared},
		// Flush sync: the log and its names are synced. The ConsumeQueue
		// wrote its 256-entry buffer out when it filled, unsynced (the
		// checkpoint that would sync it is an hour away); re-indexing
		// finds every entry there and writes nothing, so nothing marks
		// the file for the checkpoint's flush.
		{"consume queue entries", FlushSync, 256, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := testOptions(mem, "mmap", tc.policy) // appends reach the page cache at once
			opts.SegmentSize = 4 << 10
			opts.ConsumeQueueEntries = 1024
			s := mustOpen(t, opts)
			for i := 0; i < tc.n; i++ {
				m := testMessage("T", 0, 900) // four a segment: several segments
				m.SysFlag = tc.sysFlag
				if _, err := s.Append(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			waitDispatched(t, s)
			s.mu.Lock() // no copy into a mapping in flight
			img := mem.ProcessCrashClone()
			s.mu.Unlock()
			defer s.Close() // the dead process: nothing it does reaches img

			opts.FS = img
			s2, err := Open(opts)
			if err != nil {
				t.Fatalf("Open after the process crash: %v", err)
			}
			m := &crashModel{durable: map[int64]expected{}, written: map[int64]expected{}}
			for _, r := range walkLog(t, s2, "after the process crash") {
				e := expected{phys: r.phys, bytes: r.b, topic: "T", qid: 0, qoff: record.QueueOffsetOf(r.b)}
				m.written[r.phys] = e
			}
			if len(m.written) != tc.n {
				t.Fatalf("after the process crash: %d records, want %d", len(m.written), tc.n)
			}
			// Open returned: what it recovered counts as durable (it
			// flushed the log and wrote a checkpoint saying so).
			m.verify(t, s2, "after the process crash")

			opts.FS = img.CrashClone(nil) // power loss: only what was synced
			s2.Close()
			s3, err := Open(opts)
			if err != nil {
				t.Fatalf("Open after a process crash, a restart and a power loss: %v", err)
			}
			defer s3.Close()
			m.verify(t, s3, "after a process crash, a restart and a power loss")
		})
	}
}

// TestRecoveryCrashAtEveryOp: recovery cutting a torn tail (truncate the
// segment at the cut, remove every later segment) must itself survive a
// crash at any of its file operations, of either kind: the next Open
// succeeds and finds the log up to the cut. A power loss reverts the
// removals not yet covered by a directory sync; a process crash keeps
// every removal done, so removing the later segments oldest first leaves
// a gap ("segments missing between") that no Open gets past.
func TestRecoveryCrashAtEveryOp(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	opts.SegmentSize = 4 << 10
	s := mustOpen(t, opts)
	var first expected
	for i := 0; i < 16; i++ { // four a segment: four segments
		m := testMessage("T", 0, 900)
		r, err := s.Append(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = expectedOf(m, r)
		}
	}
	base := mem.ProcessCrashClone()
	s.Close()
	// Tear the second record (the checkpoint says nothing is durable yet,
	// so recovery takes it for a torn tail): the log ends after the first.
	f, err := base.Open(filepath.Join(opts.Dir, "commitlog", segmentName(0)), vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustWriteAt(t, f, make([]byte, 64), int64(len(first.bytes)))
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	for _, mode := range []crashMode{processCrash, powerLoss} {
		t.Run(mode.String(), func(t *testing.T) {
			done := false
			for n := int64(1); !done; n++ {
				img := base.ProcessCrashClone() // a copy
				cfs := newCrashFSMode(img, n, mode)
				o := opts
				o.FS = cfs
				cfs.arm(n)
				s, err := Open(o)
				cfs.disarm()
				if !cfs.dead.Load() {
					if err != nil {
						t.Fatalf("%v: Open with no crash: %v", mode, err)
					}
					done = true // every operation of recovery had its crash
				} else {
					if s != nil {
						s.Close()
					}
					o.FS = cfs.clone
					if s, err = Open(o); err != nil {
						t.Fatalf("Open after a %v at operation %d of recovery: %v", mode, n, err)
					}
				}
				where := fmt.Sprintf("after a %v at operation %d of recovery", mode, n)
				if done {
					where = fmt.Sprintf("recovery with no crash (%d operations)", n-1)
				}
				m := &crashModel{durable: map[int64]expected{0: first}, written: map[int64]expected{}}
				m.verify(t, s, where)
				if got := s.WrittenOffset(); got != int64(len(first.bytes)) {
					t.Fatalf("%s: the log ends at %d, want %d (the cut)", where, got, len(first.bytes))
				}
				s.Close()
			}
		})
	}
}

func mustWriteAt(t *testing.T, f vfs.File, p []byte, off int64) {
	t.Helper()
	if _, err := f.WriteAt(p, off); err != nil {
		t.Fatal(err)
	}
}

// syncDirHook is a file system that calls before(dir) ahead of every
// SyncDir: a test takes its crash image there, at a moment no operation
// is in flight and a name is created but not yet durable.
type syncDirHook struct {
	vfs.FS
	before func(dir string)
}

func (h *syncDirHook) SyncDir(dir string) error {
	h.before(dir)
	return h.FS.SyncDir(dir)
}

// TestRecoveryMakesAdoptedQueueFilesDurable: a process dies between
// creating a ConsumeQueue file and syncing the queue's directory, so the
// file's name is in the page cache only. Recovery re-indexes into that
// file (it is there: no Create, no directory sync) and syncs its bytes;
// the checkpoint it writes then counts the entries as durable. Unless
// recovery also syncs the directory, the power loss that follows takes
// the name, and with it every entry the checkpoint counted: Open fails
// with "consume queue T/0 ends at offset 0; the checkpoint had N
// durable" (or, when the checkpoint's dispatched offset lies past the
// queue's first record, "re-index ... append leaves a gap"). The
// deterministic form of the crash=mixed failures of the conformance
// suite.
func TestRecoveryMakesAdoptedQueueFilesDurable(t *testing.T) {
	for _, file := range []struct {
		name string
		n    int // records appended before the crash; file k's Create is the crash point
	}{
		{"first file", 1},  // the queue's directory and first file
		{"second file", 5}, // ConsumeQueueEntries 4: the fifth entry opens file 4
	} {
		t.Run(file.name, func(t *testing.T) {
			mem := vfs.NewMem()
			var img *vfs.MemFS
			var mu sync.Mutex
			qdir := filepath.Join("/store", "consumequeue", "T", "0")
			syncs := 0
			hook := &syncDirHook{FS: mem, before: func(dir string) {
				mu.Lock()
				defer mu.Unlock()
				if dir != qdir {
					return
				}
				// The queue's directory is synced by the ConsumeQueue
				// flush before a checkpoint, not at each Create: the
				// first such sync finds every file made so far (the
				// second file too, n=5) with its name unsynced.
				if syncs++; syncs == 1 && img == nil {
					img = mem.ProcessCrashClone()
				}
			}}
			opts := testOptions(hook, "pwrite", FlushSync)
			opts.ConsumeQueueEntries = 4
			s := mustOpen(t, opts)
			var want []expected
			for i := 0; i < file.n; i++ {
				m := testMessage("T", 0, 100)
				r, err := s.Append(context.Background(), m)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, expectedOf(m, r))
			}
			waitDispatched(t, s)
			s.Close()
			mu.Lock()
			if img == nil {
				mu.Unlock()
				t.Fatal("no crash image: the queue's directory was never synced")
			}
			mu.Unlock()

			opts.FS = img
			s2, err := Open(opts)
			if err != nil {
				t.Fatalf("Open after the process crash: %v", err)
			}
			m := &crashModel{durable: map[int64]expected{}, written: map[int64]expected{}}
			for _, e := range want {
				m.durable[e.phys] = e // FlushSync: acknowledged after fsync
			}
			m.verify(t, s2, "after the process crash")

			opts.FS = img.CrashClone(nil) // power loss: only what was synced
			s2.Close()
			s3, err := Open(opts)
			if err != nil {
				t.Fatalf("Open after a process crash, a restart and a power loss: %v", err)
			}
			defer s3.Close()
			m.verify(t, s3, "after a process crash, a restart and a power loss")
		})
	}
}
