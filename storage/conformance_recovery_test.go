package storage

import (
	"context"
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
