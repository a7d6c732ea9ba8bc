package durability

import (
	"context"
	"fmt"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// The replication loop (Options.Role set): a master and one slave, the
// master killed N times. Each cycle:
//
//  1. wait for the incarnation's first SEND_OK and for the slave to be
//     listed in the master's `stats ha` lines again (it reconnects with
//     back-off), then a seeded random time in [MinUp, MaxUp];
//  2. sample the master's lag (`stats ha`) and send SIGKILL at once;
//  3. wait until the slave has dropped the dead link and indexed what it
//     holds, read every queue from the slave's address alone (pinned
//     pulls: the slave is not changed), and compare with every
//     acknowledgement so far (KillCheck);
//  4. restart the master on its data dir: it recovers, begins a new
//     epoch, the slave reconnects (truncating a diverged tail) and
//     producers succeed again. Recovery is restart → first SEND_OK.
//
// After the last restart the load stops, the slave catches up, and one
// last read checks that it then holds every acknowledged message. A lag
// poller samples `stats ha` every lagPollInterval throughout.

// runReplication is Run's loop for a replication configuration.
func (r *runner) runReplication(ctx context.Context) (*Result, error) {
	o, c := r.o, r.c
	admin, err := client.NewAdmin(killloop.ClientOptions(c.namesrvAddr))
	if err != nil {
		return nil, err
	}
	defer func() { _ = admin.Close() }() // Admin.Close reports nothing
	check, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: killloop.ClientOptions(c.namesrvAddr), Group: "replication-check"})
	if err != nil {
		return nil, err
	}
	defer func() { _ = check.Close() }() // PullConsumer.Close reports nothing
	if err := r.startReplication(ctx, check); err != nil {
		return nil, err
	}
	ld, err := killloop.StartLoad(r.loadOptions(0), r.l)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ld.Stop(o.StopTimeout) }() // on an early return, whose error is reported; a no-op after the stop below
	lp := startLagPoller(admin, c.brokerAddr(), r.l)
	defer func() {
		if lp != nil {
			lp.stop()
		}
	}()
	rep := &ReplicationResult{Role: o.Role}
	res := &Result{Config: o.String(), Seed: o.Seed, Durability: o.Durability().String(),
		DurabilityNote: o.DurabilityNote(), BrokerDurability: brokerDurability(ctx, c.namesrvAddr, c.brokerAddr()),
		Replication: rep}
	var recoveries, slaveBacks []time.Duration
	for i := 0; i <= o.Kills; i++ {
		if err := r.awaitFirstAck(ctx, i == 0); err != nil {
			return nil, err
		}
		back, err := r.awaitSlaveListed(ctx, admin, i == 0)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			prev := &rep.Checks[i-1]
			prev.RecoveryMs, prev.SlaveBackMs = float64(r.l.Recovery())/1e6, float64(back)/1e6
			recoveries, slaveBacks = append(recoveries, r.l.Recovery()), append(slaveBacks, back)
		}
		if i == o.Kills {
			break
		}
		k, err := r.killAndCheck(ctx, i, admin, check, lp)
		if err != nil {
			return nil, err
		}
		rep.Checks = append(rep.Checks, k)
		r.l.Restarted(time.Now())
		if err := c.startBroker(); err != nil {
			return nil, err
		}
	}
	res.RecoveryMs, rep.SlaveBackMs = statsOf(recoveries), statsOf(slaveBacks)
	// The last incarnation runs a while too.
	if err := r.sleep(ctx, o.MinUp); err != nil {
		return nil, err
	}
	if err := ld.Stop(o.StopTimeout); err != nil {
		return nil, err
	}
	lp.stop()
	rep.RunMaxLagBytes, rep.RunMaxLagMs, rep.LagSamples = lp.maxima()
	lp = nil
	if err := r.finalReplicaCheck(ctx, admin, check, res); err != nil {
		return nil, err
	}
	rep.summarize()
	lab.Progressf(o.Progress, "replication: %s %s/%s: %d kills, %d acked (SEND_OK), %d stored not replicated; missing on the slave %d in %d kills (%d beyond the lag), %d duplicates; max lag before a kill %d B / %d ms; after catch-up %d missing; recovery p50 %.0f ms, max %.0f ms\n",
		o.Role, o.Backend, o.Flush, rep.Kills, res.Acked, res.StoredNotAcked, rep.Missing, rep.KillsWithMissing, rep.BeyondLag,
		rep.Duplicates, rep.MaxLagBytes, rep.MaxLagMs, rep.FinalMissing, res.RecoveryMs.P50, res.RecoveryMs.Max)
	return res, nil
}

