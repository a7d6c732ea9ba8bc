package durability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// Run runs one kill loop (see the package doc) and returns its result. An
// error means the loop could not do its job (a process would not start or
// recover, the read-back failed); losses are in the result, not errors.
// On an error the data dir and logs are kept, and the error names them.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("durability: %w", err)
	}
	o.Seed = killloop.Seed(o.Seed)
	began := time.Now()
	c, err := newCluster(&o)
	if err != nil {
		return nil, fmt.Errorf("durability: %w", err)
	}
	what := "durability: " + o.Backend + "/" + o.Flush
	if o.Role != "" {
		what = "replication: " + o.Role + " " + o.Backend + "/" + o.Flush
	}
	lab.Progressf(o.Progress, "%s: seed %d, dir %s\n", what, o.Seed, c.dir)
	r := &runner{o: &o, c: c, l: killloop.NewLedger(), rng: killloop.NewRand(o.Seed)}
	var res *Result
	if o.Role != "" {
		res, err = r.runReplication(ctx)
	} else {
		res, err = r.run(ctx)
	}
	c.close()
	if err != nil {
		tail := ""
		if c.starts > 0 {
			tail = "\nbroker.log (last lines):\n" + c.logTail("broker.log", 25)
		}
		if c.slave != nil {
			tail += "\nslave.log (last lines):\n" + c.logTail("slave.log", 15)
		}
		return nil, fmt.Errorf("durability: %w (%s/%s, seed %d; data and logs kept in %s)%s", err, o.Backend, o.Flush, o.Seed, c.dir, tail)
	}
	res.ElapsedSeconds = time.Since(began).Seconds()
	if o.KeepDir {
		res.Dir = resultfile.RelativePaths(c.dir)
	} else {
		_ = os.RemoveAll(c.dir)
	}
	return res, nil
}

// runner is one Run's state; its methods run on Run's goroutine.
type runner struct {
	o   *Options
	c   *cluster
	l   *killloop.Ledger
	rng *rand.Rand
	// recordBytes is the largest stored message a replication check read.
	recordBytes int64
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	o, c := r.o, r.c
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	ld, err := killloop.StartLoad(r.loadOptions(o.Queues), r.l)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ld.Stop(o.StopTimeout) }() // on an early return, whose error is reported; a no-op after the stop below
	res := &Result{Config: o.String(), Seed: o.Seed, Durability: o.Durability().String(),
		DurabilityNote: o.DurabilityNote(), TermCycle: !o.NoTermCycle,
		BrokerDurability: brokerDurability(ctx, c.namesrvAddr, c.brokerAddr())}
	if err := r.cycles(ctx, res); err != nil {
		return nil, err
	}
	// The last incarnation runs a while too: what it acknowledges must be
	// there, with no crash in between.
	if err := r.sleep(ctx, o.MinUp); err != nil {
		return nil, err
	}
	if err := ld.Stop(o.StopTimeout); err != nil {
		return nil, err
	}
	stored, short, err := killloop.ReadBack(ctx, c.namesrvAddr, o.Queues, r.l, o.ReadTimeout)
	if err != nil {
		return nil, r.brokerErr(err)
	}
	r.tally(res)
	res.Stored, res.ReadBackShort = stored, short
	if files, err := filepath.Glob(filepath.Join(c.dir, "store", "commitlog", "*")); err == nil {
		res.SegmentFiles = len(files)
	}
	lab.Progressf(o.Progress, "durability: %s/%s: %d kills, %d acked, %d lost (%d in the TERM cycle), %d duplicates, %d offsets reused, %d acked offsets reassigned; recovery p50 %.0f ms, max %.0f ms\n",
		o.Backend, o.Flush, res.Kills, res.Acked, res.Lost, res.LostInTerm, res.Duplicates, res.OffsetsReused,
		res.AckedReassigned, res.RecoveryMs.P50, res.RecoveryMs.Max)
	return res, nil
}

// start starts the name server and the first broker incarnation and
// creates the topic.
func (r *runner) start(ctx context.Context) error {
	o, c := r.o, r.c
	if err := c.startNamesrv(); err != nil {
		return fmt.Errorf("%w; namesrv.log ends: %s", err, c.logTail("namesrv.log", 1))
	}
	if err := c.startBroker(); err != nil {
		return err
	}
	if err := c.broker.WaitListening(c.brokerAddr(), o.StartTimeout); err != nil {
		return r.brokerErr(err)
	}
	return r.brokerErr(killloop.CreateTopic(ctx, c.namesrvAddr, c.brokerAddr(), o.Queues, o.StartTimeout))
}

