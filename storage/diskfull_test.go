package storage

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// wakes records the OnDispatch callbacks (the long-poll's wake-ups).
type wakes struct {
	mu   sync.Mutex
	max  map[queueKey]int64 // highest queue offset woken per queue
	ch   chan struct{}      // signalled on every wake
	seen int
}

func watchWakes(s *Store) *wakes {
	w := &wakes{max: map[queueKey]int64{}, ch: make(chan struct{}, 1)}
	s.OnDispatch(func(topic string, qid int32, off int64) {
		w.mu.Lock()
		k := queueKey{topic, qid}
		if cur, ok := w.max[k]; !ok || off > cur {
			w.max[k] = off
		}
		w.seen++
		w.mu.Unlock()
		select {
		case w.ch <- struct{}{}:
		default:
		}
	})
	return w
}

func (w *wakes) reached(k queueKey, off int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur, ok := w.max[k]
	return ok && cur >= off
}

// waitWake waits (deadline 60 s: a loaded machine under -race) until a wake for queue offset off of k
// arrived.
func (w *wakes) waitWake(t *testing.T, k queueKey, off int64) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !w.reached(k, off) {
		select {
		case <-w.ch:
		case <-deadline:
			t.Fatalf("no wake for %s/%d offset %d", k.topic, k.qid, off)
		}
	}
}

// waitFor polls cond every millisecond until it holds (deadline 60 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// appendTo appends one message to (topic, qid) and records it if
// acknowledged.
func (e *faultEnv) appendTo(topic string, qid int32, size int) (AppendResult, error) {
	m := testMessage(topic, qid, size)
	r, err := e.s.Append(context.Background(), m)
	if err == nil {
		e.acked = append(e.acked, expectedOf(m, r))
	}
	return r, err
}

// checkQueue reads (topic, qid) from offset 0 with GetMessages and wants
// exactly the acknowledged records of that queue, in queue order.
func (e *faultEnv) checkQueue(topic string, qid int32) {
	e.t.Helper()
	var want []expected
	for _, a := range e.acked {
		if a.topic == topic && a.qid == qid {
			want = append(want, a)
		}
	}
	var got [][]byte
	var offs []int64
	for next := int64(0); ; {
		g, err := e.s.GetMessages(topic, qid, next, 32, 0, nil)
		if err != nil {
			e.t.Fatalf("GetMessages(%s/%d at %d): %v", topic, qid, next, err)
		}
		if g.Status != Found {
			break
		}
		got = append(got, g.Records...)
		offs = append(offs, g.QueueOffsets...)
		next = g.NextOffset
	}
	if len(got) != len(want) {
		e.t.Fatalf("%s/%d: GetMessages found %d records, %d were acknowledged", topic, qid, len(got), len(want))
	}
	for i, w := range want {
		if offs[i] != w.qoff || string(got[i]) != string(w.bytes) {
			e.t.Fatalf("%s/%d: record %d is offset %d, want the acknowledged offset %d (phys %d)", topic, qid, i, offs[i], w.qoff, w.phys)
		}
	}
}

