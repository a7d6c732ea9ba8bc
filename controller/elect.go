package controller

import (
	"fmt"
	"slices"
)

// The election rule, applied to ElectMaster.Alive (the replicas alive when
// the command was made):
//
//  1. The old master, if it is alive (and so in the sync-state set, which
//     always holds it), stays: nothing changes.
//  2. Otherwise the alive member of the sync-state set with the lowest
//     broker id becomes master: the epoch rises by one and the sync-state
//     set becomes {new master} (its epoch rises too); the master grows it
//     again with AlterSyncStateSet as slaves catch up.
//  3. No alive member: with Config.UncleanElection, the alive registered
//     replica with the lowest id becomes master as in 2 and the result
//     carries Unclean. Without it the group has no master: if it had one,
//     the epoch rises (fencing the old master should it return) and the
//     sync-state set is kept, so a member that comes back can be elected.
//
// RocketMQ's DefaultElectPolicy also ranks candidates by (epoch, max offset,
// election priority); every member of the sync-state set has every
// acknowledged message, so the lowest id is as safe and is deterministic.
func (s *State) elect(c ElectMaster) (Result, error) {
	gs, ok := s.groups[c.Group]
	if !ok {
		return Result{Group: c.Group, MasterID: NoMaster}, fmt.Errorf("%w %s", ErrUnknownGroup, c.Group)
	}
	if c.MasterEpoch != gs.masterEpoch {
		return s.describe(c.Group, gs), fmt.Errorf("%w: elect %s made at epoch %d, the group is at %d: nothing changed",
			ErrStaleElection, c.Group, c.MasterEpoch, gs.masterEpoch)
	}
	alive := map[int64]bool{}
	for _, id := range c.Alive {
		if _, ok := gs.replicas[id]; !ok {
			return s.describe(c.Group, gs), fmt.Errorf("%w: elect %s: alive broker %d is not registered", ErrUnknownBroker, c.Group, id)
		}
		alive[id] = true
	}
	if gs.master != NoMaster && alive[gs.master] {
		r := s.describe(c.Group, gs)
		r.Note = fmt.Sprintf("master %d is alive: nothing changed", gs.master)
		return r, nil
	}
	candidates := func(set map[int64]bool) []int64 {
		var ids []int64
		for id := range set {
			if alive[id] {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	inSync := candidates(gs.syncSet)
	unclean := false
	if len(inSync) == 0 && s.cfg.UncleanElection {
		all := map[int64]bool{}
		for id := range gs.replicas {
			all[id] = true
		}
		inSync = candidates(all)
		unclean = len(inSync) > 0
	}
	if len(inSync) == 0 {
		if gs.master == NoMaster {
			r := s.describe(c.Group, gs)
			r.Note = "no alive replica in the sync-state set: still no master"
			return r, nil
		}
		old := gs.master
		gs.master = NoMaster
		gs.masterEpoch++
		s.check(c.Group, gs)
		r := s.describe(c.Group, gs)
		r.Changed, r.MasterChanged = true, true
		r.Note = fmt.Sprintf("master %d is dead and no replica of the sync-state set is alive: no master, writes stop", old)
		return r, nil
	}
	newMaster := inSync[0]
	old := gs.master
	gs.master = newMaster
	gs.masterEpoch++
	gs.syncSet = map[int64]bool{newMaster: true}
	gs.syncSetEpoch++
	s.check(c.Group, gs)
	r := s.describe(c.Group, gs)
	r.Changed, r.MasterChanged, r.Unclean = true, true, unclean
	if old == NoMaster {
		r.Note = fmt.Sprintf("broker %d elected", newMaster)
	} else {
		r.Note = fmt.Sprintf("master %d is dead: broker %d elected", old, newMaster)
	}
	if unclean {
		r.Note += " outside the sync-state set (unclean election: acknowledged messages may be lost)"
	}
	return r, nil
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
}
