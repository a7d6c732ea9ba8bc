package sim

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/samsamq/samsa/broker/ctlrole"
	"github.com/samsamq/samsa/controller"
)

// run is the replica's controller loop (package broker: ctlMode.run):
// register, then heartbeat, take up the role each answer gives, fence a
// master cut off from the controller, keep the sync-state set. Ends at
// stop.
func (p *replica) run() {
	defer close(p.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.stopc:
			return
		case <-t.C:
		}
		p.round()
		p.mu.Lock()
		waiting := p.mu.failed || p.mu.role != controller.RoleMaster
		p.mu.Unlock()
		t.Reset(ctlrole.HeartbeatWait(heartbeatEvery, fenceTimeout, waiting))
	}
}

// position is where the log stands for the controller's elections
// (broker: ctlMode.position).
func (p *replica) position() controller.Position {
	pos := ctlrole.LogPosition(p.epochs.Entries(), p.store.WrittenOffset())
	if m := p.master.Load(); m != nil {
		p.mu.Lock()
		set := slices.Clone(p.mu.syncSet)
		p.mu.Unlock()
		pos.Confirmed = ctlrole.Confirmed(p.id, p.store.HandedOffset(), m.Acknowledged(), set, m.Slaves())
	}
	if p.f.o.sabotage && p.staleEnd > pos.End {
		pos.End = p.staleEnd
	}
	pos.Damaged = len(p.store.Damaged())
	pos.Unverified = p.store.Unverified()
	return pos
}

func (p *replica) round() {
	ctx, cancel := context.WithTimeout(context.Background(), fenceTimeout)
	defer cancel()
	sent := time.Now()
	p.mu.Lock()
	registered, epoch, failedMaster := p.mu.registered, p.mu.epoch, p.mu.masterFailed
	p.mu.Unlock()
	pos := p.position()
	if pos.Confirmed > 0 {
		_ = p.acked.Raise(pos.Confirmed) // a MemFS write does not fail
	}
	var (
		res controller.Result
		err error
	)
	if !registered {
		reg := max(ctlrole.CtlEpochOf(p.epochs.MaxEpoch()), epoch)
		res, err = p.cli.register(ctx, controller.RegisterBroker{Group: simGroup, ID: p.id, Addr: p.haAddr, Epoch: reg,
			FenceTimeout: fenceTimeout, Pos: pos})
	} else {
		res, err = p.cli.heartbeat(ctx, controller.Heartbeat{Group: simGroup, ID: p.id, Epoch: epoch, Pos: pos, MasterFailed: failedMaster})
	}
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	if p.dead.Load() {
		return
	}
	switch {
	case err == nil:
		p.apply(res)
		if ns := sent.UnixNano(); ns > p.lastOK.Load() {
			p.lastOK.Store(ns)
		}
		p.mu.Lock()
		p.mu.registered, p.mu.failed = true, false
		p.mu.Unlock()
	case errors.Is(err, controller.ErrUnknownGroup), errors.Is(err, controller.ErrUnknownBroker):
		p.mu.Lock()
		p.mu.registered, p.mu.failed = false, true
		p.mu.Unlock()
	default:
		p.mu.Lock()
		p.mu.failed = true
		p.mu.Unlock()
	}
	p.checkFence()
	if p.master.Load() != nil {
		p.keepSyncSet()
	}
}

// checkFence: a master with no answer to heartbeats sent within the
// timeout takes no writes, at the store too.
func (p *replica) checkFence() {
	if !p.writable.Load() {
		return
	}
	if ok := p.canWrite(); ok == p.store.Fenced() {
		p.store.SetFenced(!ok)
		p.f.tracef("%s %s", p.name, map[bool]string{true: "reaches the controller again: takes writes", false: "fenced: no answer from the controller within the timeout"}[ok])
	}
}

// apply takes up the role the controller's answer gives (broker:
// ctlMode.apply).
func (p *replica) apply(r controller.Result) {
	p.mu.Lock()
	role, epoch, masterID, masterAddr := p.mu.role, p.mu.epoch, p.mu.masterID, p.mu.masterAddr
	p.mu.syncSet, p.mu.syncSetEpoch = slices.Clone(r.SyncSet), r.SyncSetEpoch
	raised := r.UncleanEpoch > p.mu.uncleanEpoch
	if raised {
		p.mu.uncleanEpoch = r.UncleanEpoch
	}
	slave := p.mu.slave
	p.mu.Unlock()
	if raised && slave != nil && slave.Status().CutRefused {
		slave.Kick()
	}
	switch {
	case r.Role == controller.RoleMaster && r.MasterID == p.id:
		if role != controller.RoleMaster || epoch != r.MasterEpoch || p.master.Load() == nil {
			p.becomeMaster(r)
		} else if m := p.master.Load(); m != nil {
			m.SetRequired(ctlrole.Others(r.SyncSet, r.MasterID))
		}
	case r.Role == controller.RoleSlave && r.MasterID != controller.NoMaster:
		if role != controller.RoleSlave || epoch != r.MasterEpoch || masterID != r.MasterID || masterAddr != r.MasterAddr {
			p.becomeSlave(r)
		}
	default:
		if role != controller.RoleNone || epoch != r.MasterEpoch {
			p.becomeNone(r)
		}
	}
}

