package controller

import (
	"fmt"
	"slices"
	"time"
)

// Machine is one controller replica: the replicated State plus this
// replica's Liveness. The caller passes the time to every call; Machine
// reads no clock and starts no goroutine. Not safe for concurrent use: the
// caller serialises calls (the Raft FSM applies one entry at a time).
type Machine struct {
	cfg   Config
	state *State
	live  Liveness
	// leading is when this replica last began to lead (Lead); zero in a
	// machine that is not told (tests, a lone machine).
	leading time.Time
	// pending: why Tick last left a group without a master (Pending).
	pending map[Group]string
}

// New returns an empty machine.
func New(cfg Config) (*Machine, error) {
	cfg.EnsureDefaults()
	st, err := NewState(cfg)
	if err != nil {
		return nil, err
	}
	return &Machine{cfg: cfg, state: st, live: newLiveness(), pending: map[Group]string{}}, nil
}

// Config returns the configuration in force.
func (m *Machine) Config() Config { return m.cfg }

// State returns the replicated part.
func (m *Machine) State() *State { return m.state }

// Liveness returns the local, non-replicated part.
func (m *Machine) Liveness() *Liveness { return &m.live }

// Apply applies cmd at now. Heartbeat updates only the local liveness;
// RegisterBroker goes to the State and, accepted, counts as a heartbeat at
// now; an ElectMaster that names a new master counts as a heartbeat of that
// master at now (a master's lease is never older than the entry that made
// it master); AlterSyncStateSet and ElectMaster otherwise go to the State
// alone, which reads no time.
func (m *Machine) Apply(cmd Command, now time.Time) (Result, error) {
	switch c := cmd.(type) {
	case Heartbeat:
		return m.heartbeat(c, now)
	case RegisterBroker:
		r, err := m.state.Apply(c)
		if err == nil {
			m.live.beat(c.Group, c.ID, now)
			m.live.report(c.Group, c.ID, c.Pos)
			m.live.restarted(c.Group, c.ID, now)
			if r.MasterChanged && r.MasterID == c.ID {
				m.live.heardMaster(c.Group, now)
			}
		}
		return r, err
	case ElectMaster:
		r, err := m.state.Apply(c)
		if err == nil && r.MasterChanged && r.MasterID != NoMaster {
			m.live.beat(c.Group, r.MasterID, now)
			m.live.heardMaster(c.Group, now)
		}
		if err == nil && r.MasterID != NoMaster {
			delete(m.pending, c.Group)
		}
		return r, err
	}
	return m.state.Apply(cmd)
}

// NamesMaster reports whether the answer to c would name its sender
// master: such a heartbeat renews the master's lease, and a replicated
// controller answers it only once it is committed (package raftctl).
func (m *Machine) NamesMaster(c Heartbeat) bool {
	gs, ok := m.state.groups[c.Group]
	return ok && gs.master != NoMaster && gs.master == c.ID && c.MasterFailed == ""
}

// Lead tells the machine that this replica leads from now on, every entry
// of earlier terms applied. A master it holds no record of (none can be
// missing when every renewal is applied here, but a record is never
// invented older than now) counts as heard at now. For one
// ElectionTimeout after now, Tick elects for a group whose master is
// silent only once a replica it may elect has been heard: the slaves'
// heartbeats went to the old leader, and electing before they reach this
// one would find none alive and leave the group without a master.
func (m *Machine) Lead(now time.Time) {
	m.leading = now
	for g, gs := range m.state.groups {
		if gs.master != NoMaster {
			m.live.heardOnce(g, gs.master, now)
		}
		if _, ok := m.live.masterHeard[g]; !ok {
			m.live.heardMaster(g, now)
		}
	}
}

// Restored tells the machine its State was replaced (a snapshot installed)
// at now: every master counts as heard at now, since the renewals that the
// snapshot's entries held were applied elsewhere.
func (m *Machine) Restored(now time.Time) {
	for g, gs := range m.state.groups {
		if gs.master != NoMaster {
			m.live.beat(g, gs.master, now)
		}
		m.live.heardMaster(g, now)
	}
}

