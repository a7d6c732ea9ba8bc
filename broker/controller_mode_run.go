package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/samsamq/samsa/broker/ctlrole"
	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/ha"
)

// run is the controller-mode goroutine (started by Start): it registers,
// then heartbeats every brokerHeartbeatInterval (or at once when kicked),
// applies each answer (role changes happen here and only here), fences a
// master cut off from the controller, and keeps the sync-state set. Ends
// when the broker stops.
func (c *ctlMode) run() {
	t := time.NewTimer(c.cfg.BrokerHeartbeatInterval)
	defer t.Stop()
	for {
		c.round()
		t.Reset(c.nextHeartbeat())
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.kick:
		}
	}
}

// nextHeartbeat is the wait before the next heartbeat: brokerHeartbeatInterval,
// or a fifteenth of controllerHeartBeatTimeoutMills (at least 50 ms) while
// the broker's master may be gone: a slave whose replication link is down,
// or whose master the controller last heard from more than one and a half
// heartbeat intervals ago (a paused or cut-off master keeps its TCP link
// open), or a broker with no role. The controller's answer is how it
// learns that it was elected, or whom to follow, so it asks often until it
// knows. Also after a heartbeat that failed (the controller's Raft leader
// changing): a master fences itself once no heartbeat was answered for
// controllerHeartBeatTimeoutMills, so it must reach the new leader as soon
// as there is one. A master, and a slave of a live master, keep the
// configured pace.
func (c *ctlMode) nextHeartbeat() time.Duration {
	every := c.cfg.BrokerHeartbeatInterval
	c.mu.Lock()
	role, slave, silent, failed := c.mu.role, c.mu.slave, c.mu.masterSilent, c.mu.lastErr != ""
	c.mu.Unlock()
	overdue := silent < 0 || silent > every+every/2
	waiting := failed || role == controller.RoleNone ||
		(role == controller.RoleSlave && (overdue || slave == nil || !slave.Status().Connected))
	return ctlrole.HeartbeatWait(every, c.cfg.ControllerHeartBeatTimeout, waiting)
}

// round is one heartbeat (or registration) and what follows from it.
func (c *ctlMode) round() {
	timeout := c.cfg.ControllerHeartBeatTimeout
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sent, start := c.elapsed(), time.Now()
	c.mu.Lock()
	registered, epoch := c.mu.registered, c.mu.epoch
	c.mu.Unlock()
	var (
		res controller.Result
		err error
	)
	pos := c.position()
	if pos.Confirmed > 0 {
		if err := c.acked.Raise(pos.Confirmed); err != nil {
			c.noteErr("broker: cannot record the acknowledged offset", err)
		}
	}
	if !registered {
		res, err = c.cli.RegisterBroker(ctx, controller.RegisterBroker{Group: c.group, ID: c.cfg.BrokerID,
			Addr: c.addr(), Epoch: c.registerEpoch(), FenceTimeout: c.cfg.ControllerHeartBeatTimeout, Pos: pos})
	} else {
		res, err = c.cli.Heartbeat(ctx, controller.Heartbeat{Group: c.group, ID: c.cfg.BrokerID, Epoch: epoch,
			Pos: pos, MasterFailed: c.cannotServe()})
	}
	switch {
	case err == nil:
		c.apply(res) // first: a demotion must not see a fresh lastOK while still writable
		c.noteOK(sent, registered)
		if took := time.Since(start); took >= c.cfg.BrokerHeartbeatInterval/2 {
			c.log.Info("broker: the controller answered late", "took", took.Round(time.Millisecond), "register", !registered)
		}
	case errors.Is(err, controller.ErrUnknownGroup), errors.Is(err, controller.ErrUnknownBroker):
		c.noteErr("broker: the controller does not know this broker: registering again", err)
		c.mu.Lock()
		c.mu.registered = false
		c.mu.Unlock()
	default:
		c.noteErr("broker: controller heartbeat failed", err)
	}
	c.checkFence()
	if c.master.Load() != nil {
		c.keepSyncSet()
	}
}

