package raftctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsamq/samsa/controller"
)

// The requests a replica serves (the server's handlers call these; tests
// may call them in process). Writes are replicated through Raft by the
// leader; a follower answers *NotLeaderError.

// propose replicates cmd and returns what applying it gave.
func (n *Node) propose(ctx context.Context, cmd controller.Command) (controller.Result, error) {
	none := controller.Result{MasterID: controller.NoMaster}
	if n.closed.Load() {
		return none, ErrClosed
	}
	if !n.IsLeader() {
		return none, n.notLeader()
	}
	data, err := encodeEntry(cmd)
	if err != nil {
		return none, err
	}
	timeout := n.opts.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return none, context.DeadlineExceeded
	}
	f := n.raft.Apply(data, timeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			return none, n.notLeader()
		}
		if errors.Is(err, raft.ErrRaftShutdown) {
			return none, ErrClosed
		}
		return none, fmt.Errorf("raftctl: replicate: %w", err)
	}
	a, ok := f.Response().(applied)
	if !ok {
		return none, fmt.Errorf("raftctl: unexpected apply response %T", f.Response())
	}
	return a.r, a.err
}

// Register replicates a RegisterBroker (leader only).
func (n *Node) Register(ctx context.Context, c controller.RegisterBroker) (controller.Result, error) {
	if et := n.opts.Controller.ElectionTimeout; c.FenceTimeout > et {
		return controller.Result{Group: c.Group, MasterID: controller.NoMaster},
			fmt.Errorf("%w: broker %d of %s takes writes for %v with no heartbeat answered (controllerHeartBeatTimeoutMills), "+
				"longer than this controller's election timeout %v: after an election it could still take writes beside the new master; "+
				"lower it to at most %v", controller.ErrBadCommand, c.ID, c.Group, c.FenceTimeout, et, et)
	}
	return n.propose(ctx, c)
}

// AlterSyncStateSet replicates the master's change of its sync-state set
// (leader only).
func (n *Node) AlterSyncStateSet(ctx context.Context, c controller.AlterSyncStateSet) (controller.Result, error) {
	return n.propose(ctx, c)
}

// Heartbeat answers a broker's heartbeat (leader only; a follower refuses
// it with a *NotLeaderError). The master's is its lease: it is replicated
// and answered once committed, so that every replica records the renewal
// when it applies it, and a replica that leads later elects no successor
// before one election timeout has passed since the master's last renewal
// (which the master counts from its heartbeat's send time, earlier). A
// leader deposed without knowing it cannot commit, so it renews nothing.
// Any other broker's heartbeat only feeds this leader's liveness.
func (n *Node) Heartbeat(ctx context.Context, c controller.Heartbeat) (controller.Result, error) {
	if err := n.waitReady(ctx); err != nil {
		return controller.Result{Group: c.Group, MasterID: controller.NoMaster}, err
	}
	n.fsm.mu.Lock()
	if n.fsm.mu.m.NamesMaster(c) {
		n.fsm.mu.Unlock()
		return n.propose(ctx, c)
	}
	defer n.fsm.mu.Unlock()
	return n.fsm.mu.m.Apply(c, n.opts.Now())
}

// Elect proposes an election for g now from the leader's liveness (admin;
// the tick loop does the same for dead masters). An alive master stays.
// unclean is the operator's choice to elect the most up-to-date alive
// replica even when it lacks acknowledged messages.
func (n *Node) Elect(ctx context.Context, g controller.Group, unclean bool) (controller.Result, error) {
	if err := n.waitReady(ctx); err != nil {
		return controller.Result{Group: g, MasterID: controller.NoMaster}, err
	}
	n.fsm.mu.Lock()
	if _, err := n.fsm.mu.m.State().Show(g); err != nil {
		n.fsm.mu.Unlock()
		return controller.Result{Group: g, MasterID: controller.NoMaster}, err
	}
	cmd := n.fsm.mu.m.Elect(g, n.opts.Now())
	cmd.Unclean = unclean
	n.fsm.mu.Unlock()
	return n.propose(ctx, cmd)
}

// Show describes group g and its replicas from the leader's state.
func (n *Node) Show(ctx context.Context, g controller.Group) (controller.Result, map[int64]string, error) {
	if err := n.waitReady(ctx); err != nil {
		return controller.Result{Group: g, MasterID: controller.NoMaster}, nil, err
	}
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	r, err := n.fsm.mu.m.State().Show(g)
	if r.Note == "" {
		r.Note = n.fsm.mu.m.Pending(g) // why the group has no master, if it waits
	}
	return r, n.fsm.mu.m.State().Replicas(g), err
}

// Positions is where g's replicas last reported their logs stood, as this
// replica heard them (the leader hears every broker).
func (n *Node) Positions(g controller.Group) map[int64]controller.Position {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	out := map[int64]controller.Position{}
	for id := range n.fsm.mu.m.State().Replicas(g) {
		if p := n.fsm.mu.m.Liveness().Position(g, id); p != (controller.Position{}) {
			out[id] = p
		}
	}
	return out
}

// LocalShow describes g from this replica's own state, leader or not
// (tests, diagnostics): a follower's may lag.
func (n *Node) LocalShow(g controller.Group) (controller.Result, error) {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.fsm.mu.m.State().Show(g)
}

// LocalLastHeartbeat is when this replica, leader or not, last heard
// broker id of g on its own clock: for a master, when it applied the last
// renewal (tests, diagnostics).
func (n *Node) LocalLastHeartbeat(g controller.Group, id int64) (time.Time, bool) {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.fsm.mu.m.Liveness().LastHeartbeat(g, id)
}

// waitReady returns nil once this replica leads and has applied every
// entry of earlier terms; a follower gets a *NotLeaderError at once.
func (n *Node) waitReady(ctx context.Context) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if !n.IsLeader() {
		return n.notLeader()
	}
	if n.ready.Load() && n.readyTerm.Load() == n.raft.CurrentTerm() {
		return nil
	}
	timeout := n.opts.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	term := n.raft.CurrentTerm()
	if err := n.raft.Barrier(timeout).Error(); err != nil {
		return n.notLeader()
	}
	if !n.IsLeader() || n.raft.CurrentTerm() != term {
		return n.notLeader()
	}
	return nil
}
