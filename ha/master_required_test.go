package ha

import (
	"errors"
	"slices"
	"testing"
)

// A required slave (the sync-state set) must acknowledge too: one other
// slave's acknowledgement is not enough while it stalls; dropping it from
// the set releases the writes again.
func TestRequiredSlaveMustAcknowledge(t *testing.T) {
	rng := seeded(t)
	mn := newNode(t, testSeg)
	m := startMaster(t, mn, "", func(c *MasterConfig) { c.AckTimeout = 300 * 1e6 })
	addr := masterAddr(m)
	fault := &Fault{}
	startSlave(t, newNode(t, testSeg), 1, addr, nil)
	startSlave(t, newNode(t, testSeg), 2, addr, func(c *SlaveConfig) { c.Fault = fault })
	waitFor(t, "two slaves linked", func() bool { return len(m.Slaves()) == 2 })
	m.SetRequired([]int64{1, 2})
	if got := m.Required(); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("Required %v", got)
	}
	end := fill(mn.log, rng, 5, 1)
	if err := m.WaitReplicated(end); err != nil {
		t.Fatalf("both slaves up: %v", err)
	}
	fault.Stall()
	end = fill(mn.log, rng, 1, 2)
	if err := m.WaitReplicated(end); !errors.Is(err, ErrSlaveTimeout) {
		t.Fatalf("required slave 2 stalled: %v, want ErrSlaveTimeout", err)
	}
	m.SetRequired([]int64{1}) // the broker dropped 2 from the set
	if err := m.WaitReplicated(end); err != nil {
		t.Fatalf("slave 2 no longer required: %v", err)
	}
	// A required slave that is not linked at all holds writes too.
	m.SetRequired([]int64{1, 7})
	end = fill(mn.log, rng, 1, 3)
	if err := m.WaitReplicated(end); !errors.Is(err, ErrSlaveTimeout) {
		t.Fatalf("required slave 7 absent: %v, want ErrSlaveTimeout", err)
	}
	fault.Resume()
	m.SetRequired(nil)
	if err := m.WaitReplicated(end); err != nil {
		t.Fatalf("none required: %v", err)
	}
}

// Acknowledged is the highest end released: it does not move while a
// required slave is away (the bytes appended meanwhile were acknowledged
// to nobody), and never falls when the quorum does.
func TestAcknowledgedStopsAtTheRelease(t *testing.T) {
	rng := seeded(t)
	mn := newNode(t, testSeg)
	m := startMaster(t, mn, "", func(c *MasterConfig) { c.AckTimeout = 300 * 1e6 })
	if got := m.Acknowledged(); got != -1 {
		t.Fatalf("Acknowledged before any release: %d, want -1", got)
	}
	startSlave(t, newNode(t, testSeg), 1, masterAddr(m), nil)
	waitFor(t, "a slave linked", func() bool { return len(m.Slaves()) == 1 })
	end := fill(mn.log, rng, 5, 1)
	if err := m.WaitReplicated(end); err != nil {
		t.Fatal(err)
	}
	if got := m.Acknowledged(); got < end {
		t.Fatalf("Acknowledged %d after a release to %d", got, end)
	}
	acked := m.Acknowledged()
	m.SetRequired([]int64{1, 7}) // 7 is not linked: the quorum falls to -1
	later := fill(mn.log, rng, 1, 2)
	if err := m.WaitReplicated(later); !errors.Is(err, ErrSlaveTimeout) {
		t.Fatalf("required slave 7 absent: %v, want ErrSlaveTimeout", err)
	}
	if got := m.Acknowledged(); got != acked {
		t.Fatalf("Acknowledged %d with the quorum fallen, want it kept at %d (and not the handed %d)", got, acked, mn.log.HandedOffset())
	}
}

// With RequiredOnly, a slave outside the required set (the sync-state
// set) releases no write: with none required nothing is released, and a
// required slave's acknowledgement is what releases it.
func TestRequiredOnlyCountsTheSet(t *testing.T) {
	rng := seeded(t)
	mn := newNode(t, testSeg)
	m := startMaster(t, mn, "", func(c *MasterConfig) { c.AckTimeout = 300 * 1e6; c.RequiredOnly = true })
	addr := masterAddr(m)
	startSlave(t, newNode(t, testSeg), 1, addr, nil)
	startSlave(t, newNode(t, testSeg), 2, addr, nil)
	waitFor(t, "two slaves linked", func() bool { return len(m.Slaves()) == 2 })
	end := fill(mn.log, rng, 3, 1)
	if err := m.WaitReplicated(end); !errors.Is(err, ErrSlaveNotAvailable) {
		t.Fatalf("no slave required: %v, want ErrSlaveNotAvailable", err)
	}
	if got := m.Acknowledged(); got != -1 {
		t.Fatalf("Acknowledged %d with no slave required, want -1", got)
	}
	m.SetRequired([]int64{2})
	if err := m.WaitReplicated(end); err != nil {
		t.Fatalf("slave 2 required: %v", err)
	}
}
