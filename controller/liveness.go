package controller

import "time"

// Liveness is the controller replica's own record of the brokers'
// heartbeats. It is not replicated: heartbeats come every second or so and
// would flood the Raft log, and a follower's table only matters once it
// leads. A new leader starts with an empty table (or one fed by the
// heartbeats brokers sent it as a follower), so it sees every master as dead
// until it hears from it; the caller should therefore wait one
// ElectionTimeout after gaining leadership before it acts on Tick.
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