// position is where this broker's log stands, for the controller's
// elections: the epoch of the last epoch-file entry that holds data, the
// log's end, as master what the whole sync-state set holds, how many
// damaged ranges wait for a repair, and how much of the log a restart has
// not yet read back.
func (c *ctlMode) position() controller.Position {
	p := ctlrole.LogPosition(c.epochs.Entries(), c.store.WrittenOffset())
	if m := c.master.Load(); m != nil {
		p.Confirmed = c.confirmed(m)
	}
	p.Damaged = len(c.store.Damaged())  // not electable until repaired (broker/repair)
	p.Unverified = c.store.Unverified() // nor until a restart's verification is done
	return p
}

// confirmed is the offset the group acknowledged and every member of the
// sync-state set holds, as this master sees it (ctlrole.Confirmed): never
// above what its ha.Master released writes at. The controller elects no
// replica whose log ends below it.
func (c *ctlMode) confirmed(m *ha.Master) int64 {
	c.mu.Lock()
	set := slices.Clone(c.mu.syncSet)
	c.mu.Unlock()
	return ctlrole.Confirmed(c.cfg.BrokerID, c.store.HandedOffset(), m.Acknowledged(), set, m.Slaves())
}

// mayCutAcked tells the replication link whether it may cut bytes the
// group acknowledged (below the acked mark) to follow the master: only
// when the controller made an unclean decision after lineage, the epoch
// of the log's tail (ha.SlaveConfig.MayCutAcked). Otherwise the link
// refuses, and this replica keeps what may be the last copy.
func (c *ctlMode) mayCutAcked(lineage uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ctlrole.MayCutAcked(lineage, c.mu.uncleanEpoch)
}

// masterFailed is why this broker, named master, could not take up the
// role ("" when it did, or is not named).
func (c *ctlMode) masterFailed() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.masterFailed
}

// cannotServe is why this broker cannot serve as master now, for its
// heartbeat ("" when it can): becoming master failed (masterFailed), or,
// as master, its store has had a flush in progress for DiskStallFailover
// (a disk whose fdatasync hangs: the heartbeat renews no lease and the
// controller elects another replica rather than leave the group waiting
// on it). A stall is logged once, when it starts to count.
func (c *ctlMode) cannotServe() string {
	if why := c.masterFailed(); why != "" {
		return why
	}
	limit := c.cfg.DiskStallFailover
	stall := c.store.FlushStalled()
	if limit <= 0 || c.master.Load() == nil || stall < limit {
		c.diskStalled = false
		return ""
	}
	why := fmt.Sprintf("the store's flush has been in progress for %s (diskStallFailoverMillis %d)",
		stall.Round(time.Millisecond), limit.Milliseconds())
	if !c.diskStalled {
		c.diskStalled = true
		c.log.Error("broker: the disk stalls: telling the controller this master cannot serve, so it elects another replica", "reason", why)
	}
	return why
}

// registerEpoch is the highest master epoch the broker has seen: the last
// of its epoch file, or the one it works under if higher.
func (c *ctlMode) registerEpoch() int64 {
	e := ctlrole.CtlEpochOf(c.epochs.MaxEpoch())
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(e, c.mu.epoch)
}

func (c *ctlMode) noteOK(sent time.Duration, registered bool) {
	if ns := int64(sent); ns > c.lastOK.Load() {
		c.lastOK.Store(ns) // run alone stores it
	}
	c.mu.Lock()
	c.mu.registered = true
	had := c.mu.lastErr
	c.mu.lastErr = ""
	c.mu.Unlock()
	if had != "" || !registered {
		c.log.Info("broker: controller answered", "registered", !registered)
	}
}

// noteErr logs err once per distinct reason.
func (c *ctlMode) noteErr(msg string, err error) {
	c.mu.Lock()
	repeat := c.mu.lastErr == err.Error()
	c.mu.lastErr = err.Error()
	c.mu.Unlock()
	if !repeat {
		c.log.Warn(msg, "err", err, "group", c.group.String(), "id", c.cfg.BrokerID)
	}
}

// checkFence: a master with no answer to heartbeats sent within the timeout
// stops taking writes, at the store too (an append racing the role check
// is refused); an answer since lifts it.
func (c *ctlMode) checkFence() {
	if !c.writable.Load() {
		return
	}
	ok := c.canWrite()
	if ok == !c.store.Fenced() {
		return
	}
	c.store.SetFenced(!ok)
	if ok {
		c.log.Info("broker: controller reached again: this master takes writes")
	} else {
		c.log.Warn("broker: no answer from the controller within controllerHeartBeatTimeoutMills: this master takes no writes "+
			"(another may be elected)", "timeout", c.cfg.ControllerHeartBeatTimeout)
	}
}

