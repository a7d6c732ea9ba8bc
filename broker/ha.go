package broker

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/ha"
	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// The broker's replication wiring is one struct, Replication, built in New
// from a replDeps (ha_wiring.go) and never holding the *Broker. What lives
// where:
//
//   - ha.go: the struct, the hooks the send path uses (replicator), and
//     the addresses: this broker's HA address, the master a slave follows;
//   - ha_wiring.go: openReplication, which builds it, and
//     Broker.Replication;
//   - ha_link.go: the ends of the link (package ha), started and stopped;
//   - slave.go: what a broker that may not write refuses;
//   - stats_ha.go: the replication lines of the text stats;
//   - controller_mode*.go: controller mode (ctlMode), which starts and
//     stops the link's ends as the controller decides;
//   - slave_sync*.go: the metadata sync (slaveSync), a slave's copy of
//     its master's tables.
//
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

// Replication is a broker's replication wiring: the ends of the
// replication link (package ha), the master a slave follows, controller
// mode and the slave's metadata sync. Broker.Replication hands it to
// callers outside the package, who see its exported methods. Methods are
// safe for concurrent use.
type Replication struct {
	replDeps
	// link is the master side of the replication link as the send path
	// uses it, nil until one is attached (set before Start); haPort the
	// link's listening port once known; master what a slave learned of
	// its master.
	link     replicator
	haPort   atomic.Int32
	haMaster *ha.Master               // a master's end of the link (ha_link.go)
	haSlave  atomic.Pointer[ha.Slave] // a slave's end; the registrar kicks it
	master   struct {
		mu struct {
			sync.Mutex
			addr, haAddr string
		}
	}
	ctl  *ctlMode   // controller mode (controller_mode.go); nil without
	meta *slaveSync // the metadata sync (slave_sync.go); nil on a master
}

// replDeps is what the replication wiring takes from the broker
// (openReplication builds it).
type replDeps struct {
	cfg   *Config // the broker's configuration, read only
	store *storage.Store
	log   *slog.Logger
	// addr is the broker's advertised remoting address ("" before Start).
	addr func() string
	// listen opens a capped listener (conn_net.go); haListener is handed
	// a static master's replication listener, whose refused connections
	// the broker counts (controller mode's change at runtime: not
	// counted).
	listen     func(addr, name string) (*netx.Listener, error)
	haListener func(*netx.Listener)
	// accept runs an accepted replication connection's TLS handshake;
	// tlsClient is the outbound TLS (nil: the link dials plain).
	accept    func(net.Conn) (net.Conn, error)
	tlsClient *tls.Config
	// adminSecret and authRefused are the ACL's hooks for the link's
	// handshake (nil with ACL off).
	adminSecret func(accessKey string) (string, bool)
	authRefused func(accessKey, reason string)
	// The broker's counters (stats.go) the wiring adds to: sends a
	// SYNC_MASTER could not replicate or timed out on, sends refused as a
	// slave, bytes a slave cut below its acknowledged mark.
	slaveNotAvailable, slaveTimeouts, slaveRefused, cutAcknowledged *atomic.Int64

	// Controller mode's (controller_mode*.go). stop is closed when the
	// broker stops (ctlMode.run returns). registerNow registers with the
	// name servers on a new goroutine among the broker's loops;
	// resyncState rebuilds the transactions' state (nil error without
	// them) and catches POP up with the committed offsets when this
	// replica becomes master; dropLocalOffsets drops
	// the offsets committed here while it was not (offsets.Table.DropLocal).
	stop             <-chan struct{}
	registerNow      func()
	resyncState      func() error
	dropLocalOffsets func()
}

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
// Start (the send path reads r.link without a lock).
func (r *Replication) setReplicator(l replicator) { r.link = l }

// Slaves reports the slaves of this master's replication link (none
// without one).
func (r *Replication) Slaves() []SlaveStatus {
	if r.link == nil {
		return nil
	}
	return r.link.Slaves()
}

// waitsForSlaves reports whether a send waits for slaves after its append:
// a SYNC_MASTER with a replicator.
func (r *Replication) waitsForSlaves() bool { return r.cfg.BrokerRole == SyncMaster && r.link != nil }

