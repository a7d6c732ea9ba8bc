package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/controller/ctlclient"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// Run starts the cluster (see cluster), runs o.Cycles faults under load,
// reads every queue back from the final master and judges the run. An
// error means the run could not do its job (a process would not start, no
// master came back within RecoveryTimeout, the read-back failed); losses
// and split brains are in the result, not errors. After an error the data
// and logs are kept and the error names them.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	o.Seed = killloop.Seed(o.Seed)
	began := time.Now()
	c, err := newCluster(&o)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	lab.Progressf(o.Progress, "chaos: seed %d, dir %s\n", o.Seed, c.dir)
	r := &runner{o: &o, c: c, l: killloop.NewLedger(), rng: killloop.NewRand(o.Seed)}
	r.self = startSelfWatch()
	res, err := r.run(ctx)
	r.self.close()
	if r.ld != nil {
		_ = r.ld.Stop(loadStopTimeout)
	}
	// Admin's and ctlclient's Close report nothing.
	if r.admin != nil {
		_ = r.admin.Close()
	}
	if r.ctl != nil {
		_ = r.ctl.Close()
	}
	c.close()
	if err != nil {
		return nil, fmt.Errorf("chaos: %w (seed %d; data and logs kept in %s)", err, o.Seed, c.dir)
	}
	res.Header = resultfile.Header{Experiment: Kind, Kind: Kind, Start: began.UTC()}
	res.ElapsedSeconds = time.Since(began).Seconds()
	res.Dir = resultfile.RelativePaths(c.dir)
	if !o.KeepDir {
		removeData(c.dir)
	}
	return res, nil
}

