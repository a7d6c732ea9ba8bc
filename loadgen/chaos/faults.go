package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// CycleResult is one fault and what it cost.
type CycleResult struct {
	Cycle  int    `json:"cycle"`
	Fault  string `json:"fault"`
	Target string `json:"target"` // the processes the fault hit
	// At is when the fault was injected (UTC), to find it in the logs.
	At   time.Time `json:"at"`
	UpMs float64   `json:"up_ms"` // load before the fault
	// RecoveryMs is the time from the fault to the first acknowledgement
	// by a broker other than the master it took away (for a fault that
	// leaves the master: by any broker): the RTO. For crash-group-tail-loss,
	// from the first broker's return to the first acknowledgement.
	RecoveryMs float64 `json:"recovery_ms"`
	// GapMs is the longest time without an acknowledgement from the
	// fault until the cluster settled again.
	GapMs float64 `json:"longest_gap_ms"`
	// GapAtMs is when that gap began, from the fault: near 0 the fault
	// caused it; near the restart, the comeback did.
	GapAtMs float64 `json:"longest_gap_at_ms"`
	// HarnessLateMs is the longest the harness's own 10 ms ticker fired
	// late from the fault until the cluster settled, and HarnessGCMs the
	// CPU time the harness spent in GC meanwhile (selfWatch): a send gap
	// that matches them may be the harness's, not the cluster's.
	HarnessLateMs float64 `json:"harness_late_ms"`
	HarnessGCMs   float64 `json:"harness_gc_cpu_ms"`
	// NotAcked counts the sends of the cycle answered with another status
	// than SEND_OK (stored, not acknowledged: SLAVE_NOT_AVAILABLE), and
	// SendErrors those that failed with no answer, from the fault until
	// the cluster settled.
	NotAcked   int64 `json:"not_acked"`
	SendErrors int64 `json:"send_errors"`
	// SettleMs is the time from the fault until the cluster was whole
	// again (what was killed restarted and back in the sync-state set).
	SettleMs float64 `json:"settle_ms"`
	// TailCutBytes (crash-group-tail-loss) is how much of the damaged
	// replica's CommitLog tail the simulated power loss took.
	TailCutBytes int64 `json:"tail_cut_bytes,omitempty"`
	// DamagedAt (damage-slave-kill-master) is the CommitLog offset of the
	// record whose byte was flipped.
	DamagedAt int64 `json:"damaged_at,omitempty"`
}