// startReplication starts the name server and the master, creates the
// topic on the master, starts the slave and waits until it serves the
// topic.
func (r *runner) startReplication(ctx context.Context, check *client.PullConsumer) error {
	o, c := r.o, r.c
	if err := r.start(ctx); err != nil {
		return err
	}
	// The slave starts once the master is registered: its first
	// registration's answer names the master, whose metadata it then
	// copies at once (a slave told of no master waits for its next
	// registration, 30 s later).
	if err := c.startSlave(); err != nil {
		return err
	}
	if err := c.slave.WaitListening(c.slaveAddr(), o.StartTimeout); err != nil {
		return r.slaveErr(err)
	}
	// The slave copies the master's topics every second; a pull from it
	// answers TOPIC_NOT_EXIST until then.
	deadline := time.Now().Add(o.StartTimeout)
	mq := client.MessageQueue{Topic: killloop.Topic, BrokerName: killloop.BrokerName, QueueID: 0}
	for {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := check.Pull(pctx, mq, 0, client.PullOptions{BrokerAddr: c.slaveAddr()})
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return r.slaveErr(fmt.Errorf("the slave does not serve topic %s after %v: %w", killloop.Topic, o.StartTimeout, err))
		}
		if err := r.sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// awaitSlaveListed waits until the master lists its slave in `stats ha`
// (connected again after a restart) and returns the time since the
// restart (since Ledger.Restarted; 0 on the first start).
func (r *runner) awaitSlaveListed(ctx context.Context, admin *client.Admin, first bool) (time.Duration, error) {
	o, c := r.o, r.c
	timeout := o.RecoveryTimeout
	if first {
		timeout = o.StartTimeout
	}
	deadline := time.Now().Add(timeout)
	for {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := sampleLag(sctx, admin, c.brokerAddr(), r.l)
		cancel()
		if err == nil && s.Slaves > 0 {
			if first {
				return 0, nil
			}
			return r.l.SinceRestart(), nil
		}
		if time.Now().After(deadline) {
			return 0, r.slaveErr(fmt.Errorf("the master lists no slave %v after its start (%v)", timeout, err))
		}
		if err := r.sleep(ctx, 10*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// killAndCheck lets master incarnation i run a seeded time, samples its
// lag, kills it, and checks the slave's copy.
func (r *runner) killAndCheck(ctx context.Context, i int, admin *client.Admin, check *client.PullConsumer, lp *lagPoller) (KillCheck, error) {
	o, c := r.o, r.c
	up := killloop.UpTime(r.rng, o.MinUp, o.MaxUp)
	k := KillCheck{Kill: i + 1, Epoch: i + 1, UpMs: float64(up) / 1e6}
	if err := r.sleep(ctx, up); err != nil {
		return k, err
	}
	if o.PauseSlave > 0 {
		if err := c.slave.Pause(); err != nil {
			return k, fmt.Errorf("SIGSTOP the slave: %w", err)
		}
		defer func() { _ = c.slave.Resume() }() // again, should a step below fail (the SIGCONT below is checked)
		if err := r.sleep(ctx, o.PauseSlave); err != nil {
			return k, err
		}
	}
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	sample, err := sampleLag(sctx, admin, c.brokerAddr(), r.l)
	cancel()
	if err != nil || sample.Slaves == 0 {
		sample = lp.last() // the poller's, at most lagPollInterval older
	} else {
		lp.note(sample)
	}
	if err := c.broker.Kill(o.StopTimeout); err != nil {
		return k, r.brokerErr(err)
	}
	if o.PauseSlave > 0 {
		if err := c.slave.Resume(); err != nil {
			return k, fmt.Errorf("SIGCONT the slave: %w", err)
		}
	}
	began := time.Now()
	slaveEnd, err := waitSlaveSettled(ctx, admin, c.slaveAddr(), true, o.ReadTimeout)
	if err != nil {
		return k, r.slaveErr(err)
	}
	rctx, cancel := context.WithTimeout(ctx, o.ReadTimeout)
	rr, err := killloop.ReadReplica(rctx, check, c.slaveAddr(), o.Queues)
	cancel()
	if err != nil {
		return k, r.slaveErr(err)
	}
	r.recordBytes = max(r.recordBytes, rr.RecordBytes)
	got := checkReplica(r.l, rr.Found, sample, r.recordBytes)
	got.Kill, got.Epoch, got.UpMs, got.Lag, got.SlaveOffset = k.Kill, k.Epoch, k.UpMs, sample, slaveEnd
	got.ReadShort, got.ReadMs = rr.Short, float64(time.Since(began))/1e6
	lab.Progressf(o.Progress, "  kill %d after %v up: lag %d B / %d ms (slave acked %d); slave holds %d of %d acked: %d missing (%d beyond the lag), %d duplicates; read %.0f ms; restarting\n",
		got.Kill, up.Round(time.Millisecond), sample.BehindBytes, sample.LagMs, sample.AckOffset, got.Acked-got.Missing, got.Acked,
		got.Missing, got.BeyondLag, got.Duplicates, got.ReadMs)
	return got, nil
}

// finalReplicaCheck waits, with the load stopped, until the slave has
// caught up with the master, and reads it once more: it must then hold
// every acknowledged message. It fills res's Tally from that read.
func (r *runner) finalReplicaCheck(ctx context.Context, admin *client.Admin, check *client.PullConsumer, res *Result) error {
	o, c := r.o, r.c
	deadline := time.Now().Add(o.RecoveryTimeout)
	for {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := sampleLag(sctx, admin, c.brokerAddr(), r.l)
		cancel()
		if err == nil && s.Slaves > 0 && s.BehindBytes == 0 {
			break
		}
		if time.Now().After(deadline) {
			return r.slaveErr(fmt.Errorf("the slave did not catch up within %v of the load's stop (%+v, %v)", o.RecoveryTimeout, s, err))
		}
		if err := r.sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	if _, err := waitSlaveSettled(ctx, admin, c.slaveAddr(), false, o.ReadTimeout); err != nil {
		return r.slaveErr(err)
	}
	rctx, cancel := context.WithTimeout(ctx, o.ReadTimeout)
	rr, err := killloop.ReadReplica(rctx, check, c.slaveAddr(), o.Queues)
	cancel()
	if err != nil {
		return r.slaveErr(err)
	}
	t := r.l.Compare(rr.Found)
	res.Tally, res.ReadBackShort = t, rr.Short
	rep := res.Replication
	rep.FinalMissing, rep.FinalDuplicates, rep.FinalAckedReassigned = t.Lost, t.Duplicates, t.AckedReassigned
	rep.RecordBytes = max(r.recordBytes, rr.RecordBytes)
	return nil
}

// slaveErr adds the slave's last log line to err when it has exited.
func (r *runner) slaveErr(err error) error {
	if err == nil || r.c.slave == nil || r.c.slave.Alive() {
		return err
	}
	return fmt.Errorf("%w; the slave's last words: %s", err, r.c.logTail("slave.log", 1))
}
