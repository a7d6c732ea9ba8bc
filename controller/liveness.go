package controller

import "time"

// Liveness is the controller replica's own record of the brokers'
// heartbeats, on its own clock. The records are not replicated, but a
// master's come from replicated entries: its heartbeats are answered only
// once a Raft entry for them is committed, and every replica records the
// master as heard when it applies that entry (and when it applies the
// registration or election that made it master), so a new leader knows a
// master's last renewal no earlier than the master does. A slave's
// heartbeats are recorded by the leader that answered them alone.
type Liveness struct {
	last map[Group]map[int64]time.Time
}

func newLiveness() Liveness { return Liveness{last: map[Group]map[int64]time.Time{}} }

// beat records a heartbeat at now; a late heartbeat with an older time never
// moves the record back.
func (l *Liveness) beat(g Group, id int64, now time.Time) {
	m := l.last[g]
	if m == nil {
		m = map[int64]time.Time{}
		l.last[g] = m
	}
	if t, ok := m[id]; !ok || now.After(t) {
		m[id] = now
	}
}

// heardOnce records now for id unless it has a record.
func (l *Liveness) heardOnce(g Group, id int64, now time.Time) {
	if _, ok := l.last[g][id]; !ok {
		l.beat(g, id, now)
	}
}

// alive: a heartbeat within timeout of now.
func (l *Liveness) alive(g Group, id int64, now time.Time, timeout time.Duration) bool {
	t, ok := l.last[g][id]
	return ok && now.Sub(t) <= timeout
}

// LastHeartbeat returns the time of broker id's last heartbeat.
func (l *Liveness) LastHeartbeat(g Group, id int64) (time.Time, bool) {
	t, ok := l.last[g][id]
	return t, ok
}
