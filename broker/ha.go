package broker

import (
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// Hook points for the replication link (package ha), which is wired into
// the broker separately. The broker itself knows nothing of how bytes
// reach a slave; it needs three things from the link and gives it three:
//
//   - a master's send path waits for the slaves after a successful append
//     under SYNC_MASTER: inline sends (async flush) through
//     replicator.WaitReplicatedFunc, whose callback sends the answer
//     (conn.replicated); others through replicator.WaitReplicated
//     (sendResponse) on the goroutine that already waited for the append.
//     One call per send or batch, no goroutine of its own;
//   - stats and /metrics show replicator.Slaves();
//   - the link reads HAMasterAddr (a slave's master, static or learned from
//     the name server) and calls setHAPort once its listener has a port,
//     so the broker advertises it when it registers.

// Errors a replicator's WaitReplicated returns; sendResponse maps them to
// the SEND answer. Either way the message stays stored on the master.
var (
	// errSlaveNotAvailable: no slave in sync to wait for →
	// SLAVE_NOT_AVAILABLE.
	errSlaveNotAvailable = errors.New("broker: no slave in sync")
	// errSlaveTimeout: the slaves did not acknowledge the record within
	// haSlaveAckTimeout → FLUSH_SLAVE_TIMEOUT.
	errSlaveTimeout = errors.New("broker: slave acknowledgement timed out")
)

// replicator is the master side of the replication link, as the broker
// uses it. Safe for concurrent use.
type replicator interface {
	// WaitReplicated blocks until SlaveAcksNeeded slaves hold the
	// CommitLog up to end (exclusive; "hold" per haSlaveAckFlushed), and
	// returns nil; errSlaveNotAvailable at once when too few slaves are in
	// sync; errSlaveTimeout after haSlaveAckTimeout. Any other error is
	// answered as SLAVE_NOT_AVAILABLE. One acknowledgement must release
	// every waiter it covers (a waiter list like the store's flush, not a
	// goroutine per call).
	WaitReplicated(end int64) error
	// WaitReplicatedFunc is WaitReplicated for a caller that must not
	// block: an outcome known at once is returned with done; otherwise fn
	// gets it exactly once later, on the link's goroutine, and must not
	// block. fn's error may be package ha's (replicaOutcome maps both).
	WaitReplicatedFunc(end int64, fn func(error)) (done bool, err error)
	// Slaves reports each connected slave, for stats and metrics.
	Slaves() []SlaveStatus
}

// SlaveStatus is one slave as its master's replication link sees it.
type SlaveStatus struct {
	// Addr is the slave's address (its replication connection's remote
	// end).
	Addr string
	// BrokerID is the slave's brokerId.
	BrokerID int64
	// AckOffset is the CommitLog offset the slave last reported holding.
	AckOffset int64
	// Behind is the master's handed offset minus AckOffset, in bytes.
	Behind int64
	// LagTime is how long ago the master's log passed AckOffset (0 when
	// caught up).
	LagTime time.Duration
	// InSync: within haMaxGapNotInSync and reporting in time; a
	// SYNC_MASTER waits only for slaves in sync.
	InSync bool
	// Since is when its in-sync state last changed, or its link was made.
	Since time.Time
}

// setReplicator attaches the replication link. It must be called before
// Start (the send path reads b.repl without a lock).
func (b *Broker) setReplicator(r replicator) { b.repl = r }

// Slaves reports the slaves of this master's replication link (none
// without one).
func (b *Broker) Slaves() []SlaveStatus {
	if b.repl == nil {
		return nil
	}
	return b.repl.Slaves()
}

// waitsForSlaves reports whether a send waits for slaves after its append:
// a SYNC_MASTER with a replicator.
func (b *Broker) waitsForSlaves() bool { return b.cfg.BrokerRole == SyncMaster && b.repl != nil }

// replicaStatus waits, on a SYNC_MASTER, until the slaves hold the records
// of res, and gives the answer code that outcome means: SUCCESS, or
// SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT with a remark (the records
// stay stored). Without a replicator a SYNC_MASTER has no slave.
func (b *Broker) replicaStatus(res []storage.AppendResult) (code int16, remark string) {
	if b.cfg.BrokerRole != SyncMaster || len(res) == 0 {
		return protocol.Success, ""
	}
	if b.repl == nil {
		b.stats.slaveNotAvailable.Add(1)
		return protocol.SlaveNotAvailable, "no slave attached to this SYNC_MASTER"
	}
	last := res[len(res)-1]
	return b.replicaOutcome(b.repl.WaitReplicated(last.PhysicalOffset + int64(last.Size)))
}

// replicaOutcome is the answer code a wait for slaves' outcome means;
// err may be package ha's own (a WaitReplicatedFunc callback's).
func (b *Broker) replicaOutcome(err error) (code int16, remark string) {
	switch err = haError(err); {
	case err == nil:
		return protocol.Success, ""
	case errors.Is(err, errSlaveTimeout):
		b.stats.slaveTimeouts.Add(1)
		return protocol.FlushSlaveTimeout, "stored, but no slave acknowledged it within haSlaveAckTimeout " + b.cfg.HASlaveAckTimeout.String()
	default:
		b.stats.slaveNotAvailable.Add(1)
		return protocol.SlaveNotAvailable, "stored, but no slave in sync: " + err.Error()
	}
}

// HAAddr is the replication address this broker registers with the name
// servers (and its slaves dial): BrokerIP1 and the HA listener's port, ""
// while that port is not known (haListenPort 0 before the link listens).
// devcluster hands it to a test's or the lab's proxy between master and
// slave.
func (b *Broker) HAAddr() string {
	port := b.haPort.Load()
	if port == 0 {
		port = int32(b.cfg.HAListenPort)
	}
	if port == 0 {
		return ""
	}
	return net.JoinHostPort(b.cfg.BrokerIP1, strconv.Itoa(int(port)))
}

// setHAPort records the port the replication listener bound (haListenPort
// 0 picks a free one); the next registration advertises it.
func (b *Broker) setHAPort(port int) { b.haPort.Store(int32(port)) }

// HAMasterAddr is where a slave's replication link connects: haMasterAddress
// when configured, else the master's HA address the name server named in
// its last REGISTER_BROKER answer (RocketMQ keeps the last one it was told
// when an answer names none). "" on a master, or before it is known.
func (b *Broker) HAMasterAddr() string {
	if b.ctl != nil {
		return b.ctlHAMasterAddr()
	}
	if b.cfg.BrokerRole != Slave {
		return ""
	}
	if b.cfg.HAMasterAddress != "" {
		return b.cfg.HAMasterAddress
	}
	b.master.mu.Lock()
	defer b.master.mu.Unlock()
	return b.master.mu.haAddr
}

// MasterAddr is a slave's master's remoting address as the name server's
// last REGISTER_BROKER answer gave it: "" when the name server knows no
// live master (the metadata sync then waits), and on a master.
func (b *Broker) MasterAddr() string {
	b.master.mu.Lock()
	defer b.master.mu.Unlock()
	return b.master.mu.addr
}

// learnMaster records what a REGISTER_BROKER answer says of a slave's
// master (RocketMQ's BrokerController.registerBrokerAll: the HA address is
// kept when the answer has none, the master address is replaced).
func (b *Broker) learnMaster(haAddr, masterAddr string) {
	if b.cfg.BrokerRole != Slave && b.ctl == nil {
		return
	}
	b.master.mu.Lock()
	changed := b.master.mu.addr != masterAddr
	haChanged := haAddr != "" && haAddr != b.master.mu.haAddr
	if haAddr != "" {
		b.master.mu.haAddr = haAddr
	}
	b.master.mu.addr = masterAddr
	b.master.mu.Unlock()
	if (changed || haChanged) && masterAddr != "" {
		b.kickHASlave() // a link backing off while the address was unknown dials now
	}
	if changed {
		b.log.Info("broker: master address changed", "master", masterAddr, "ha", haAddr)
		if masterAddr != "" && b.metaSync != nil {
			b.metaSync.kickNow() // a master (back): hand it local offsets, copy its tables
		}
	}
}