// removeData removes the run's data directories and keeps its logs (the
// files at its top). A failure leaves data behind, which costs disk
// only: it is not the run's verdict.
func removeData(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// runner is one Run's state; its methods run on Run's goroutine.
type runner struct {
	o     *Options
	c     *cluster
	l     *killloop.Ledger
	rng   *rand.Rand
	ld    *load
	admin *client.Admin
	ctl   *ctlclient.Client
	self  *selfWatch
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	o, c := r.o, r.c
	if err := c.startAll(); err != nil {
		return nil, err
	}
	var err error
	if r.admin, err = client.NewAdmin(killloop.ClientOptions(c.namesrv.addr)); err != nil {
		return nil, err
	}
	if r.ctl, err = ctlclient.New(ctlclient.Options{Addrs: c.ctlAddrs()}); err != nil {
		return nil, err
	}
	m, err := r.awaitMaster(ctx, o.StartTimeout)
	if err != nil {
		return nil, err
	}
	// The slaves copy the topic from the master.
	if err := killloop.CreateTopic(ctx, c.namesrv.addr, c.brokers[m].addr, o.Queues, o.StartTimeout); err != nil {
		return nil, err
	}
	addrs := make([]string, replicas)
	for i, b := range c.brokers {
		addrs[i] = b.addr
	}
	if r.ld, err = startLoad(o, c.namesrv.addr, addrs, r.l); err != nil {
		return nil, err
	}
	if _, err := r.awaitAck(ctx, 0, time.Now().Add(-time.Hour), "", o.StartTimeout); err != nil {
		return nil, err
	}
	if _, err := r.awaitSettled(ctx, o.StartTimeout); err != nil {
		return nil, err
	}
	order := r.faultOrder()
	res := &Result{Config: o.String(), Seed: o.Seed}
	for i := range o.Cycles {
		cy, err := r.cycle(ctx, i+1, order[i%len(order)])
		if err != nil {
			return nil, fmt.Errorf("cycle %d (%s): %w", i+1, order[i%len(order)], err)
		}
		res.Cycles = append(res.Cycles, cy)
		cut := ""
		if cy.TailCutBytes > 0 {
			cut = fmt.Sprintf(" (%d bytes of its tail)", cy.TailCutBytes)
		}
		lab.Progressf(o.Progress, "  cycle %d: %s %s%s: recovered in %.0f ms, longest send gap %.0f ms from +%.0f ms, settled in %.0f ms, %d not acknowledged, %d failed (harness: late %.0f ms, GC CPU %.0f ms)\n",
			cy.Cycle, cy.Fault, cy.Target, cut, cy.RecoveryMs, cy.GapMs, cy.GapAtMs, cy.SettleMs, cy.NotAcked, cy.SendErrors, cy.HarnessLateMs, cy.HarnessGCMs)
	}
	// The last state runs a while too, then the load stops.
	if err := lab.Sleep(ctx, o.MinUp); err != nil {
		return nil, err
	}
	if err := r.ld.Stop(loadStopTimeout); err != nil {
		return nil, err
	}
	if _, err := r.awaitSettled(ctx, o.RecoveryTimeout); err != nil {
		return nil, err
	}
	n, short, err := killloop.ReadBack(ctx, c.namesrv.addr, o.Queues, r.l, o.ReadTimeout)
	if err != nil {
		return nil, fmt.Errorf("read-back: %w\n%s", err, c.tails(c.brokers[:], 15))
	}
	res.judge(r.l, n, short, r.ld.acksCopy(), r.ld.samplesCopy())
	lab.Progressf(o.Progress, "%s\n", res.Summary())
	return res, nil
}

// faultOrder is a seeded shuffle of o.Faults.
func (r *runner) faultOrder() []string {
	out := append([]string(nil), r.o.Faults...)
	r.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// roles asks every running broker for its controller-mode state; a
// broker that does not answer is left out.
func (r *runner) roles(ctx context.Context) map[int]brokerRole {
	out := map[int]brokerRole{}
	for i, b := range r.c.brokers {
		if b.p == nil || !b.p.Alive() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := r.admin.BrokerStats(sctx, b.addr, "ha")
		cancel()
		if err != nil {
			continue
		}
		if s, ok := roleStateOf(st); ok {
			out[i] = s
		}
	}
	return out
}

// awaitMaster waits for a writable master and returns its index.
func (r *runner) awaitMaster(ctx context.Context, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		for i, s := range r.roles(ctx) {
			if s.master && s.writable {
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("%w after %v\n%s", errNoMaster, timeout, r.c.tails(r.c.brokers[:], 10))
		}
		if err := lab.Sleep(ctx, 100*time.Millisecond); err != nil {
			return -1, err
		}
	}
}

// awaitSettled waits until a writable master lists every replica in its
// sync-state set and every other replica answers as a slave of its
// epoch, so that the next fault starts from a whole cluster.
func (r *runner) awaitSettled(ctx context.Context, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	var last map[int]brokerRole
	for {
		last = r.roles(ctx)
		if m, ok := settled(last); ok {
			return m, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("the cluster did not settle (a writable master with all %d replicas in sync) within %v: %+v\n%s",
				replicas, timeout, last, r.c.tails(r.c.brokers[:], 10))
		}
		if err := lab.Sleep(ctx, 100*time.Millisecond); err != nil {
			return -1, err
		}
	}
}

func settled(rs map[int]brokerRole) (int, bool) {
	if len(rs) < replicas {
		return -1, false
	}
	m := -1
	for i, s := range rs {
		if s.master {
			if m >= 0 || !s.writable || s.syncSet < replicas {
				return -1, false
			}
			m = i
		}
	}
	if m < 0 {
		return -1, false
	}
	for i, s := range rs {
		if i != m && s.epoch != rs[m].epoch {
			return -1, false
		}
	}
	return m, true
}

// awaitAck waits for the first acknowledgement after t by a broker other
// than gone ("" any broker) and returns the time since t; mark (load.mark)
// was taken before t.
func (r *runner) awaitAck(ctx context.Context, mark int, t time.Time, gone string, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		if d, ok := RecoveredAfter(r.ld.acksSince(mark), t, gone); ok {
			return d, nil
		}
		if time.Now().After(deadline) {
			what := "any broker"
			if gone != "" {
				what = "a broker other than " + gone
			}
			return 0, fmt.Errorf("no send acknowledged by %s within %v of the fault\n%s", what, timeout, r.c.tails(r.c.brokers[:], 15))
		}
		if err := lab.Sleep(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
}