// cycle runs one fault: waits a seeded up time, finds the master (and the
// controller leader), injects fault, waits until a broker takes writes
// again, undoes the fault (restart, SIGCONT) and waits until the cluster
// is whole. A paused master, a killed slave and a killed controller
// leader stay out for two election timeouts from the fault; a killed
// master is restarted once another broker took writes.
func (r *runner) cycle(ctx context.Context, n int, fault string) (CycleResult, error) {
	o, c := r.o, r.c
	up := killloop.UpTime(r.rng, o.MinUp, o.MaxUp)
	cy := CycleResult{Cycle: n, Fault: fault, UpMs: float64(up) / 1e6}
	if err := lab.Sleep(ctx, up); err != nil {
		return cy, err
	}
	m, err := r.awaitSettled(ctx, o.RecoveryTimeout)
	if err != nil {
		return cy, err
	}
	master := c.brokers[m]
	var leader *node
	if fault == KillLeader || fault == KillMasterAndLeader {
		if leader, err = c.awaitLeader(ctx, r.ctl, o.RecoveryTimeout); err != nil {
			return cy, err
		}
	}
	hold := 2 * o.ElectionTimeout // a pause or partition outlasts the election timeout
	gone := ""                    // a fault that leaves the master: any broker's ack ends it
	if takesMaster(fault) {
		gone = master.addr
	}
	var restart []*node
	mark := r.ld.mark()
	gc0, notOK0, failed0 := gcCPU(), r.ld.NotOK(), r.ld.Failed()
	t := time.Now()
	cy.At = t.UTC()
	switch fault {
	case KillMaster:
		cy.Target = master.name
		restart = []*node{master}
		err = c.kill(master)
	case KillSlave:
		s := (m + 1 + r.rng.IntN(replicas-1)) % replicas
		cy.Target = c.brokers[s].name
		restart = []*node{c.brokers[s]}
		err = c.kill(c.brokers[s])
	case KillLeader:
		cy.Target = leader.name
		restart = []*node{leader}
		err = c.kill(leader)
	case KillMasterAndLeader:
		cy.Target = master.name + "+" + leader.name
		restart = []*node{master, leader}
		if err = c.kill(master); err == nil {
			err = c.kill(leader)
		}
	case PauseMaster:
		cy.Target = master.name
		err = master.p.Pause()
		defer func() { _ = master.p.Resume() }() // again, should a step below fail (the Resume below is checked)
	case PartitionMaster:
		cy.Target = master.name + " from the controllers"
		c.lookupErrs.Store(0)
		c.cutBroker(m, true)
		defer c.cutBroker(m, false)
	case DamageSlave:
		s := (m + 1 + r.rng.IntN(replicas-1)) % replicas
		cy.Target = master.name + "; " + c.brokers[s].name + " damaged"
		restart = []*node{master}
		var at int64
		deadline := time.Now().Add(o.RecoveryTimeout)
		for at, err = -1, nil; at < 0 && err == nil && time.Now().Before(deadline); {
			if at, err = damageSealed(filepath.Join(c.dir, c.brokers[s].name), r.rng); at < 0 && err == nil {
				err = lab.Sleep(ctx, 200*time.Millisecond) // no sealed segment yet: the load fills one
			}
		}
		if err == nil && at < 0 {
			err = fmt.Errorf("%s has no sealed segment to damage after %v", c.brokers[s].name, o.RecoveryTimeout)
		}
		cy.DamagedAt = at
		mark, t = r.ld.mark(), time.Now()
		cy.At = t.UTC()
		if err == nil {
			err = c.kill(master)
		}
	case CrashGroup:
		s := (m + 1 + r.rng.IntN(replicas-1)) % replicas
		cy.Target = "every broker; " + c.brokers[s].name + " lost its tail"
		for _, b := range c.brokers {
			if err = c.kill(b); err != nil {
				break
			}
		}
		// The RTO runs from the last kill: acknowledgements of sends in
		// flight until then are not a recovery.
		mark, t = r.ld.mark(), time.Now()
		cy.At = t.UTC()
		if err == nil {
			cy.TailCutBytes, err = loseTail(filepath.Join(c.dir, c.brokers[s].name), r.rng)
		}
		// The group stays down past the election timeout (the controller
		// takes the master for dead), then the damaged replica returns
		// first, the others a seeded moment later: it must not be
		// elected for being back first.
		if err == nil {
			err = lab.Sleep(ctx, time.Until(t.Add(hold)))
		}
		if err == nil {
			err = c.startEach([]*node{c.brokers[s]})
		}
		// Its RTO runs from there: the group's downtime is the harness's.
		t = time.Now()
		if err == nil {
			err = lab.Sleep(ctx, time.Duration(r.rng.Int64N(int64(o.ElectionTimeout/2)+1)))
		}
		for i, b := range c.brokers {
			if i != s && err == nil {
				err = c.startEach([]*node{b})
			}
		}
	default:
		return cy, fmt.Errorf("unknown fault %q", fault)
	}
	if err != nil {
		return cy, fmt.Errorf("inject: %w", err)
	}
	rto, err := r.awaitAck(ctx, mark, t, gone, o.RecoveryTimeout)
	if err != nil {
		return cy, err
	}
	cy.RecoveryMs = float64(rto) / 1e6
	switch fault {
	case PauseMaster, PartitionMaster:
		if err := lab.Sleep(ctx, time.Until(t.Add(hold))); err != nil {
			return cy, err
		}
		if fault == PauseMaster {
			err = master.p.Resume()
		} else {
			c.cutBroker(m, false)
			if n := c.lookupErrs.Swap(0); n > 0 {
				err = fmt.Errorf("%d connections through the controllers' advertised proxies could not be told apart (/proc lookups failed): the partition may not have held", n)
			}
		}
		if err != nil {
			return cy, fmt.Errorf("undo: %w", err)
		}
	case KillSlave, KillLeader:
		// What was killed stays down as long as a pause lasts: a quick
		// restart would hide a stall (a SYNC_MASTER waits for every
		// sync-state set member until haMaxTimeSlaveNotCatchup drops it).
		if fault == KillLeader {
			if _, err := c.awaitLeader(ctx, r.ctl, o.RecoveryTimeout); err != nil {
				return cy, err
			}
		}
		if err := lab.Sleep(ctx, time.Until(t.Add(hold))); err != nil {
			return cy, err
		}
	}
	if err := c.startEach(restart); err != nil {
		return cy, err
	}
	if _, err := r.awaitSettled(ctx, o.RecoveryTimeout); err != nil {
		return cy, err
	}
	end := time.Now()
	cy.SettleMs = float64(end.Sub(t)) / 1e6
	gap, from := LongestGap(r.ld.acksSince(mark), t, end)
	cy.GapMs, cy.GapAtMs = float64(gap)/1e6, float64(from.Sub(t))/1e6
	cy.HarnessLateMs = float64(r.self.maxLate(t, end)) / 1e6
	cy.HarnessGCMs = float64(gcCPU()-gc0) / 1e6
	cy.NotAcked, cy.SendErrors = r.ld.NotOK()-notOK0, r.ld.Failed()-failed0
	return cy, nil
}