// TestConsumeQueueFullHeals: the ConsumeQueue cannot write (ENOSPC) while
// the CommitLog can. The dispatcher holds the queue's records, the store
// turns read-only (appends refused with ErrDiskFull), and once space
// returns, with no restart, every acknowledged record is readable in queue
// order, the long-poll wake for the last one arrives, and appends resume.
func TestConsumeQueueFullHeals(t *testing.T) {
	e := newFaultEnv(t, "pwrite", false)
	w := watchWakes(e.s)
	for i := 0; i < 3; i++ { // both queues have files
		for _, q := range []int32{0, 1} {
			if _, err := e.appendTo("T", q, 200); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpCreate, errorfs.OpMkdir} {
		e.efs.AddRule(errorfs.Rule{Op: op, Path: "consumequeue", Sticky: true, Err: syscall.ENOSPC})
	}
	// Appends go on until the dispatcher meets the full disk (the 16th
	// entry of a queue needs a new file) and the store turns read-only.
	var err error
	for i := 0; i < 10_000 && err == nil; i++ {
		_, err = e.appendTo("T", int32(i%2), 200)
	}
	if !errors.Is(err, ErrDiskFull) || errors.Is(err, ErrBroken) {
		t.Fatalf("append during the outage: %v, want ErrDiskFull", err)
	}
	m := e.s.Metrics()
	if !m.ReadOnly || m.DispatchHeld == 0 || m.DispatchOutages != 1 || m.Broken {
		t.Fatalf("during the outage: ReadOnly %v, held %d, outages %d, broken %v", m.ReadOnly, m.DispatchHeld, m.DispatchOutages, m.Broken)
	}
	if _, err := e.s.Append(context.Background(), testMessage("T", 0, 200)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append while read-only: %v", err)
	}
	last := map[queueKey]int64{}
	for _, a := range e.acked {
		last[queueKey{a.topic, a.qid}] = a.qoff
	}
	e.efs.ClearRules() // space is back
	for k, off := range last {
		w.waitWake(t, k, off)
	}
	waitFor(t, "the store to leave read-only", func() bool { return !e.s.ReadOnly() })
	e.checkQueue("T", 0)
	e.checkQueue("T", 1)
	e.mustAppend(5, 200)
	waitDispatched(t, e.s)
	e.checkQueue("T", 0)
	if m := e.s.Metrics(); m.DispatchHeld != 0 || m.DispatchOutages != 1 || m.DispatchErrors == 0 {
		t.Fatalf("after the outage: held %d, outages %d, errors %d", m.DispatchHeld, m.DispatchOutages, m.DispatchErrors)
	}
	e.reopenAfterPowerLoss()
}

// TestConsumeQueueErrorOtherQueuesCarryOn: EIO on one queue's files holds
// that queue only; the store stays writable, the other queue is indexed at
// once, and the held queue catches up when its writes succeed again.
func TestConsumeQueueErrorOtherQueuesCarryOn(t *testing.T) {
	e := newFaultEnv(t, "pwrite", false)
	w := watchWakes(e.s)
	e.efs.AddRule(errorfs.Rule{Op: errorfs.OpMkdir, Path: "consumequeue/T/0", Sticky: true})
	e.efs.AddRule(errorfs.Rule{Op: errorfs.OpCreate, Path: "consumequeue/T/0", Sticky: true})
	for i := 0; i < 20; i++ {
		if _, err := e.appendTo("T", 0, 200); err != nil {
			t.Fatalf("append to the failing queue: %v", err)
		}
		r, err := e.appendTo("T", 1, 200)
		if err != nil {
			t.Fatalf("append to the healthy queue: %v", err)
		}
		w.waitWake(t, queueKey{"T", 1}, r.QueueOffset)
	}
	e.checkQueue("T", 1)
	if e.s.ReadOnly() || e.s.MaxQueueOffset("T", 0) != 0 {
		t.Fatalf("read-only %v, T/0 max offset %d", e.s.ReadOnly(), e.s.MaxQueueOffset("T", 0))
	}
	if got := e.s.dispatchOK.Load(); got != e.acked[0].phys {
		t.Fatalf("dispatchOK %d, want the first held record %d", got, e.acked[0].phys)
	}
	e.efs.ClearRules()
	w.waitWake(t, queueKey{"T", 0}, 19)
	e.checkQueue("T", 0)
	waitFor(t, "dispatchOK to catch up", func() bool { return e.s.dispatchOK.Load() == e.s.WrittenOffset() })
	e.reopenAfterPowerLoss()
}

// TestCloseOnFullDisk: Close on a full disk returns ErrDiskFullAtClose
// (not ErrBroken), leaves the abort marker, and the next Open recovers
// everything acknowledged.
func TestCloseOnFullDisk(t *testing.T) {
	e := newFaultEnv(t, "pwrite", false)
	for i := 0; i < 30; i++ {
		if _, err := e.appendTo("T", int32(i%3), 300); err != nil {
			t.Fatal(err)
		}
	}
	e.mem.SetCapacity(e.mem.Used())
	err := e.s.Close()
	if !errors.Is(err, ErrDiskFullAtClose) || !errors.Is(err, ErrDiskFull) || errors.Is(err, ErrBroken) {
		t.Fatalf("Close on a full disk: %v, want ErrDiskFullAtClose", err)
	}
	if ok, _ := exists(e.mem, "/store/abort"); !ok {
		t.Fatal("the abort marker is gone after an unclean close")
	}
	if ok, _ := exists(e.mem, "/store/checkpoint.tmp"); ok {
		t.Fatal("the failed checkpoint left its temp file")
	}
	e.mem.SetCapacity(vfs.DefaultMemCapacity)
	e.s = mustOpen(t, e.opts)
	for q := int32(0); q < 3; q++ {
		e.checkQueue("T", q)
	}
	e.reopenAfterPowerLoss()
}

// TestRetentionFreesFullDisk: on a full disk retention (DiskRatio) still
// deletes the segments the last checkpoint covers, though it cannot write
// a new checkpoint, and appends succeed again in the space it freed.
func TestRetentionFreesFullDisk(t *testing.T) {
	e := newFaultEnv(t, "pwrite", false)
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	e.opts.Retention.DiskRatio = 0.5
	e.s = mustOpen(t, e.opts)
	e.mustAppend(60, 900) // several 16 KiB segments
	waitDispatched(t, e.s)
	if err := e.s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	e.mustAppend(1, 900) // retention has a new checkpoint to write
	e.mem.SetCapacity(e.mem.Used())
	var err error
	for i := 0; i < 100 && err == nil; i++ { // the active segment's reserve, then the roll fails
		_, err = e.append(900)
	}
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append on a full disk: %v", err)
	}
	n, err := e.s.ApplyRetention()
	if err != nil || n == 0 {
		t.Fatalf("retention on a full disk: deleted %d, %v", n, err)
	}
	e.mustAppend(5, 900)
	e.reopenAfterPowerLoss()
}
