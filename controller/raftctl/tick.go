package raftctl

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsamq/samsa/controller"
)

// tickLoop is the replica's long-lived election goroutine: woken every
// TickInterval, ended by Close. It does nothing on a follower. On the
// leader it first waits for a barrier (every entry of earlier terms
// applied, the masters' last renewals among them) and tells the machine it
// leads (Machine.Lead); from then on it proposes, through Raft, each
// ElectMaster that Machine.Tick yields, and logs each new reason it holds
// a group's election back (Machine.Pending). A master's liveness comes from
// its renewals, which this replica applied as a follower, so a master that
// died with the old leader is elected over one election timeout after its
// last renewal, not after this replica took over. A lost leadership (or a
// new term) starts again.
func (n *Node) tickLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.opts.TickInterval)
	defer t.Stop()
	var term uint64                       // the term we lead in, 0 when following
	held := map[controller.Group]string{} // the last Pending logged per group
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if n.raft.State() != raft.Leader {
			if term != 0 {
				n.log.Info("no longer the controller leader", "term", term)
			}
			term = 0
			n.ready.Store(false)
			continue
		}
		if cur := n.raft.CurrentTerm(); cur != term {
			n.ready.Store(false)
			if err := n.raft.Barrier(n.opts.ApplyTimeout).Error(); err != nil {
				n.log.Warn("leader barrier failed; will retry", "err", err)
				term = 0
				continue
			}
			term = cur
			n.fsm.mu.Lock()
			n.fsm.mu.m.Lead(n.opts.Now())
			n.fsm.mu.Unlock()
			n.readyTerm.Store(cur)
			n.ready.Store(true)
			n.log.Info("controller leader", "term", cur)
		}
		now := n.opts.Now()
		n.fsm.mu.Lock()
		cmds := n.fsm.mu.m.Tick(now)
		for _, g := range n.fsm.mu.m.State().Groups() {
			if p := n.fsm.mu.m.Pending(g); p != held[g] {
				if p != "" {
					n.log.Warn("election held", "group", g.String(), "why", p)
				}
				held[g] = p
			}
		}
		n.fsm.mu.Unlock()
		for _, c := range cmds {
			ctx, cancel := context.WithTimeout(context.Background(), n.opts.ApplyTimeout)
			r, err := n.propose(ctx, c)
			cancel()
			switch {
			case err != nil:
				n.log.Warn("election not applied", "group", c.Group.String(), "alive", c.Alive, "err", err)
			case r.MasterChanged:
				n.log.Warn("master changed", "result", r.String())
			}
		}
	}
}
