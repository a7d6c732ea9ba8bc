package controller

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// Errors of the replicated commands. Each comes wrapped with the details.
var (
	ErrUnknownGroup   = errors.New("controller: unknown broker group")
	ErrUnknownBroker  = errors.New("controller: unknown broker id")
	ErrBadCommand     = errors.New("controller: bad command")
	ErrNotMaster      = errors.New("controller: not the master")
	ErrFenced         = errors.New("controller: stale master epoch (fenced)")
	ErrStaleSyncEpoch = errors.New("controller: stale sync-state set epoch")
	ErrStaleElection  = errors.New("controller: election made for an older epoch")
)

// groupState is the replicated state of one broker group.
type groupState struct {
	replicas     map[int64]string // broker id → address
	master       int64            // NoMaster when none
	masterEpoch  int64            // 0 until the first master; +1 at every master change
	syncSet      map[int64]bool
	syncSetEpoch int64 // +1 at every change of syncSet
	// acked is the highest Confirmed a master of the group renewed its
	// lease with (at the group's epoch): the group acknowledged every
	// byte below it, so no replica whose log ends below it is elected
	// cleanly. Dropped to the new master's log end by an unclean election.
	acked int64
	// uncleanEpoch is the master epoch of the last unclean decision (an
	// unclean election, or the operator's Unclean while the master
	// stays), 0 for none: a replica may cut bytes its group acknowledged
	// only when they belong to a lineage older than it (their epoch below
	// uncleanEpoch); otherwise it refuses to follow and keeps them.
	uncleanEpoch int64
	// taken: the master took up its role (it renewed its lease at its
	// epoch, or changed the set). Until then it has taken no writes, so
	// the members of formerSet (the sync-state sets before the elections
	// that named masters which never took up the role) still hold every
	// acknowledged message and stay electable: a master elected dead, or
	// unable to serve, does not leave the group with no electable replica.
	taken     bool
	formerSet map[int64]bool
}

// electable: id may be elected cleanly (see groupState.taken).
func (gs *groupState) electable(id int64) bool {
	return gs.syncSet[id] || (!gs.taken && gs.formerSet[id])
}

