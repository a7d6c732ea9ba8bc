package controller

import (
	"fmt"
	"slices"
)

// The election rule, applied to ElectMaster (Alive: the replicas alive
// when the command was made; Positions: where their logs stood):
//
//  1. The old master, if it is alive (and so in the sync-state set, which
//     always holds it), stays: nothing changes.
//  2. Otherwise the candidates are the alive members of the sync-state
//     set (and of the sets before it while the master named since never
//     took up its role: groupState.taken) that report no damaged records
//     left unrepaired, ranked by Position (epoch of the log's tail, then
//     log end; Raft's most up-to-date log), ties to the lowest id. The
//     best becomes master if its log reaches what the group acknowledged
//     (acked: the highest Confirmed its masters renewed their lease with):
//     the epoch rises by one and the sync-state set becomes {new master}
//     (its epoch rises too); the master grows it again with
//     AlterSyncStateSet as slaves catch up.
//  3. No candidate, or the best lacks acknowledged messages (every alive
//     member came back from a power loss): with Config.UncleanElection or
//     the command's Unclean (the operator's), the most up-to-date alive
//     replica, in the set or not, becomes master as in 2 and the result
//     carries Unclean; acked drops to its log end, and uncleanEpoch
//     becomes the new epoch (replicas may cut acknowledged messages of the
//     lineages before it to follow; without it they refuse). Otherwise the group has
//     no master: if it had one, the epoch rises (fencing the old master
//     should it return) and the sync-state set is kept, so a member that
//     comes back can be elected. A replica still verifying its log after
//     a restart (Position.Unverified) is no candidate until done: the
//     election waits for it, unclean or not only once none is left.
//  4. The operator's Unclean while the master is alive elects nothing: it
//     raises uncleanEpoch to the master's epoch, so a replica that refuses
//     to cut acknowledged messages it alone kept may cut them and follow.
//
// A candidate that lost a tail the others hold never wins while one of
// them is alive; Machine.Tick holds the election back (Config.RecoveryWait)
// while every alive candidate restarted since the master was last heard,
// so that the members that hold the most can come back first.
func (s *State) elect(c ElectMaster) (Result, error) {
	gs, ok := s.groups[c.Group]
	if !ok {
		return Result{Group: c.Group, MasterID: NoMaster}, fmt.Errorf("%w %s", ErrUnknownGroup, c.Group)
	}
	if c.MasterEpoch != gs.masterEpoch {
		return s.describe(c.Group, gs), fmt.Errorf("%w: elect %s made at epoch %d, the group is at %d: nothing changed",
			ErrStaleElection, c.Group, c.MasterEpoch, gs.masterEpoch)
	}
	for _, id := range c.Alive {
		if _, ok := gs.replicas[id]; !ok {
			return s.describe(c.Group, gs), fmt.Errorf("%w: elect %s: alive broker %d is not registered", ErrUnknownBroker, c.Group, id)
		}
	}
	d := s.decide(gs, c)
	switch {
	case d.stays && c.Unclean && gs.uncleanEpoch < gs.masterEpoch:
		gs.uncleanEpoch = gs.masterEpoch
		r := s.describe(c.Group, gs)
		r.Changed = true
		r.Note = fmt.Sprintf("master %d is alive and stays; the operator accepts that replicas cut what they hold beyond it to follow it "+
			"(acknowledged messages only they kept are lost)", gs.master)
		return r, nil
	case d.stays:
		r := s.describe(c.Group, gs)
		r.Note = fmt.Sprintf("master %d is alive: nothing changed", gs.master)
		return r, nil
	case d.master == NoMaster && gs.master == NoMaster:
		r := s.describe(c.Group, gs)
		r.Note = d.why + ": still no master"
		return r, nil
	case d.master == NoMaster:
		old := gs.master
		gs.master = NoMaster
		gs.masterEpoch++
		s.check(c.Group, gs)
		r := s.describe(c.Group, gs)
		r.Changed, r.MasterChanged = true, true
		r.Note = fmt.Sprintf("master %d is dead and %s: no master, writes stop", old, d.why)
		return r, nil
	}
	old := gs.master
	if gs.taken || gs.formerSet == nil {
		gs.formerSet = map[int64]bool{}
	}
	for id := range gs.syncSet {
		gs.formerSet[id] = true
	}
	gs.taken = false
	gs.master = d.master
	gs.masterEpoch++
	gs.syncSet = map[int64]bool{d.master: true}
	gs.syncSetEpoch++
	if d.unclean {
		gs.acked = c.Positions[d.master].End
		gs.uncleanEpoch = gs.masterEpoch
	}
	s.check(c.Group, gs)
	r := s.describe(c.Group, gs)
	r.Changed, r.MasterChanged, r.Unclean = true, true, d.unclean
	if old == NoMaster {
		r.Note = fmt.Sprintf("broker %d elected", d.master)
	} else {
		r.Note = fmt.Sprintf("master %d is dead: broker %d elected", old, d.master)
	}
	if p, ok := c.Positions[d.master]; ok {
		r.Note += " at " + p.String()
	}
	if d.unclean {
		r.Note += " (unclean election: " + d.why + "; acknowledged messages may be lost)"
	}
	return r, nil
}

