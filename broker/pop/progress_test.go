package pop

import (
	"sync"
	"testing"
	"time"
)

// offsetTable is the broker's consumer offsets as the service sees them.
type offsetTable struct {
	mu  sync.Mutex
	off map[qkey]int64
}

func (o *offsetTable) committed(group, topic string, qid int32) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	off, ok := o.off[qkey{group, topic, qid}]
	return off, ok
}

func (o *offsetTable) commit(group, topic string, qid int32, off int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.off[qkey{group, topic, qid}] = off
	return nil
}

// TestProgressSurvivesFailover: a group pops ten messages and acknowledges
// the first six but the fourth. Its floor (3: the least in flight) is
// committed as its consumer offset; a new master with no pop.wal (a
// replica elected after a fail-over, sharing the copied offsets) hands out
// from the floor: the in-flight ones again, then the rest, never the
// acknowledged ones below it.
func TestProgressSurvivesFailover(t *testing.T) {
	offs := &offsetTable{off: map[qkey]int64{}}
	r := newRig(t, 1)
	r.commit, r.committed = offs.commit, offs.committed
	if err := r.svc.Close(); err != nil {
		t.Fatal(err)
	}
	r.reopenService()
	r.send(0, "a", msgs(12)...)
	ps := r.pop(r.req(10, time.Minute))
	if len(ps) != 10 {
		t.Fatalf("popped %d", len(ps))
	}
	for i, p := range ps[:6] {
		if i == 3 {
			continue
		}
		if err := r.svc.Ack(&p.handle); err != nil {
			t.Fatal(err)
		}
	}
	r.svc.commitFloors()
	if off, ok := offs.committed(group, topic, 0); !ok || off != 3 {
		t.Fatalf("committed %d, %v; want the floor 3", off, ok)
	}

	// The new master: the same log and offsets, no pop.wal.
	if err := r.svc.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := r.fs.List(popDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := r.fs.Remove(popDir + "/" + n); err != nil {
			t.Fatal(err)
		}
	}
	r.reopenService()
	got := bodies(r.pop(r.req(32, time.Minute)))
	want := []string{"m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11"}
	if len(got) != len(want) {
		t.Fatalf("after the fail-over popped %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after the fail-over popped %v, want %v", got, want)
		}
	}
}

// TestProgressNotCommittedFromAnOldWAL: a service that opens on a pop.wal
// (a restart, or a replica that was master once and is a slave now)
// commits nothing until its state moves.
func TestProgressNotCommittedFromAnOldWAL(t *testing.T) {
	r := newRig(t, 1)
	r.send(0, "a", msgs(4)...)
	ps := r.pop(r.req(4, time.Minute))
	if err := r.svc.Ack(&ps[0].handle); err != nil {
		t.Fatal(err)
	}
	if err := r.svc.Close(); err != nil {
		t.Fatal(err)
	}
	offs := &offsetTable{off: map[qkey]int64{}}
	r.commit, r.committed = offs.commit, offs.committed
	r.reopenService()
	r.svc.commitFloors()
	if len(offs.off) != 0 {
		t.Fatalf("committed %v from the state pop.wal gave back", offs.off)
	}
	if err := r.svc.Ack(&ps[1].handle); err != nil {
		t.Fatal(err)
	}
	r.svc.commitFloors()
	if off, ok := offs.committed(group, topic, 0); !ok || off != 2 {
		t.Fatalf("after an ack: committed %d, %v; want 2", off, ok)
	}
}

// TestResyncCatchesUpWithAnotherMaster: a replica's pop.wal from its time
// as master says m0..m3 in flight; meanwhile another master consumed up
// to 6 and committed it. Resync drops what lies below and pops from 6.
func TestResyncCatchesUpWithAnotherMaster(t *testing.T) {
	offs := &offsetTable{off: map[qkey]int64{}}
	r := newRig(t, 1)
	r.commit, r.committed = offs.commit, offs.committed
	if err := r.svc.Close(); err != nil {
		t.Fatal(err)
	}
	r.reopenService()
	r.send(0, "a", msgs(8)...)
	if ps := r.pop(r.req(4, time.Minute)); len(ps) != 4 {
		t.Fatalf("popped %d", len(ps))
	}
	if err := offs.commit(group, topic, 0, 6); err != nil { // the other master's
		t.Fatal(err)
	}
	if err := r.svc.Resync(); err != nil {
		t.Fatal(err)
	}
	r.clock.Add(2 * time.Minute) // what was in flight would be due now
	if got := bodies(r.pop(r.req(32, time.Minute))); len(got) != 2 || got[0] != "m6" || got[1] != "m7" {
		t.Fatalf("after the resync popped %v, want [m6 m7]", got)
	}
}