func (m *Machine) heartbeat(c Heartbeat, now time.Time) (Result, error) {
	gs, ok := m.state.groups[c.Group]
	if !ok {
		return Result{Group: c.Group, MasterID: NoMaster}, fmt.Errorf("%w %s: register first", ErrUnknownGroup, c.Group)
	}
	r := m.state.describe(c.Group, gs)
	if _, ok := gs.replicas[c.ID]; !ok {
		return r, fmt.Errorf("%w: heartbeat %s from broker %d: register first", ErrUnknownBroker, c.Group, c.ID)
	}
	if c.Epoch < 0 || c.Epoch > gs.masterEpoch {
		return r, fmt.Errorf("%w: heartbeat %s from broker %d reports epoch %d, the group's is %d", ErrBadCommand, c.Group, c.ID, c.Epoch, gs.masterEpoch)
	}
	m.live.report(c.Group, c.ID, c.Pos)
	switch {
	case gs.master == c.ID && c.MasterFailed != "":
		// Named master but it could not take up the role: no lease, and
		// not electable for a while (Machine.Elect).
		setIn(m.live.unable, c.Group, c.ID, now)
	case gs.master == c.ID:
		delete(m.live.unable[c.Group], c.ID) // it took up the role after all
		m.live.beat(c.Group, c.ID, now)
		m.live.heardMaster(c.Group, now)
		m.state.renew(c)
	default:
		m.live.beat(c.Group, c.ID, now)
	}
	gs.roleOf(&r, c.ID, c.Epoch)
	if gs.master != NoMaster && gs.master != c.ID {
		r.MasterSilent = -1
		if t, ok := m.live.LastHeartbeat(c.Group, gs.master); ok {
			r.MasterSilent = max(now.Sub(t), 0)
		}
	}
	return r, nil
}

// Alive reports whether broker id of g sent a heartbeat within the election
// timeout of now.
func (m *Machine) Alive(g Group, id int64, now time.Time) bool {
	return m.live.alive(g, id, now, m.cfg.ElectionTimeout)
}

// Elect makes the ElectMaster command for g at now: Alive lists, sorted, the
// registered replicas electable at now (see electable) and the master if
// it is serving, Positions where they reported their logs stood. Applying it is what Raft replicates.
func (m *Machine) Elect(g Group, now time.Time) ElectMaster {
	c := ElectMaster{Group: g, At: now}
	gs, ok := m.state.groups[g]
	if !ok {
		return c
	}
	c.MasterEpoch = gs.masterEpoch
	for id := range gs.replicas {
		if m.electable(g, id, now) || id == gs.master && m.serving(g, id, now) {
			c.Alive = append(c.Alive, id)
			if p := m.live.Position(g, id); p != (Position{}) {
				if c.Positions == nil {
					c.Positions = map[int64]Position{}
				}
				c.Positions[id] = p
			}
		}
	}
	slices.Sort(c.Alive)
	return c
}

// serving: id is alive at now (heard within the election timeout) and has
// not said, within it, that it could not take up the master role. A
// master that is serving stays.
func (m *Machine) serving(g Group, id int64, now time.Time) bool {
	if t, ok := m.live.unable[g][id]; ok && now.Sub(t) <= m.cfg.ElectionTimeout {
		return false
	}
	return m.Alive(g, id, now)
}

// electable: id may be a candidate at now: serving, and heard within half
// the election timeout. A replica killed with its master still looks
// alive for most of an election timeout after its last heartbeat, and
// electing it leaves the group on a dead master; a live slave whose
// master is overdue heartbeats every controllerHeartBeatTimeoutMills/15
// (broker), far more often.
func (m *Machine) electable(g Group, id int64, now time.Time) bool {
	t, ok := m.live.LastHeartbeat(g, id)
	return ok && now.Sub(t) <= m.cfg.ElectionTimeout/2 && m.serving(g, id, now)
}