// replicaStatus waits, on a SYNC_MASTER, until the slaves hold the records
// of res, and gives the answer code that outcome means: SUCCESS, or
// SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT with a remark (the records
// stay stored). Without a replicator a SYNC_MASTER has no slave.
func (r *Replication) replicaStatus(res []storage.AppendResult) (code int32, remark string) {
	if r.cfg.BrokerRole != SyncMaster || len(res) == 0 {
		return protocol.Success, ""
	}
	if r.link == nil {
		r.slaveNotAvailable.Add(1)
		return protocol.SlaveNotAvailable, "no slave attached to this SYNC_MASTER"
	}
	last := res[len(res)-1]
	return r.replicaOutcome(r.link.WaitReplicated(last.PhysicalOffset + int64(last.Size)))
}

// replicaOutcome is the answer code a wait for slaves' outcome means;
// err may be package ha's own (a WaitReplicatedFunc callback's).
func (r *Replication) replicaOutcome(err error) (code int32, remark string) {
	switch err = haError(err); {
	case err == nil:
		return protocol.Success, ""
	case errors.Is(err, errSlaveTimeout):
		r.slaveTimeouts.Add(1)
		return protocol.FlushSlaveTimeout, "stored, but no slave acknowledged it within haSlaveAckTimeout " + r.cfg.HASlaveAckTimeout.String()
	default:
		r.slaveNotAvailable.Add(1)
		return protocol.SlaveNotAvailable, "stored, but no slave in sync: " + err.Error()
	}
}

// HAAddr is the replication address this broker registers with the name
// servers (and its slaves dial): BrokerIP1 and the HA listener's port, ""
// while that port is not known (haListenPort 0 before the link listens).
// devcluster hands it to a test's or the lab's proxy between master and
// slave.
func (r *Replication) HAAddr() string {
	port := r.haPort.Load()
	if port == 0 {
		port = int32(r.cfg.HAListenPort)
	}
	if port == 0 {
		return ""
	}
	return net.JoinHostPort(r.cfg.BrokerIP1, strconv.Itoa(int(port)))
}

// setHAPort records the port the replication listener bound (haListenPort
// 0 picks a free one); the next registration advertises it.
func (r *Replication) setHAPort(port int) { r.haPort.Store(int32(port)) }

// HAMasterAddr is where a slave's replication link connects: haMasterAddress
// when configured, else the master's HA address the name server named in
// its last REGISTER_BROKER answer (RocketMQ keeps the last one it was told
// when an answer names none). "" on a master, or before it is known.
func (r *Replication) HAMasterAddr() string {
	if r.ctl != nil {
		return r.ctlHAMasterAddr()
	}
	if r.cfg.BrokerRole != Slave {
		return ""
	}
	if r.cfg.HAMasterAddress != "" {
		return r.cfg.HAMasterAddress
	}
	r.master.mu.Lock()
	defer r.master.mu.Unlock()
	return r.master.mu.haAddr
}

// MasterAddr is a slave's master's remoting address as the name server's
// last REGISTER_BROKER answer gave it: "" when the name server knows no
// live master (the metadata sync then waits), and on a master.
func (r *Replication) MasterAddr() string {
	r.master.mu.Lock()
	defer r.master.mu.Unlock()
	return r.master.mu.addr
}

// learnMaster records what a REGISTER_BROKER answer says of a slave's
// master (RocketMQ's BrokerController.registerBrokerAll: the HA address is
// kept when the answer has none, the master address is replaced).
func (r *Replication) learnMaster(haAddr, masterAddr string) {
	if r.cfg.BrokerRole != Slave && r.ctl == nil {
		return
	}
	r.master.mu.Lock()
	changed := r.master.mu.addr != masterAddr
	haChanged := haAddr != "" && haAddr != r.master.mu.haAddr
	if haAddr != "" {
		r.master.mu.haAddr = haAddr
	}
	r.master.mu.addr = masterAddr
	r.master.mu.Unlock()
	if (changed || haChanged) && masterAddr != "" {
		r.kickHASlave() // a link backing off while the address was unknown dials now
	}
	if changed {
		r.log.Info("broker: master address changed", "master", masterAddr, "ha", haAddr)
		if masterAddr != "" && r.meta != nil {
			r.meta.kickNow() // a master (back): hand it local offsets, copy its tables
		}
	}
}