// electableIDs lists, sorted, the ids that may be elected cleanly.
func (gs *groupState) electableIDs() []int64 {
	var ids []int64
	for id := range gs.replicas {
		if gs.electable(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// State is the replicated part of the controller: what Raft will replicate
// by applying the same RegisterBroker, AlterSyncStateSet and ElectMaster
// commands in the same order on every controller replica. It reads no clock
// and keeps no liveness. Not safe for concurrent use.
type State struct {
	cfg    Config
	groups map[Group]*groupState
}

// NewState returns an empty state; cfg must be valid after EnsureDefaults.
func NewState(cfg Config) (*State, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &State{cfg: cfg, groups: map[Group]*groupState{}}, nil
}

// Groups lists the known groups in a stable order.
func (s *State) Groups() []Group {
	gs := slices.Collect(maps.Keys(s.groups))
	slices.SortFunc(gs, func(a, b Group) int {
		if a.Cluster != b.Cluster {
			return compareStrings(a.Cluster, b.Cluster)
		}
		return compareStrings(a.Broker, b.Broker)
	})
	return gs
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Show describes group g as a Result with nothing changed.
func (s *State) Show(g Group) (Result, error) {
	gs, ok := s.groups[g]
	if !ok {
		return Result{Group: g, MasterID: NoMaster}, fmt.Errorf("%w %s", ErrUnknownGroup, g)
	}
	return s.describe(g, gs), nil
}

// Replicas returns group g's replicas (id → address), a copy.
func (s *State) Replicas(g Group) map[int64]string {
	if gs, ok := s.groups[g]; ok {
		return maps.Clone(gs.replicas)
	}
	return nil
}

func (s *State) describe(g Group, gs *groupState) Result {
	r := Result{Group: g, MasterID: gs.master, MasterEpoch: gs.masterEpoch,
		SyncSet: sortedIDs(gs.syncSet), SyncSetEpoch: gs.syncSetEpoch, UncleanEpoch: gs.uncleanEpoch}
	if gs.master != NoMaster {
		r.MasterAddr = gs.replicas[gs.master]
	}
	return r
}

func sortedIDs(set map[int64]bool) []int64 {
	ids := slices.Collect(maps.Keys(set))
	slices.Sort(ids)
	return ids
}

// roleOf tells broker id what it must be and whether it is fenced, given the
// epoch it reported.
func (gs *groupState) roleOf(r *Result, id, epoch int64) {
	switch {
	case gs.master == NoMaster:
		r.Role = RoleNone
	case gs.master == id:
		r.Role = RoleMaster
	default:
		r.Role = RoleSlave
	}
	// The master itself, reporting an older epoch, is not fenced: it begins
	// the group's epoch (Role master, MasterEpoch).
	if epoch < gs.masterEpoch && epoch > 0 && gs.master != id {
		r.Fenced = true
		r.Note = fmt.Sprintf("broker %d reported epoch %d < %d: fenced; %s", id, epoch, gs.masterEpoch, followNote(gs))
	}
}

func followNote(gs *groupState) string {
	if gs.master == NoMaster {
		return fmt.Sprintf("no master at epoch %d: take no writes", gs.masterEpoch)
	}
	return fmt.Sprintf("follow master %d at epoch %d", gs.master, gs.masterEpoch)
}

// Apply applies a replicated command. A refused command changes nothing and
// returns an error (wrapping one of the Err values) and, where the group is
// known, a Result describing it (Fenced set when the sender is fenced).
func (s *State) Apply(cmd Command) (Result, error) {
	var (
		r   Result
		err error
	)
	switch c := cmd.(type) {
	case RegisterBroker:
		r, err = s.register(c)
	case AlterSyncStateSet:
		r, err = s.alter(c)
	case ElectMaster:
		r, err = s.elect(c)
	case Heartbeat:
		return Result{Group: c.Group, MasterID: NoMaster}, fmt.Errorf("%w: a heartbeat is not replicated; give it to Machine.Apply", ErrBadCommand)
	default:
		return Result{MasterID: NoMaster}, fmt.Errorf("%w: unknown command %T", ErrBadCommand, cmd)
	}
	return r, err
}

func (s *State) register(c RegisterBroker) (Result, error) {
	if err := c.Group.validate(); err != nil {
		return Result{Group: c.Group, MasterID: NoMaster}, fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	if c.ID < 0 || c.Addr == "" || c.Epoch < 0 || c.Epoch == math.MaxInt64 {
		return Result{Group: c.Group, MasterID: NoMaster}, fmt.Errorf("%w: register %s id=%d addr=%q epoch=%d: id >= 0, 0 <= epoch < MaxInt64 and addr set",
			ErrBadCommand, c.Group, c.ID, c.Addr, c.Epoch)
	}
	gs, ok := s.groups[c.Group]
	if ok && c.Epoch > gs.masterEpoch {
		r := s.describe(c.Group, gs)
		return r, fmt.Errorf("%w: register %s id=%d reports epoch %d above the group's %d", ErrBadCommand, c.Group, c.ID, c.Epoch, gs.masterEpoch)
	}
	if !ok {
		gs = &groupState{replicas: map[int64]string{}, master: NoMaster, syncSet: map[int64]bool{}}
		s.groups[c.Group] = gs
	}
	var r Result
	old, known := gs.replicas[c.ID]
	if !known || old != c.Addr {
		gs.replicas[c.ID] = c.Addr
		r.Changed = true
	}
	// Only a group that never had a master takes its first replica as
	// master. A group left without one by a failed election waits for
	// ElectMaster: a fresh replica may lack acknowledged messages.
	// Its epoch is one above any the broker reports, so that the epochs in
	// the broker's epoch file (ha) never go back, e.g. after replication
	// without a controller.
	restarted := false
	switch {
	case gs.masterEpoch == 0 && gs.master == NoMaster:
		gs.master = c.ID
		gs.masterEpoch = c.Epoch + 1
		gs.syncSet = map[int64]bool{c.ID: true}
		gs.syncSetEpoch++
		r.Changed, r.MasterChanged = true, true
	case known && gs.master == c.ID:
		// The master restarted (a broker registers at every start): it
		// may have lost an unsynced tail that a slave holds, so it is
		// master no longer; the next election ranks it with the others.
		// The epoch rises as for a dead master, and the set is kept.
		gs.master = NoMaster
		gs.masterEpoch++
		r.Changed, r.MasterChanged, restarted = true, true, true
	}
	s.check(c.Group, gs)
	out := s.describe(c.Group, gs)
	out.Changed, out.MasterChanged = r.Changed, r.MasterChanged
	switch {
	case restarted:
		out.Note = fmt.Sprintf("master %d registered again (restarted): no master until the next election ranks the replicas", c.ID)
	case known && old != c.Addr:
		out.Note = fmt.Sprintf("broker %d moved from %s to %s", c.ID, old, c.Addr)
	}
	gs.roleOf(&out, c.ID, c.Epoch)
	return out, nil
}

// renew applies a master's replicated heartbeat (its lease renewal) to the
// state: the Confirmed it reports at the group's epoch raises acked.
// Machine calls it for a heartbeat from the group's master; every
// controller replica applies the same renewals in the same order.
func (s *State) renew(c Heartbeat) {
	gs, ok := s.groups[c.Group]
	if !ok || gs.master != c.ID || c.Epoch != gs.masterEpoch || c.MasterFailed != "" {
		return
	}
	gs.taken = true
	gs.acked = max(gs.acked, c.Pos.Confirmed)
}

func (s *State) alter(c AlterSyncStateSet) (Result, error) {
	gs, ok := s.groups[c.Group]
	if !ok {
		return Result{Group: c.Group, MasterID: NoMaster}, fmt.Errorf("%w %s", ErrUnknownGroup, c.Group)
	}
	r := s.describe(c.Group, gs)
	if _, ok := gs.replicas[c.From]; !ok {
		return r, fmt.Errorf("%w: alter %s from broker %d", ErrUnknownBroker, c.Group, c.From)
	}
	if c.MasterEpoch < gs.masterEpoch {
		gs.roleOf(&r, c.From, c.MasterEpoch)
		r.Fenced = true
		if r.Note == "" {
			r.Note = followNote(gs)
		}
		return r, fmt.Errorf("%w: alter %s from broker %d at epoch %d, current epoch %d", ErrFenced, c.Group, c.From, c.MasterEpoch, gs.masterEpoch)
	}
	if c.MasterEpoch > gs.masterEpoch {
		return r, fmt.Errorf("%w: alter %s from broker %d at epoch %d above the group's %d", ErrBadCommand, c.Group, c.From, c.MasterEpoch, gs.masterEpoch)
	}
	if c.From != gs.master {
		gs.roleOf(&r, c.From, c.MasterEpoch)
		r.Fenced = true
		r.Note = fmt.Sprintf("broker %d is not the master; %s", c.From, followNote(gs))
		return r, fmt.Errorf("%w: alter %s from broker %d, master is %d", ErrNotMaster, c.Group, c.From, gs.master)
	}
	r.Role = RoleMaster
	if c.SyncSetEpoch != gs.syncSetEpoch {
		return r, fmt.Errorf("%w: alter %s with set epoch %d, current %d", ErrStaleSyncEpoch, c.Group, c.SyncSetEpoch, gs.syncSetEpoch)
	}
	next := map[int64]bool{}
	for _, id := range c.NewSet {
		if _, ok := gs.replicas[id]; !ok {
			return r, fmt.Errorf("%w: alter %s: broker %d in the new set is not registered", ErrUnknownBroker, c.Group, id)
		}
		if next[id] {
			return r, fmt.Errorf("%w: alter %s: broker %d twice in the new set", ErrBadCommand, c.Group, id)
		}
		next[id] = true
	}
	if !next[gs.master] {
		return r, fmt.Errorf("%w: alter %s: the new set %s must contain the master %d", ErrBadCommand, c.Group, formatIDs(c.NewSet), gs.master)
	}
	if maps.Equal(next, gs.syncSet) {
		r.Note = "same set: nothing changed"
		return r, nil
	}
	gs.syncSet = next
	gs.syncSetEpoch++
	gs.taken = true
	s.check(c.Group, gs)
	out := s.describe(c.Group, gs)
	out.Changed, out.Role = true, RoleMaster
	return out, nil
}
