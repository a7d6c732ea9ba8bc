package controller

import (
	"fmt"
	"strings"
	"time"
)

// NoMaster is the master id of a group without a master.
const NoMaster int64 = -1

// Group names a broker group: the replicas of one broker name in a cluster.
type Group struct {
	Cluster string
	Broker  string
}

func (g Group) String() string { return g.Cluster + "/" + g.Broker }

func (g Group) validate() error {
	if g.Cluster == "" || g.Broker == "" {
		return fmt.Errorf("controller: group %q: cluster and broker name must not be empty", g.String())
	}
	return nil
}

// Command is one input of the machine: RegisterBroker, Heartbeat,
// AlterSyncStateSet or ElectMaster.
type Command interface{ command() }

// RegisterBroker adds replica ID (address Addr) to Group, or, for a known ID,
// updates its address: a broker registers at every start. Epoch is the
// highest master epoch the broker has seen (0 for a new broker); an older
// epoch than the group's gets a Fenced result. Replicated.
type RegisterBroker struct {
	Group Group
	ID    int64
	Addr  string
	Epoch int64
	// FenceTimeout is how long the broker, as master, keeps taking writes
	// with no heartbeat answered (its controllerHeartBeatTimeoutMills; 0:
	// not said, from an older broker). A controller replica refuses a
	// broker whose FenceTimeout exceeds its election timeout: that master
	// could still take writes when another is elected. Not used by the
	// State.
	FenceTimeout time.Duration `json:",omitempty"`
	// Pos is where the broker's log stands as it starts: the election
	// ranks replicas by it (a restarted replica may have lost an unsynced
	// tail).
	Pos Position `json:",omitempty"`
}

// Heartbeat says replica ID is alive. Epoch is the master epoch it works
// under. Not replicated: liveness is each controller replica's own
// observation (see the package doc).
type Heartbeat struct {
	Group Group
	ID    int64
	Epoch int64
	// Pos is where the broker's log stands now (see Position).
	Pos Position `json:",omitempty"`
	// MasterFailed, from a broker the controller named master: why it
	// could not take up the role (its replication port would not bind,
	// its store would not open). Such a heartbeat renews no lease: the
	// group elects another master once the election timeout passes, and
	// the broker is not electable for one election timeout after it.
	MasterFailed string `json:",omitempty"`
}

// AlterSyncStateSet is the master's request to shrink or expand the
// sync-state set. Only the current master (From) under the current
// MasterEpoch and SyncSetEpoch may change it. Replicated.
type AlterSyncStateSet struct {
	Group        Group
	From         int64
	MasterEpoch  int64
	NewSet       []int64
	SyncSetEpoch int64
}

// ElectMaster elects a master for Group from the replicas in Alive. Alive is
// filled by Machine.Elect or Machine.Tick from the local liveness table at
// one instant, so applying the command decides the same on every replica:
// no clock is read while it is applied. MasterEpoch is the group's epoch
// when the command was made; applied at any other epoch (another election
// got in first) it is refused with ErrStaleElection. Replicated.
type ElectMaster struct {
	Group       Group
	Alive       []int64
	MasterEpoch int64
	// Positions are the alive replicas' last reported positions, as the
	// leader knew them when it made the command.
	Positions map[int64]Position `json:",omitempty"`
	// Unclean: the operator's explicit choice (samsa controller elect
	// --unclean) to elect the most up-to-date alive replica even when it
	// lacks acknowledged messages or is outside the sync-state set.
	Unclean bool `json:",omitempty"`
	// At is the instant Alive was computed; informational only.
	At time.Time
}

func (RegisterBroker) command()    {}
func (Heartbeat) command()         {}
func (AlterSyncStateSet) command() {}
func (ElectMaster) command()       {}

// Position is where a replica's CommitLog stands, as the replica reports
// it. Elections rank replicas by (Epoch, End), Raft's "most up-to-date
// log": a later epoch wins, then a longer log.
type Position struct {
	// Epoch is the replication epoch of the log's last entry (the master
	// term that wrote its tail; 0 for a log with no epoch history).
	Epoch uint64 `json:",omitempty"`
	// End is where the log ends (its written offset).
	End int64 `json:",omitempty"`
	// Confirmed, from a master: the offset every member of its sync-state
	// set holds (the lowest acknowledgement among them, its own log end
	// when it is alone): what the group acknowledged as replicated. The
	// master's heartbeat is replicated, so the controller keeps the
	// highest (State: acked) and elects no replica whose log ends below
	// it. 0 from a slave.
	Confirmed int64 `json:",omitempty"`
	// Damaged counts the ranges of the log the replica knows bad (a read
	// or its scrubber found them) and has not yet repaired from a peer: it
	// may lack acknowledged messages there, so it is not elected cleanly.
	Damaged int `json:",omitempty"`
	// Unverified counts the bytes of the log the replica has not yet read
	// back since it restarted (storage's startup verification of what was
	// written since its last verified point): damage there is not known
	// yet, so it is not elected cleanly until the count is 0.
	Unverified int64 `json:",omitempty"`
}

// Compare orders positions by (Epoch, End): -1 when p is behind q, +1
// when ahead, 0 when level.
func (p Position) Compare(q Position) int {
	switch {
	case p.Epoch != q.Epoch:
		return cmpInt(p.Epoch < q.Epoch)
	case p.End != q.End:
		return cmpInt(p.End < q.End)
	}
	return 0
}

func cmpInt(less bool) int {
	if less {
		return -1
	}
	return 1
}

func (p Position) String() string {
	var flags []string
	if p.Damaged > 0 {
		flags = append(flags, fmt.Sprintf("damaged:%d", p.Damaged))
	}
	if p.Unverified > 0 {
		flags = append(flags, fmt.Sprintf("unverified:%d", p.Unverified))
	}
	if len(flags) > 0 {
		return fmt.Sprintf("%d@%d(%s)", p.End, p.Epoch, strings.Join(flags, ","))
	}
	return fmt.Sprintf("%d@%d", p.End, p.Epoch)
}
