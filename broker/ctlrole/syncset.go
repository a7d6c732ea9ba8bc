package ctlrole

import (
	"slices"
	"time"

	"github.com/samsamq/samsa/ha"
)

// SyncSetRules are a master's bounds on keeping a member in its
// sync-state set.
type SyncSetRules struct {
	// NotCatchup: a linked member that trails keeps this long to catch up
	// (haMaxTimeSlaveNotCatchup).
	NotCatchup time.Duration
	// Unlinked: a member not linked since this broker became master
	// leaves once it has not been caught up for this long
	// (controllerHeartBeatTimeoutMills: as long as the controller takes
	// to call a master dead).
	Unlinked time.Duration
}

// Tracker is what a master remembers between rounds to keep its
// sync-state set: when each member (or candidate) was last seen holding
// the whole log, and which slaves were linked since it became master.
type Tracker struct {
	caughtUp   map[int64]time.Time
	linkedOnce map[int64]bool
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{caughtUp: map[int64]time.Time{}, linkedOnce: map[int64]bool{}}
}

// Begin starts a mastership at now with the controller's set: every
// member counts as caught up at now, no slave as linked.
func (t *Tracker) Begin(set []int64, now time.Time) {
	clear(t.caughtUp)
	clear(t.linkedOnce)
	for _, id := range set {
		t.caughtUp[id] = now
	}
}

// Next is the sync-state set master self asks for at now, given the set
// in force and its linked slaves: a linked slave holding the whole log
// joins; a member whose link to this master ended leaves at once (a
// SYNC_MASTER's sends wait for every member, as RocketMQ's master drops a
// closed connection's slave); a member never linked since this broker
// became master leaves once not caught up for rules.Unlinked; a linked
// member that trails keeps rules.NotCatchup. The master always stays.
// Sorted.
func (t *Tracker) Next(self int64, set []int64, slaves []ha.SlaveStatus, now time.Time, rules SyncSetRules) []int64 {
	next := []int64{self}
	linked := make(map[int64]bool, len(slaves))
	for _, s := range slaves {
		t.caughtUp[s.BrokerID] = now.Add(-s.LagTime) // LagTime is 0 when caught up
		linked[s.BrokerID] = true
		t.linkedOnce[s.BrokerID] = true
	}
	for _, id := range set {
		limit := rules.NotCatchup
		switch {
		case !linked[id] && t.linkedOnce[id]:
			limit = -1
		case !linked[id]:
			limit = min(limit, rules.Unlinked)
		}
		if id != self && now.Sub(t.caughtUp[id]) <= limit {
			next = append(next, id)
		}
	}
	for _, s := range slaves {
		if s.LagBytes == 0 && !slices.Contains(next, s.BrokerID) {
			next = append(next, s.BrokerID)
		}
	}
	slices.Sort(next)
	return next
}

// Others is set without id.
func Others(set []int64, id int64) []int64 {
	out := make([]int64, 0, len(set))
	for _, x := range set {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// Union is a ∪ b, sorted.
func Union(a, b []int64) []int64 {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