// cycles runs the kill cycles and the SIGTERM one, each after its
// incarnation's first acknowledgement, and waits for the last restart's.
// Cycle i's recovery is known at cycle i+1's first acknowledgement.
func (r *runner) cycles(ctx context.Context, res *Result) error {
	o := r.o
	n := o.Kills
	if !o.NoTermCycle {
		n++
	}
	var recoveries []time.Duration
	for i := 0; i <= n; i++ {
		if err := r.awaitFirstAck(ctx, i == 0); err != nil {
			return err
		}
		if i > 0 {
			prev := &res.Cycles[i-1]
			prev.RecoveryMs = float64(r.l.Recovery()) / 1e6
			if prev.Signal == "TERM" {
				res.TermRecoveryMs = prev.RecoveryMs
			} else {
				recoveries = append(recoveries, r.l.Recovery())
			}
		}
		if i == n {
			break
		}
		cy, err := r.cycle(ctx, i, !o.NoTermCycle && i == n-1)
		if err != nil {
			return err
		}
		res.Cycles = append(res.Cycles, cy)
	}
	res.RecoveryMs = statsOf(recoveries)
	return nil
}

// tally fills res from the ledger: totals, and each cycle's share.
func (r *runner) tally(res *Result) {
	res.Tally = r.l.Tally()
	for i := range res.Cycles {
		cy := &res.Cycles[i]
		cy.Acked, cy.Lost = res.AckedByEpoch[cy.Epoch], res.LostByEpoch[cy.Epoch]
		if cy.Signal == "TERM" {
			res.LostInTerm = cy.Lost
			continue
		}
		res.Kills++
		if cy.Lost > 0 {
			res.KillsWithLoss++
		}
	}
}

// awaitFirstAck waits for the current incarnation's first acknowledged
// send: StartTimeout on the first start, RecoveryTimeout after a restart.
func (r *runner) awaitFirstAck(ctx context.Context, first bool) error {
	timeout := r.o.RecoveryTimeout
	if first {
		timeout = r.o.StartTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-r.l.FirstAck():
		return nil
	case <-r.c.broker.Exited():
		return r.brokerErr(fmt.Errorf("broker exited before acknowledging a send: %v", r.c.broker.Err()))
	case <-t.C:
		return r.brokerErr(fmt.Errorf("no acknowledged send within %v of the broker's start", timeout))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cycle lets incarnation i run for a seeded time, stops it (SIGKILL, or
// SIGTERM when term), and starts the next.
func (r *runner) cycle(ctx context.Context, i int, term bool) (Cycle, error) {
	o, c := r.o, r.c
	up := killloop.UpTime(r.rng, o.MinUp, o.MaxUp)
	cy := Cycle{Signal: "KILL", Epoch: i + 1, UpMs: float64(up) / 1e6}
	if term {
		cy.Signal = "TERM"
	}
	if err := r.sleep(ctx, up); err != nil {
		return cy, err
	}
	if term {
		if err := c.broker.Term(o.StopTimeout); err != nil {
			return cy, r.brokerErr(err)
		}
	} else if err := c.broker.Kill(o.StopTimeout); err != nil {
		return cy, r.brokerErr(err)
	}
	lab.Progressf(o.Progress, "  cycle %d: %s after %v up; restarting\n", i+1, cy.Signal, up.Round(time.Millisecond))
	r.l.Restarted(time.Now())
	return cy, c.startBroker()
}

// sleep waits d unless the broker (or the slave) exits or ctx ends
// first.
func (r *runner) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	var slaveExited <-chan struct{} // nil: never ready
	if r.c.slave != nil {
		slaveExited = r.c.slave.Exited()
	}
	select {
	case <-t.C:
		return nil
	case <-slaveExited:
		return r.slaveErr(fmt.Errorf("the slave exited by itself: %v", r.c.slave.Err()))
	case <-r.c.broker.Exited():
		return r.brokerErr(fmt.Errorf("broker exited by itself: %v", r.c.broker.Err()))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// brokerErr adds the broker's last log line to err when the broker has
// exited: usually the reason (Run adds the log's tail).
func (r *runner) brokerErr(err error) error {
	if err == nil || r.c.broker == nil || r.c.broker.Alive() {
		return err
	}
	return fmt.Errorf("%w; the broker's last words: %s", err, r.c.logTail("broker.log", 1))
}

// loadOptions are the run's load: Options.Producers synchronous senders
// with the client's default send timeout, and a live reader of
// liveQueues queues (0: none).
func (r *runner) loadOptions(liveQueues int) killloop.LoadOptions {
	return killloop.LoadOptions{NameServer: r.c.namesrvAddr, Producers: r.o.Producers, BodySize: r.o.BodySize,
		Group: "durability-producer", SendTimeout: 3 * time.Second, LiveQueues: liveQueues}
}

// brokerDurability is the durability level the running broker states in
// its text stats (store_durability), or "" if it states none.
func brokerDurability(ctx context.Context, namesrv, brokerAddr string) string {
	a, err := client.NewAdmin(killloop.ClientOptions(namesrv))
	if err != nil {
		return ""
	}
	defer func() { _ = a.Close() }() // Admin.Close reports nothing
	stats, err := a.BrokerStats(ctx, brokerAddr)
	if err != nil {
		return ""
	}
	for _, s := range stats {
		if s.Name == "store_durability" {
			return s.Value
		}
	}
	return ""
}
