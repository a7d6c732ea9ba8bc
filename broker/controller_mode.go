package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/ctlrole"
	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/controller/ctlclient"
	"github.com/samsamq/samsa/ha"
)

// Controller mode (enableControllerMode): the fail-over
// controller, not brokerRole, says which replica of the group is master.
// The broker registers with the controller at start (with the controller
// epoch of the highest epoch in its epoch file), then heartbeats every brokerHeartbeatInterval;
// each answer (a controller.Result) tells it its role, the master and the
// master epoch, and the sync-state set. On a change:
//
//   - made master at epoch E: stop the ha.Slave, open a replication epoch
//     of E in the epoch file at the log's end (E<<16|n,
//     ctlrole.NextHAEpoch; ha.EpochFile.BeginMasterEpochAt), start an
//     ha.Master that waits for the sync-state set (SYNC_MASTER), lift the
//     store's fence, and register with the name servers as brokerId 0 (the
//     route's master) with stateVersion E;
//   - told to follow another master (or that there is none): fence the
//     store (sends answer SERVICE_NOT_AVAILABLE; an append in progress
//     finishes first), close the ha.Master, start an ha.Slave to the new
//     master's HA address (the handshake cuts a diverged tail to the
//     consistent point of the epoch lists), and register as a slave under
//     brokerId (this replica's id).
//
// Fencing: a master that has had no answer to heartbeats it sent
// controllerHeartBeatTimeoutMills ago takes no more writes (it may have
// been replaced); an answer lifts that.
//
// Sync-state set: the master adds a slave once it has acknowledged the
// whole log, and drops one whose acknowledgement has trailed the log (or
// that has been gone) for haMaxTimeSlaveNotCatchup (AlterSyncStateSet).
//
// The role-changing goroutine is ctlMode.run, the only one that starts or
// stops the ha.Master and ha.Slave; readers (the send path, stats, the
// registrar) read the role through mu or the atomics.

// controllerClient is the broker's view of the controller (its replicated
// server and network client are built apart; the types are package
// controller's). Safe for concurrent use.
type controllerClient interface {
	// RegisterBroker registers this replica (at every start).
	RegisterBroker(ctx context.Context, c controller.RegisterBroker) (controller.Result, error)
	// Heartbeat says it is alive; the Result tells its role.
	Heartbeat(ctx context.Context, c controller.Heartbeat) (controller.Result, error)
	// AlterSyncStateSet is the master's change of the sync-state set.
	AlterSyncStateSet(ctx context.Context, c controller.AlterSyncStateSet) (controller.Result, error)
	// Close releases the client.
	Close() error
}

// dialController makes the network client to cfg.ControllerAddrs
// (package controller/ctlclient): it follows the controller's Raft
// leader, dials with the broker's outbound TLS and signs with its
// accessKey/secretKey. It connects lazily: a broker whose controller is
// not reachable yet starts fenced and keeps heartbeating.
func dialController(d *replDeps) (controllerClient, error) {
	return ctlclient.New(ctlclient.Options{Addrs: d.cfg.ControllerAddrs, TLS: d.tlsClient,
		AccessKey: d.cfg.AccessKey, SecretKey: d.cfg.SecretKey, Logger: d.log,
		// During a controller fail-over the replicas name no leader, or
		// the dead one, for a Raft election; the client's default pauses
		// (100 ms doubling to 1 s) then answer up to 0.8 s after the new
		// leader is there. Heartbeats want it at once, and trying three
		// replicas every 200 ms costs nothing.
		RetryPause: 50 * time.Millisecond, MaxRetryPause: 200 * time.Millisecond})
}