func (p *replica) becomeMaster(r controller.Result) {
	p.staleEnd = 0
	p.stopWriting()
	p.stopSlave()
	haEpoch, err := ctlrole.NextHAEpoch(p.epochs.MaxEpoch(), r.MasterEpoch)
	if err == nil {
		if err = p.f.onElected(p, r.MasterEpoch); err != nil {
			p.f.fail(err)
		}
	}
	var m interface{ SetRequired([]int64) }
	if err == nil {
		hm, herr := p.newMaster(haEpoch)
		if herr == nil {
			p.master.Store(hm)
			m = hm
		}
		err = herr
	}
	if err != nil {
		p.mu.Lock()
		p.mu.masterFailed = err.Error()
		p.mu.Unlock()
		p.f.tracef("%s cannot become master at epoch %d: %v", p.name, r.MasterEpoch, err)
		return
	}
	p.mu.Lock()
	p.mu.role, p.mu.epoch, p.mu.masterID, p.mu.masterAddr = controller.RoleMaster, r.MasterEpoch, r.MasterID, r.MasterAddr
	p.mu.masterFailed = ""
	p.mu.Unlock()
	p.tracker.Begin(r.SyncSet, time.Now())
	m.SetRequired(ctlrole.Others(r.SyncSet, r.MasterID))
	p.store.SetFenced(false)
	p.writable.Store(true)
	p.f.tracef("%s master at epoch %d (ha epoch %#x at %d), sync set %v", p.name, r.MasterEpoch, haEpoch, p.store.WrittenOffset(), r.SyncSet)
}

func (p *replica) becomeSlave(r controller.Result) {
	p.staleEnd = 0
	p.stopWriting()
	p.stopSlave()
	p.mu.Lock()
	p.mu.role, p.mu.epoch, p.mu.masterID, p.mu.masterAddr = controller.RoleSlave, r.MasterEpoch, r.MasterID, r.MasterAddr
	p.mu.masterFailed = ""
	p.mu.Unlock()
	s, err := p.newSlave(r.MasterAddr)
	if err != nil {
		p.f.tracef("%s cannot start its replication link: %v", p.name, err)
		return
	}
	p.mu.Lock()
	p.mu.slave = s
	p.mu.Unlock()
	p.f.tracef("%s follows b%d at epoch %d", p.name, r.MasterID, r.MasterEpoch)
}

func (p *replica) becomeNone(r controller.Result) {
	p.stopWriting()
	p.mu.Lock()
	p.mu.role, p.mu.epoch, p.mu.masterID, p.mu.masterAddr = controller.RoleNone, r.MasterEpoch, controller.NoMaster, ""
	p.mu.masterFailed = ""
	p.mu.Unlock()
	p.f.tracef("%s: no master at epoch %d", p.name, r.MasterEpoch)
}

// keepSyncSet shrinks or expands the sync-state set as master (broker:
// ctlMode.keepSyncSet). Called with roleMu held; releases it around its
// call to the controller.
func (p *replica) keepSyncSet() {
	m := p.master.Load()
	p.mu.Lock()
	set, setEpoch, epoch := slices.Clone(p.mu.syncSet), p.mu.syncSetEpoch, p.mu.epoch
	p.mu.Unlock()
	next := p.tracker.Next(p.id, set, m.Slaves(), time.Now(), ctlrole.SyncSetRules{NotCatchup: notCatchup, Unlinked: fenceTimeout})
	if slices.Equal(next, set) {
		return
	}
	m.SetRequired(ctlrole.Others(ctlrole.Union(set, next), p.id))
	ctx, cancel := context.WithTimeout(context.Background(), fenceTimeout)
	defer cancel()
	// The call waits on the controller: quiesce must not wait for it.
	p.roleMu.Unlock()
	res, err := p.cli.alter(ctx, controller.AlterSyncStateSet{Group: simGroup, From: p.id, MasterEpoch: epoch, NewSet: next, SyncSetEpoch: setEpoch})
	p.roleMu.Lock()
	if p.dead.Load() {
		return
	}
	if err != nil {
		m.SetRequired(ctlrole.Others(set, p.id))
		if res.Fenced || errors.Is(err, controller.ErrFenced) || errors.Is(err, controller.ErrNotMaster) {
			p.apply(res)
		}
		return
	}
	m.SetRequired(ctlrole.Others(res.SyncSet, p.id))
	p.mu.Lock()
	p.mu.syncSet, p.mu.syncSetEpoch = slices.Clone(res.SyncSet), res.SyncSetEpoch
	p.mu.Unlock()
	p.f.tracef("%s sync set %v -> %v", p.name, set, res.SyncSet)
}