// apply acts on the controller's answer.
func (c *ctlMode) apply(r controller.Result) {
	c.mu.Lock()
	role, epoch, masterID, masterAddr := c.mu.role, c.mu.epoch, c.mu.masterID, c.mu.masterAddr
	c.mu.syncSet, c.mu.syncSetEpoch = slices.Clone(r.SyncSet), r.SyncSetEpoch
	c.mu.masterSilent = r.MasterSilent
	raised := r.UncleanEpoch > c.mu.uncleanEpoch
	if raised {
		c.mu.uncleanEpoch = r.UncleanEpoch
	}
	slave := c.mu.slave
	c.mu.Unlock()
	if raised && slave != nil && slave.Status().CutRefused {
		c.log.Warn("broker: the controller made an unclean decision: cutting the acknowledged messages this replica kept, to follow the master",
			"uncleanEpoch", r.UncleanEpoch)
		slave.Kick()
	}
	if r.Fenced {
		c.log.Warn("broker: fenced by the controller", "note", r.Note, "masterEpoch", r.MasterEpoch)
	}
	switch {
	case r.Role == controller.RoleMaster && r.MasterID == c.cfg.BrokerID:
		if role != controller.RoleMaster || epoch != r.MasterEpoch || c.master.Load() == nil {
			c.becomeMaster(r)
		} else if m := c.master.Load(); m != nil {
			m.SetRequired(ctlrole.Others(r.SyncSet, r.MasterID)) // the controller's set, as it stands
		}
	case r.Role == controller.RoleSlave && r.MasterID != controller.NoMaster:
		if role != controller.RoleSlave || epoch != r.MasterEpoch || masterID != r.MasterID || masterAddr != r.MasterAddr {
			c.becomeSlave(r)
		}
	default:
		if role != controller.RoleNone || epoch != r.MasterEpoch {
			c.becomeNone(r)
		}
	}
}

// stopWriting fences the store and closes the ha.Master: no write is taken
// and none is in progress when it returns.
func (c *ctlMode) stopWriting() {
	c.writable.Store(false)
	c.store.SetFenced(true)
	if m := c.master.Swap(nil); m != nil {
		// Waiting SYNC_MASTER sends answer SLAVE_NOT_AVAILABLE; the Close
		// error is only the replication listener's.
		_ = m.Close()
	}
}

func (c *ctlMode) stopSlave() {
	c.mu.Lock()
	s := c.mu.slave
	c.mu.slave = nil
	c.mu.Unlock()
	if s != nil {
		_ = s.Close() // always nil: it waits for the link to end
	}
}