// decision is what the election rule makes of a command: the old master
// stays, a new master (unclean or not), or none (why says why).
type decision struct {
	stays   bool
	master  int64
	unclean bool
	why     string
	// behind: the best candidate lacks acknowledged messages (an unclean
	// election could still elect it).
	behind bool
	// verifying: candidates are still verifying their logs after a
	// restart; the election waits for them.
	verifying bool
}

// decide applies the election rule to c without changing anything. Pure:
// Machine.Tick uses it to hold back commands that would change nothing.
func (s *State) decide(gs *groupState, c ElectMaster) decision {
	alive := make(map[int64]bool, len(c.Alive))
	for _, id := range c.Alive {
		alive[id] = true
	}
	if gs.master != NoMaster && alive[gs.master] {
		return decision{stays: true, master: gs.master}
	}
	rank := func(inSet bool) []int64 {
		var ids []int64
		for _, id := range c.Alive {
			if _, ok := gs.replicas[id]; ok && (!inSet || gs.electable(id)) {
				ids = append(ids, id)
			}
		}
		slices.SortFunc(ids, func(a, b int64) int {
			if d := c.Positions[b].Compare(c.Positions[a]); d != 0 {
				return d
			}
			return cmpInt(a < b)
		})
		return ids
	}
	acked := gs.acked
	unclean := s.cfg.UncleanElection || c.Unclean
	inSync := rank(true)
	// Damaged members are no candidates; a member still verifying its
	// log is none yet, and while one ranks above every verified member
	// the election waits for it (it may hold the most).
	var damaged, verifying []int64
	inSync = slices.DeleteFunc(inSync, func(id int64) bool {
		switch p := c.Positions[id]; {
		case p.Damaged > 0:
			damaged = append(damaged, id)
		case p.Unverified > 0:
			verifying = append(verifying, id)
		default:
			return false
		}
		return true
	})
	var why string
	switch {
	case len(verifying) > 0 && (len(inSync) == 0 || c.Positions[verifying[0]].Compare(c.Positions[inSync[0]]) > 0):
		why = fmt.Sprintf("the most up-to-date alive replicas of the sync-state set are still verifying their logs after a restart (%s)", formatIDs(verifying))
		if !c.Unclean { // only the operator's word skips the wait
			return decision{master: NoMaster, why: why, verifying: true}
		}
	case len(inSync) == 0 && len(damaged) > 0:
		why = fmt.Sprintf("every alive replica of the sync-state set has damaged records not yet repaired (%s)", formatIDs(damaged))
	case len(inSync) == 0:
		why = "no replica of the sync-state set is alive"
	case c.Positions[inSync[0]].End < acked:
		best := inSync[0]
		why = fmt.Sprintf("every alive replica of the sync-state set lacks acknowledged messages (best: broker %d at %s, acknowledged up to %d)",
			best, c.Positions[best], acked)
	default:
		return decision{master: inSync[0]}
	}
	if unclean {
		if all := rank(false); len(all) > 0 {
			return decision{master: all[0], unclean: true, why: why}
		}
	}
	return decision{master: NoMaster, why: why, behind: len(inSync) > 0 || len(damaged) > 0}
}

// check asserts what must never be (STYLE point 17). A failure is a bug in
// this package, never bad input: it panics.
func (s *State) check(g Group, gs *groupState) {
	if gs.master != NoMaster {
		if _, ok := gs.replicas[gs.master]; !ok {
			panic(fmt.Sprintf("controller: %s: master %d is not registered", g, gs.master))
		}
		if !gs.syncSet[gs.master] {
			panic(fmt.Sprintf("controller: %s: master %d is not in the sync-state set %v", g, gs.master, sortedIDs(gs.syncSet)))
		}
		if gs.masterEpoch < 1 {
			panic(fmt.Sprintf("controller: %s: master %d at epoch %d", g, gs.master, gs.masterEpoch))
		}
	}
	for id := range gs.syncSet {
		if _, ok := gs.replicas[id]; !ok {
			panic(fmt.Sprintf("controller: %s: sync-state member %d is not registered", g, id))
		}
	}
	for id := range gs.formerSet {
		if _, ok := gs.replicas[id]; !ok {
			panic(fmt.Sprintf("controller: %s: former sync-state member %d is not registered", g, id))
		}
	}
}
