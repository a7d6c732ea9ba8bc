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
//
// Beside the times it keeps what elections rank and wait on: each
// replica's last reported Position, when it last registered (applied from
// replicated entries, so every replica has it: a registration is a
// restart), when it last said it could not take up the master role, and
// when each group's master was last heard.
type Liveness struct {
	last        map[Group]map[int64]time.Time
	pos         map[Group]map[int64]Position
	registered  map[Group]map[int64]time.Time
	unable      map[Group]map[int64]time.Time
	masterHeard map[Group]time.Time
}

func newLiveness() Liveness {
	return Liveness{last: map[Group]map[int64]time.Time{}, pos: map[Group]map[int64]Position{},
		registered: map[Group]map[int64]time.Time{}, unable: map[Group]map[int64]time.Time{},
		masterHeard: map[Group]time.Time{}}
}

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

// report records the position id reported.
func (l *Liveness) report(g Group, id int64, p Position) {
	setIn(l.pos, g, id, p)
}

// Position is broker id's last reported position (zero when none).
func (l *Liveness) Position(g Group, id int64) Position { return l.pos[g][id] }

// restarted records that id registered at now.
func (l *Liveness) restarted(g Group, id int64, now time.Time) { setIn(l.registered, g, id, now) }

// heardMaster records that g's master was heard at now.
func (l *Liveness) heardMaster(g Group, now time.Time) {
	if now.After(l.masterHeard[g]) {
		l.masterHeard[g] = now
	}
}

func setIn[V any](m map[Group]map[int64]V, g Group, id int64, v V) {
	in := m[g]
	if in == nil {
		in = map[int64]V{}
		m[g] = in
	}
	in[id] = v
}
