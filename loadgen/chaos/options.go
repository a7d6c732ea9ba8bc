package chaos

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// The fault kinds Run injects, one per cycle, taken from Options.Faults in
// a seeded order.
const (
	KillMaster          = "kill-master"            // SIGKILL the master
	KillSlave           = "kill-slave"             // SIGKILL one slave (seeded)
	KillLeader          = "kill-controller-leader" // SIGKILL the controller's Raft leader
	KillMasterAndLeader = "kill-master-leader"     // both at once (apache/rocketmq#7689's scenario)
	PauseMaster         = "pause-master"           // SIGSTOP the master for 2 election timeouts, then SIGCONT
	PartitionMaster     = "partition-master"       // cut the master's controller links for 2 election timeouts
	// CrashGroup SIGKILLs every broker under load at once, cuts a seeded
	// slave's unsynced CommitLog tail as its power loss would (loseTail),
	// and restarts them, that slave first: the controller must elect a
	// replica that kept every acknowledged message, and no replica may cut
	// its good copy to match a damaged one.
	CrashGroup = "crash-group-tail-loss"
	// DamageSlave flips a byte of a seeded record in a seeded slave's
	// newest sealed segment (damage at rest), then SIGKILLs the master:
	// whichever replica is elected, no acknowledged message is lost and
	// nothing corrupt is served (a damaged record is fetched from a peer
	// replica that holds it intact: package broker/repair).
	DamageSlave = "damage-slave-kill-master"
)

// AllFaults lists every fault kind.
//
// PartitionMaster cuts the master's links to the controllers: each broker
// reaches each controller through a Partition of its own (its
// controllerAddr), and, since a controller that is not the Raft leader
// answers with the leader's advertised address and the broker's client
// follows it, the controllers advertise shared Partitions too, on which
// the cut holds the connections of the master's process (found through
// /proc: Linux only). The master's HA link is not cut: a broker
// advertises brokerIP1:haListenPort, with no separate advertised HA
// address to put a proxy behind, so its slaves keep their link until they
// follow the new master.
var AllFaults = []string{KillMaster, KillSlave, KillLeader, KillMasterAndLeader, PauseMaster, PartitionMaster, CrashGroup, DamageSlave}

// takesMaster says whether a fault takes the master away: its RTO is
// measured to the first acknowledgement by another broker. The others
// are judged by the longest gap between acknowledgements; CrashGroup's
// RTO runs to the first acknowledgement by any broker (they all restart).
func takesMaster(f string) bool {
	return f == KillMaster || f == KillMasterAndLeader || f == PauseMaster || f == PartitionMaster || f == DamageSlave
}

// Options configure Run. Zero values take the defaults named.
type Options struct {
	// Binary is the samsa executable run as controllers, name server and
	// brokers (required; the CLI passes itself, tests $SAMSA_BIN).
	Binary string
	// Dir is where the run's directory is made (default the temp dir).
	Dir string
	// KeepDir keeps the run's data after a successful run (it is always
	// kept after an error). The processes' logs (a few MB) are kept after
	// every run, so that a slow cycle can be read afterwards
	// (CycleResult.At dates each fault).
	KeepDir bool
	// Cycles is the number of faults injected (default 6).
	Cycles int
	// Faults are the kinds to draw from (default AllFaults): cycle i
	// takes Faults[i mod n] of a seeded shuffle of them.
	Faults []string
	// Seed seeds the fault order, the choice of slave and the up times
	// (0: from the clock; the result records it).
	Seed uint64
	// ElectionTimeout is the controller's (samsa controller
	// --election-timeout; default 3 s). The brokers'
	// controllerHeartBeatTimeoutMills is set to it.
	ElectionTimeout time.Duration
	// HeartbeatInterval is the brokers' brokerHeartbeatInterval (default
	// ElectionTimeout/3, at most 1 s).
	HeartbeatInterval time.Duration
	// RaftTimeout is the controllers' Raft heartbeat and election timeout
	// (samsa controller --raft-heartbeat-timeout and
	// --raft-election-timeout; 0: theirs, 500 ms): how soon a dead
	// controller leader is replaced.
	RaftTimeout time.Duration
	// SlaveNotCatchup is haMaxTimeSlaveNotCatchup (default 15 s, the
	// broker's): a SYNC_MASTER waits for every member of its sync-state
	// set, so a dead slave stalls sends until it is dropped.
	SlaveNotCatchup time.Duration
	// SendTimeout is each producer's SendTimeout (default 3 s, RocketMQ's
	// sendMsgTimeout): a send to a paused master waits this long before
	// the producer looks elsewhere, so it bounds the RTO of pause-master
	// from below.
	SendTimeout time.Duration
	// Producers is the number of producers, each sending one message at
	// a time (default 4); Queues the topic's queues (default 4);
	// BodySize a message's size (default 256).
	Producers, Queues, BodySize int
	// MinUp and MaxUp bound the seeded time the cluster runs under load
	// between a settled cluster and the next fault (default 1 s and 3 s).
	MinUp, MaxUp time.Duration
	// StartTimeout bounds the cluster's start (default 60 s);
	// RecoveryTimeout a fault's recovery and the cluster settling again
	// (default 60 s); ReadTimeout the final read-back (default 120 s).
	StartTimeout, RecoveryTimeout, ReadTimeout time.Duration
	// Progress receives one line per cycle (default io.Discard).
	Progress io.Writer
}

