package controller

import (
	"fmt"
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
}

// Heartbeat says replica ID is alive. Epoch is the master epoch it works
// under. Not replicated: liveness is each controller replica's own
// observation (see the package doc).
type Heartbeat struct {
	Group Group
	ID    int64
	Epoch int64
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
	// At is the instant Alive was computed; informational only.
	At time.Time
}

func (RegisterBroker) command()    {}
func (Heartbeat) command()         {}
func (AlterSyncStateSet) command() {}
func (ElectMaster) command()       {}