// ctlMode is the broker's controller-mode state. It shares the replication
// wiring's dependencies (replDeps) and starts the link's ends through
// newMaster and newSlave (Replication's newHAMaster and newHASlave).
type ctlMode struct {
	*replDeps
	newMaster func(epochs *ha.EpochFile, epoch uint64) (*ha.Master, error)
	newSlave  func(epochs *ha.EpochFile) (*ha.Slave, error)
	cli       controllerClient
	group     controller.Group
	epochs    *ha.EpochFile
	// acked is what this broker's group acknowledged while it was master
	// (raised every round from its confirm offset): a slave cut below it
	// drops acknowledged messages, logged and counted (ha.AckedMark).
	acked *ha.AckedMark
	now   func() time.Time
	kick  chan struct{} // cap 1: heartbeat now
	// master is the running ha.Master (nil when not master), for the
	// replicator; writable says the broker takes writes now (master, its
	// ha.Master up, heard from the controller within the timeout).
	master   atomic.Pointer[ha.Master]
	writable atomic.Bool
	// stateVersion is the master epoch the broker works under, for the
	// name servers (a newer master's registration wins over an old one's).
	stateVersion atomic.Int64
	// lastOK is when the last heartbeat the controller answered was sent,
	// in ns of elapsed(); read on every send (canWrite).
	lastOK atomic.Int64
	// elapsed is the lease's clock: time since the broker began, on the
	// monotonic clock, so a wall clock set back cannot keep a cut-off
	// master writable, nor one set forward fence it (tests set it).
	elapsed func() time.Duration
	// began is the wall time elapsed counts from, for the stats.
	began time.Time

	mu struct {
		sync.Mutex
		role         controller.Role
		registered   bool
		epoch        int64 // the master epoch the broker works under (the controller's)
		masterID     int64
		masterAddr   string
		syncSet      []int64
		syncSetEpoch int64
		slave        *ha.Slave
		lastErr      string
		// masterSilent: the controller's last word on how long ago the
		// master's heartbeat reached it (controller.Result.MasterSilent).
		masterSilent time.Duration
		// masterFailed: why becoming master failed (controller.Heartbeat's
		// MasterFailed), "" otherwise.
		masterFailed string
		// uncleanEpoch: the controller's word on the group's last unclean
		// decision (controller.Result.UncleanEpoch; see mayCutAcked).
		uncleanEpoch int64
	}
	// tracker keeps the sync-state set between rounds (ctlrole.Tracker).
	// run's alone.
	tracker *ctlrole.Tracker
	// diskStalled: the last heartbeat said the disk stalls (cannotServe);
	// run's alone.
	diskStalled bool
}

// openControllerMode prepares controller mode in New: the client, the epoch
// file, a fenced store (no writes until the controller says master).
func (r *Replication) openControllerMode() error {
	cli := r.cfg.controllerClient
	if cli == nil {
		var err error
		if cli, err = dialController(&r.replDeps); err != nil {
			return fmt.Errorf("broker: controller client: %w", err)
		}
	}
	epochs, err := r.openEpochs()
	if err != nil {
		return err
	}
	acked, err := ha.OpenAckedMark(r.cfg.FS, filepath.Join(filepath.Dir(r.epochPath()), "acked"))
	if err != nil {
		return err
	}
	c := &ctlMode{replDeps: &r.replDeps, newMaster: r.newHAMaster, newSlave: r.newHASlave,
		cli: cli, epochs: epochs, acked: acked, now: time.Now, began: time.Now(),
		group:   controller.Group{Cluster: r.cfg.BrokerClusterName, Broker: r.cfg.BrokerName},
		kick:    make(chan struct{}, 1),
		tracker: ctlrole.NewTracker()}
	c.elapsed = func() time.Duration { return time.Since(c.began) }
	if r.cfg.ctlNow != nil {
		c.now = r.cfg.ctlNow
	}
	c.mu.role, c.mu.masterID = controller.RoleNone, controller.NoMaster
	r.store.SetFenced(true)
	r.ctl = c
	r.setReplicator(ctlReplicator{c})
	return nil
}

// ctlReplicator is the replicator of a controller-mode broker: the ha.Master
// of the moment, if any.
type ctlReplicator struct{ c *ctlMode }

func (r ctlReplicator) WaitReplicated(end int64) error {
	m := r.c.master.Load()
	if m == nil {
		return errSlaveNotAvailable
	}
	return haMaster{m}.WaitReplicated(end)
}

func (r ctlReplicator) WaitReplicatedFunc(end int64, fn func(error)) (bool, error) {
	m := r.c.master.Load()
	if m == nil {
		return true, errSlaveNotAvailable
	}
	return haMaster{m}.WaitReplicatedFunc(end, fn)
}

func (r ctlReplicator) Slaves() []SlaveStatus {
	if m := r.c.master.Load(); m != nil {
		return haMaster{m}.Slaves()
	}
	return nil
}

// canWrite reports whether a controller-mode broker takes writes now: the
// controller made it master and answered a heartbeat sent within
// controllerHeartBeatTimeoutMills.
func (c *ctlMode) canWrite() bool {
	if !c.writable.Load() {
		return false
	}
	return int64(c.elapsed())-c.lastOK.Load() < int64(c.cfg.ControllerHeartBeatTimeout)
}

// isMasterRole: the controller named this broker master (fenced by timeout
// or not): it registers as brokerId 0.
func (c *ctlMode) isMasterRole() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.role == controller.RoleMaster
}

// masterAddr is the remoting address of the master the controller named.
func (c *ctlMode) masterAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.role != controller.RoleSlave {
		return ""
	}
	return c.mu.masterAddr
}