// Tick returns, in group order, an ElectMaster command for every group that
// needs one at now: its master's last heartbeat is older than the election
// timeout, or it has lost its master and an electable replica (in the
// sync-state set, or any with UncleanElection) is alive again. Within one
// election timeout of Lead, a group with a silent master waits until an
// electable replica is alive. It holds a command back (and says why in
// Pending) while it would change nothing, and for up to
// Config.RecoveryWait while the group is restarting (see recovering): the
// group went down whole, and the member that holds the most may be the
// last to return. The caller applies (or proposes) them.
func (m *Machine) Tick(now time.Time) []ElectMaster {
	var out []ElectMaster
	settling := now.Sub(m.leading) < m.cfg.ElectionTimeout
	for _, g := range m.state.Groups() {
		gs := m.state.groups[g]
		need := false
		switch {
		case gs.master != NoMaster:
			need = !m.serving(g, gs.master, now) && (!settling || m.electableAlive(g, gs, now))
		case gs.masterEpoch > 0:
			need = m.electableAlive(g, gs, now)
		}
		if !need {
			delete(m.pending, g)
			continue
		}
		c := m.Elect(g, now)
		d := m.state.decide(gs, c)
		if until, missing, ok := m.recovering(g, gs, c, now); ok && !d.stays {
			m.pending[g] = fmt.Sprintf("waiting until %s for sync-state members %s to come back: the group restarted since its master was last heard, "+
				"and every member back restarted too (any may have lost an unsynced tail)", until.UTC().Format(time.RFC3339Nano), formatIDs(missing))
			continue
		}
		delete(m.pending, g)
		switch {
		case d.master == NoMaster && d.verifying:
			m.pending[g] = d.why + ": the election waits for them"
		case d.master == NoMaster && d.behind:
			m.pending[g] = d.why + "; only an unclean election (samsa controller elect --unclean) can elect one now"
		}
		if d.master == NoMaster && gs.master == NoMaster {
			continue // would change nothing
		}
		out = append(out, c)
	}
	return out
}

// recovering reports whether the election c for g must wait for more of
// the sync-state set (see Tick), with until when and whom it waits for.
// A group is recovering from the first registration (a restart) of any of
// its replicas since its master was last heard; from then on a member
// counts as back only once heard since that restart (a process killed a
// moment ago still looks alive, with its old position), and the election
// waits, up to Config.RecoveryWait from that first restart, while some
// member is not back and every member that is restarted too. A member up
// all along holds everything the group acknowledged: no wait.
func (m *Machine) recovering(g Group, gs *groupState, c ElectMaster, now time.Time) (until time.Time, missing []int64, wait bool) {
	heard := m.live.masterHeard[g]
	var first time.Time // the first restart since the master was heard
	for _, at := range m.live.registered[g] {
		if at.After(heard) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	if first.IsZero() {
		return time.Time{}, nil, false
	}
	alive := map[int64]bool{}
	for _, id := range c.Alive {
		alive[id] = true
	}
	for _, id := range gs.electableIDs() {
		last, ok := m.live.LastHeartbeat(g, id)
		if !alive[id] || !ok || last.Before(first) {
			missing = append(missing, id)
			continue
		}
		if at := m.live.registered[g][id]; !at.After(heard) {
			return time.Time{}, nil, false // up since the master was heard: holds all it acknowledged
		}
	}
	if len(missing) == 0 {
		return time.Time{}, nil, false
	}
	until = first.Add(m.cfg.RecoveryWait)
	return until, missing, now.Before(until)
}

// Pending says why Tick left group g without a master at its last call
// ("" when it did not): it waits for members to return, or only an
// unclean election could elect one. Local to this replica, like liveness.
func (m *Machine) Pending(g Group) string { return m.pending[g] }

// electableAlive: a replica of g that an election may pick (in the
// sync-state set, or any with UncleanElection), other than the master, is
// alive at now.
func (m *Machine) electableAlive(g Group, gs *groupState, now time.Time) bool {
	for id := range gs.replicas {
		if id != gs.master && (gs.electable(id) || m.cfg.UncleanElection) && m.electable(g, id, now) {
			return true
		}
	}
	return false
}