func (c *ctlMode) becomeMaster(r controller.Result) {
	c.stopWriting()
	c.stopSlave()
	haEpoch, err := ctlrole.NextHAEpoch(c.epochs.MaxEpoch(), r.MasterEpoch)
	if err == nil {
		// What replication brought while a slave (half messages, op
		// records) never passed through the transactions' state.
		if err = c.resyncState(); err != nil {
			err = fmt.Errorf("rebuild the transactions' and POP's state: %w", err)
		}
	}
	var m *ha.Master
	if err == nil {
		m, err = c.newMaster(c.epochs, haEpoch)
	}
	if err != nil {
		// Retried at the next heartbeat; no writes meanwhile. The
		// heartbeats say why, so that the controller elects another
		// replica once its election timeout passes.
		c.noteErr("broker: cannot become master", err)
		c.mu.Lock()
		c.mu.masterFailed = err.Error()
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	c.mu.role, c.mu.epoch, c.mu.masterID, c.mu.masterAddr = controller.RoleMaster, r.MasterEpoch, r.MasterID, r.MasterAddr
	c.mu.masterFailed = ""
	c.mu.Unlock()
	c.stateVersion.Store(r.MasterEpoch)
	c.tracker.Begin(r.SyncSet, c.now())
	m.SetRequired(ctlrole.Others(r.SyncSet, r.MasterID))
	c.dropLocalOffsets() // commits made here as a slave are in the table: this is the master now
	c.master.Store(m)
	c.store.SetFenced(false)
	c.writable.Store(true)
	c.log.Warn("broker: the controller made this broker master", "epoch", r.MasterEpoch, "haEpoch", haEpoch, "epochStart", m.Epoch().Start,
		"syncSet", r.SyncSet)
	c.reregister() // as brokerId 0: routes follow
}

func (c *ctlMode) becomeSlave(r controller.Result) {
	c.stopWriting()
	c.stopSlave()
	c.mu.Lock()
	c.mu.role, c.mu.epoch, c.mu.masterID, c.mu.masterAddr = controller.RoleSlave, r.MasterEpoch, r.MasterID, r.MasterAddr
	c.mu.masterFailed = ""
	c.mu.Unlock()
	c.stateVersion.Store(r.MasterEpoch)
	c.log.Warn("broker: the controller made this broker a slave", "master", r.MasterID, "masterAddr", r.MasterAddr,
		"epoch", r.MasterEpoch)
	c.reregister() // as a slave; the answer names the master's HA address
	s, err := c.newSlave(c.epochs)
	if err != nil {
		c.noteErr("broker: cannot start the replication link", err)
		return
	}
	c.mu.Lock()
	c.mu.slave = s
	c.mu.Unlock()
}

func (c *ctlMode) becomeNone(r controller.Result) {
	c.stopWriting()
	c.mu.Lock()
	c.mu.role, c.mu.epoch, c.mu.masterID, c.mu.masterAddr = controller.RoleNone, r.MasterEpoch, controller.NoMaster, ""
	c.mu.masterFailed = ""
	c.mu.Unlock()
	c.stateVersion.Store(r.MasterEpoch)
	c.log.Warn("broker: the controller names no master for this group: no writes", "epoch", r.MasterEpoch, "note", r.Note)
	c.reregister()
}

// reregister registers with the name servers now, on a goroutine of its
// own: a slow or dead name server must not delay the next heartbeat (the
// controller would take this broker for dead). run is one of the broker's
// loops, so adding one here (registerNow: goLoop) never races their Wait.
func (c *ctlMode) reregister() {
	c.registerNow()
}

// keepSyncSet shrinks or expands the sync-state set (master only): a
// connected slave holding the whole log joins; a member not seen caught up
// for haMaxTimeSlaveNotCatchup leaves. The master itself always stays.
func (c *ctlMode) keepSyncSet() {
	m := c.master.Load()
	c.mu.Lock()
	set, setEpoch, epoch := slices.Clone(c.mu.syncSet), c.mu.syncSetEpoch, c.mu.epoch
	c.mu.Unlock()
	self := c.cfg.BrokerID
	next := c.tracker.Next(self, set, m.Slaves(), c.now(),
		ctlrole.SyncSetRules{NotCatchup: c.cfg.HAMaxTimeSlaveNotCatchup, Unlinked: c.cfg.ControllerHeartBeatTimeout})
	if slices.Equal(next, set) {
		return
	}
	// A SYNC_MASTER waits for every member (ha.Master.SetRequired): a new
	// one from before the controller has it, a dropped one until after.
	m.SetRequired(ctlrole.Others(ctlrole.Union(set, next), self))
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ControllerHeartBeatTimeout)
	defer cancel()
	res, err := c.cli.AlterSyncStateSet(ctx, controller.AlterSyncStateSet{Group: c.group, From: self, MasterEpoch: epoch,
		NewSet: next, SyncSetEpoch: setEpoch})
	if err != nil {
		m.SetRequired(ctlrole.Others(set, self))
		c.noteErr("broker: sync-state set change refused", err)
		if res.Fenced || errors.Is(err, controller.ErrFenced) || errors.Is(err, controller.ErrNotMaster) {
			c.apply(res)
		} else if errors.Is(err, controller.ErrStaleSyncEpoch) {
			c.heartbeatNow()
		}
		return
	}
	c.log.Info("broker: sync-state set changed", "from", set, "to", res.SyncSet, "setEpoch", res.SyncSetEpoch)
	m.SetRequired(ctlrole.Others(res.SyncSet, self))
	c.mu.Lock()
	c.mu.syncSet, c.mu.syncSetEpoch = slices.Clone(res.SyncSet), res.SyncSetEpoch
	c.mu.Unlock()
}