// EnsureDefaults fills the zero fields.
func (o *Options) EnsureDefaults() {
	o.Cycles = cmp.Or(o.Cycles, 6)
	if len(o.Faults) == 0 {
		o.Faults = slices.Clone(AllFaults)
	}
	o.ElectionTimeout = cmp.Or(o.ElectionTimeout, 3*time.Second)
	o.HeartbeatInterval = cmp.Or(o.HeartbeatInterval, min(o.ElectionTimeout/3, time.Second))
	o.SlaveNotCatchup, o.SendTimeout = cmp.Or(o.SlaveNotCatchup, 15*time.Second), cmp.Or(o.SendTimeout, 3*time.Second)
	o.Producers, o.Queues, o.BodySize = cmp.Or(o.Producers, 4), cmp.Or(o.Queues, 4), cmp.Or(o.BodySize, 256)
	o.MinUp = cmp.Or(o.MinUp, time.Second)
	o.MaxUp = cmp.Or(o.MaxUp, max(3*time.Second, o.MinUp))
	o.StartTimeout, o.RecoveryTimeout = cmp.Or(o.StartTimeout, 60*time.Second), cmp.Or(o.RecoveryTimeout, 60*time.Second)
	o.ReadTimeout = cmp.Or(o.ReadTimeout, 120*time.Second)
	o.Progress = cmp.Or(o.Progress, io.Discard)
}

// Validate reports every bad field at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Binary == "" {
		errs = append(errs, errors.New("no samsa binary (Options.Binary)"))
	}
	if o.Cycles < 0 {
		errs = append(errs, fmt.Errorf("cycles %d < 0", o.Cycles))
	}
	for _, f := range o.Faults {
		if !slices.Contains(AllFaults, f) {
			errs = append(errs, fmt.Errorf("unknown fault %q (known: %s)", f, strings.Join(AllFaults, ", ")))
		}
	}
	if o.ElectionTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("election timeout %v < 100ms", o.ElectionTimeout))
	}
	if o.HeartbeatInterval <= 0 || o.HeartbeatInterval >= o.ElectionTimeout {
		errs = append(errs, fmt.Errorf("heartbeat interval %v must be in (0, election timeout %v)", o.HeartbeatInterval, o.ElectionTimeout))
	}
	if o.SendTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("send timeout %v < 100ms", o.SendTimeout))
	}
	if o.RaftTimeout != 0 && o.RaftTimeout < 50*time.Millisecond {
		errs = append(errs, fmt.Errorf("raft timeout %v < 50ms", o.RaftTimeout))
	}
	if o.Producers < 1 || o.Queues < 1 || o.BodySize < 1 {
		errs = append(errs, fmt.Errorf("producers %d, queues %d, body size %d: each must be at least 1", o.Producers, o.Queues, o.BodySize))
	}
	if o.MinUp < 0 || o.MaxUp < o.MinUp {
		errs = append(errs, fmt.Errorf("up time [%v, %v] is not a range", o.MinUp, o.MaxUp))
	}
	return errors.Join(errs...)
}

// String is a stable one-line form for the result file.
func (o *Options) String() string {
	raft := ""
	if o.RaftTimeout != 0 {
		raft = fmt.Sprintf(" raft_timeout=%v", o.RaftTimeout)
	}
	return fmt.Sprintf("cycles=%d faults=%s election_timeout=%v heartbeat=%v%s slave_not_catchup=%v send_timeout=%v producers=%d queues=%d body=%d up=[%v,%v]",
		o.Cycles, strings.Join(o.Faults, ","), o.ElectionTimeout, o.HeartbeatInterval, raft, o.SlaveNotCatchup,
		o.SendTimeout, o.Producers, o.Queues, o.BodySize, o.MinUp, o.MaxUp)
}