// ControllerRole is the broker's role as the controller last told it: "master",
// "slave" or "none" ("" outside controller mode).
func (r *Replication) ControllerRole() string {
	if r.ctl == nil {
		return ""
	}
	r.ctl.mu.Lock()
	defer r.ctl.mu.Unlock()
	return r.ctl.mu.role.String()
}

// ControllerSyncSet is the group's sync-state set as the controller last
// told this broker (nil outside controller mode): the replicas an election
// may choose from.
func (r *Replication) ControllerSyncSet() []int64 {
	if r.ctl == nil {
		return nil
	}
	r.ctl.mu.Lock()
	defer r.ctl.mu.Unlock()
	return slices.Clone(r.ctl.mu.syncSet)
}

// MasterEpoch is the master epoch a controller-mode broker works under
// (0 outside controller mode).
func (r *Replication) MasterEpoch() int64 {
	if r.ctl == nil {
		return 0
	}
	r.ctl.mu.Lock()
	defer r.ctl.mu.Unlock()
	return r.ctl.mu.epoch
}

// slaveLink is the replication link while this broker is a slave (nil
// otherwise).
func (c *ctlMode) slaveLink() *ha.Slave {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.slave
}

// heartbeatNow asks run for a heartbeat at once.
// onHALinkDown is the ha.Master's word that a slave's replication link
// ended: in controller mode the next round (now) drops it from the
// sync-state set, since a SYNC_MASTER's sends wait for every member.
func (r *Replication) onHALinkDown(int64) {
	if r.ctl != nil {
		r.ctl.heartbeatNow()
	}
}

func (c *ctlMode) heartbeatNow() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// close stops the replication link, then the client. Called by the
// broker's shutdown after its loops (run among them) ended.
func (c *ctlMode) close() {
	c.store.SetFenced(true)
	c.writable.Store(false)
	// Shutting down: ha.Master's Close reports only its listener's close,
	// ha.Slave's and the client's report nothing.
	if m := c.master.Swap(nil); m != nil {
		_ = m.Close()
	}
	c.mu.Lock()
	s := c.mu.slave
	c.mu.slave = nil
	c.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
	_ = c.cli.Close()
}

// ctlHAMasterAddr is where a controller-mode slave's link connects: the HA
// address the name servers gave with the master's registration, taken only
// once they name the master the controller named (until then an old
// master, dead or fenced, may still hold id 0 there).
func (r *Replication) ctlHAMasterAddr() string {
	want := r.ctl.masterAddr()
	if want == "" {
		return ""
	}
	r.master.mu.Lock()
	defer r.master.mu.Unlock()
	if r.master.mu.addr != want {
		return ""
	}
	return r.master.mu.haAddr
}

// registrationID is the brokerId the name servers get: 0 for the master
// (RocketMQ routes: id 0 is the master), else brokerId; in controller mode
// it follows the controller's word.
func (r *Replication) registrationID() int64 {
	if r.ctl != nil && r.ctl.isMasterRole() {
		return 0
	}
	return r.cfg.BrokerID
}

// stateVersion is the registration's stateVersion: the master epoch in
// controller mode (the name servers keep the newer master), else 0.
func (r *Replication) stateVersion() int64 {
	if r.ctl == nil {
		return 0
	}
	return r.ctl.stateVersion.Load()
}

// stats are the controller-mode lines of the text stats:
//
//	controller_role          master, slave or none, as the controller said
//	controller_master_id     the master's replica id (-1: none)
//	controller_master_epoch  the master epoch the broker works under
//	controller_sync_set      the sync-state set, e.g. "1,2,3"
//	controller_writable      1 when it takes writes now
//	controller_last_ok_ms    unix ms when the last answered heartbeat was sent
//
// lastOKMs is lastOK as a wall time in unix ms, 0 before any answer.
func (c *ctlMode) lastOKMs() int64 {
	if ok := c.lastOK.Load(); ok != 0 {
		return c.began.Add(time.Duration(ok)).UnixMilli()
	}
	return 0
}

func (c *ctlMode) stats() []statLine {
	c.mu.Lock()
	role, id, epoch, set := c.mu.role.String(), c.mu.masterID, c.mu.epoch, slices.Clone(c.mu.syncSet)
	c.mu.Unlock()
	ids := make([]string, len(set))
	for i, x := range set {
		ids[i] = strconv.FormatInt(x, 10)
	}
	return []statLine{
		{"controller_role", role},
		{"controller_master_id", id},
		{"controller_master_epoch", epoch},
		{"controller_sync_set", strconv.Quote(strings.Join(ids, ","))},
		{"controller_writable", boolInt(c.canWrite())},
		{"controller_last_ok_ms", c.lastOKMs()},
	}
}
