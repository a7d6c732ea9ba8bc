package ha

import "slices"

// SetRequired names the slaves (broker ids) that must each acknowledge a
// record, on top of the InSyncReplicas-1 any slaves, before WaitReplicated
// returns for it: the fail-over controller's sync-state set, which the
// controller elects a new master from, so every member must hold every
// acknowledged record (RocketMQ's allAckInSyncStateSet). A required slave
// that is not connected holds waiters until AckTimeout (ErrSlaveTimeout);
// the broker then drops it from the set and calls SetRequired again. nil or
// empty: no slave is required (the static roles).
//
// Call it with a grown set before the controller takes the new member (it
// must already acknowledge what is acknowledged from then on), and with a
// shrunk set after the controller dropped the member.
func (m *Master) SetRequired(ids []int64) {
	m.mu.Lock()
	defer m.unlockAndFire()
	m.mu.required = slices.Clone(ids)
	// The quorum may fall (a new member has not acknowledged yet): waiters
	// already released stay released, later ones wait for it.
	m.setQuorumLocked(m.quorumLocked())
	m.mu.pending.release(m.mu.quorum, nil)
}

// Required returns the slaves SetRequired named.
func (m *Master) Required() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.mu.required)
}

// quorumLocked is the offset WaitReplicated may release up to: the
// need-th highest acknowledgement among the registered slaves, and no more
// than any required slave acknowledged (-1 when a required slave or too
// many slaves are missing).
func (m *Master) quorumLocked() int64 {
	q := m.needthLocked()
	for _, id := range m.mu.required {
		ack := int64(-1)
		for _, l := range m.mu.links {
			if l.brokerID == id {
				ack = l.ack.Load()
				break
			}
		}
		q = min(q, ack)
	}
	return q
}
