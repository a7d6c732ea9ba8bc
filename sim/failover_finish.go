package sim

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"time"
)

// finish heals everything, waits for the group to have a master that
// takes writes and every replica to hold its whole log, and holds the
// logs to the invariants.
func (f *failover) finish() error {
	f.rng = rand.New(rand.NewSource(f.sched.Int63()))
	f.heal()
	if err := f.failed(); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	var m *replica
	for {
		if m = f.currentMaster(); m != nil && f.caughtUp(m) {
			break
		}
		if time.Now().After(deadline) {
			return f.violation(InvCatchUp, "no master with every replica caught up 5 minutes after the last heal: %s", f.describe())
		}
		if err := f.operatorUnclean(); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
		if err := f.failed(); err != nil {
			return err
		}
	}
	f.tracef("caught up at %d on %s", m.store.WrittenOffset(), m.name)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.reps {
		for _, off := range f.promisedLocked() {
			// No repair is simulated: a flipped copy stays quarantined.
			if r := f.mu.acked[off]; !holds(p.store, off, r.data) && !f.damagedAtLocked(p.id, off, int64(len(r.data))) {
				return f.violationLocked(InvAckedKept, "at the end %s lacks the record acknowledged at %d (%d bytes)", p.name, off, len(r.data))
			}
		}
	}
	ms := m.store
	buf := make([]byte, ms.MaxRecordSize())
	other := make([]byte, ms.MaxRecordSize())
	for _, p := range f.reps {
		if p == m {
			continue
		}
		ss := p.store
		for off := max(ss.CommitLogMinOffset(), ms.CommitLogMinOffset()); off < ss.WrittenOffset(); {
			na, nextA, errA := ms.ReadLog(off, buf)
			nb, nextB, errB := ss.ReadLog(off, other)
			if errB == nil && nb > 0 && (f.damagedAtLocked(p.id, off, int64(nb)) || f.damagedAtLocked(m.id, off, int64(nb))) {
				off = nextB
				continue
			}
			if errA != nil || errB != nil || nb == 0 || na != nb || nextA != nextB || !bytes.Equal(buf[:na], other[:nb]) {
				return f.violationLocked(InvSameLog, "at %d: master %s %d bytes to %d (%v), %s %d bytes to %d (%v)", off, m.name, na, nextA, errA, p.name, nb, nextB, errB)
			}
			off = nextB
		}
	}
	return nil
}

// caughtUp: every replica is up and holds m's whole log, handed to its
// kernel.
func (f *failover) caughtUp(m *replica) bool {
	end := m.store.WrittenOffset()
	if m.store.HandedOffset() != end {
		return false
	}
	for _, p := range f.reps {
		if !p.up() || p.store.WrittenOffset() != end || p.store.HandedOffset() != end {
			return false
		}
	}
	return true
}

// describe says where each replica stands (for a violation's detail).
func (f *failover) describe() string {
	var b []string
	for _, p := range f.reps {
		if !p.up() {
			b = append(b, p.name+" down")
			continue
		}
		p.mu.Lock()
		role, epoch := p.mu.role, p.mu.epoch
		p.mu.Unlock()
		d := fmt.Sprintf("%s %s at epoch %d, log end %d, writable %v", p.name, role, epoch, p.store.WrittenOffset(), p.canWrite())
		if s := p.slaveLink(); s != nil {
			d += fmt.Sprintf(", link %+v", s.Status())
		}
		b = append(b, d)
	}
	return strings.Join(b, "; ")
}
