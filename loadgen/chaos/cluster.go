package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/controller/ctlclient"
	"github.com/samsamq/samsa/internal/freeport"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// replicas is the number of controllers and of broker replicas.
const replicas = 3

// node is one process of the cluster and how to start it again.
type node struct {
	name string // ctl-1, broker-2, namesrv
	args []string
	addr string // the address it listens on (a controller's RPC address)
	p    *killloop.Proc
}

// cluster is the run's processes on loopback: three controllers, a name
// server and three replicas of one broker group in controller mode. Each
// broker reaches each controller through a Partition of its own, so its
// controller links can be cut alone. Its methods run on Run's goroutine.
type cluster struct {
	o       *Options
	bin     string
	dir     string
	namesrv *node
	ctls    [replicas]*node
	brokers [replicas]*node
	// ctlLinks[b][c] carries broker b's connections to controller c (its
	// controllerAddr); ctlShared[c] is controller c's advertised address,
	// where a leader hint sends every broker (the peer list names it;
	// --listen is the real one). A cut of broker b cuts its ctlLinks and
	// its process's connections through ctlShared.
	ctlLinks  [replicas][replicas]*Partition
	ctlShared [replicas]*Partition
	// lookupErrs counts failed /proc lookups of ctlShared cuts.
	lookupErrs atomic.Int64
}

// newCluster makes the run's dir, picks the ports and opens the proxies;
// it starts nothing.
func newCluster(o *Options) (*cluster, error) {
	dir, err := killloop.RunDir(o.Dir, "chaos-")
	if err != nil {
		return nil, err
	}
	ps, err := freeport.Get(1 + 2*replicas + 2*replicas)
	if err != nil {
		return nil, err
	}
	c := &cluster{o: o, bin: o.Binary, dir: dir}
	c.namesrv = &node{name: "namesrv", addr: killloop.Addr(ps[0]), args: []string{"namesrv", "-listen", killloop.Addr(ps[0]), "-log-level", "warn"}}
	var peers []string
	for i := range replicas {
		raft, rpc := killloop.Addr(ps[1+2*i]), killloop.Addr(ps[2+2*i])
		shared, err := NewPartition("127.0.0.1:0", rpc)
		if err != nil {
			c.close()
			return nil, err
		}
		c.ctlShared[i] = shared
		peers = append(peers, fmt.Sprintf("%d=%s@%s", i+1, raft, shared.Addr()))
		c.ctls[i] = &node{name: fmt.Sprintf("ctl-%d", i+1), addr: rpc}
	}
	for i := range replicas {
		c.ctls[i].args = []string{"controller", "--id", strconv.Itoa(i + 1), "--peers", strings.Join(peers, ","),
			"--listen", c.ctls[i].addr,
			"--data-dir", filepath.Join(dir, c.ctls[i].name), "--election-timeout", o.ElectionTimeout.String(), "--log-level", "info"}
		if o.RaftTimeout != 0 {
			c.ctls[i].args = append(c.ctls[i].args, "--raft-heartbeat-timeout", o.RaftTimeout.String(),
				"--raft-election-timeout", o.RaftTimeout.String())
		}
	}
	for b := range replicas {
		var links []string
		for k := range replicas {
			p, err := NewPartition("127.0.0.1:0", c.ctls[k].addr)
			if err != nil {
				c.close()
				return nil, err
			}
			c.ctlLinks[b][k] = p
			links = append(links, p.Addr())
		}
		port, ha := ps[1+2*replicas+2*b], ps[2+2*replicas+2*b]
		name := fmt.Sprintf("broker-%d", b+1)
		c.brokers[b] = &node{name: name, addr: killloop.Addr(port), args: []string{"broker", "-n", c.namesrv.addr,
			"-dir", filepath.Join(dir, name), "-listen", "127.0.0.1", "-port", strconv.Itoa(port), "-admin", "off", "-log-level", "info",
			"-D", "brokerName=" + killloop.BrokerName, "-D", "brokerId=" + strconv.Itoa(b+1),
			"-D", "brokerRole=SYNC_MASTER", "-D", "inSyncReplicas=2", "-D", "haListenPort=" + strconv.Itoa(ha),
			// 16 MiB segments: a few seconds of load seal one, so that
			// damage-slave-kill-master finds a sealed segment to damage.
			"-D", "mappedFileSizeCommitLog=16777216",
			// Retention off (0): it must not delete what the run reads back; the
			// default deletes the oldest segments above 75% disk use (a
			// shared machine's disk got there in a run, and 466,601
			// acknowledged messages were "lost" to it).
			"-D", "diskMaxUsedSpaceRatio=0", "-D", "fileReservedTime=0",
			"-D", "enableControllerMode=true", "-D", "controllerAddr=" + strings.Join(links, ";"),
			"-D", "brokerHeartbeatInterval=" + ms(o.HeartbeatInterval),
			"-D", "controllerHeartBeatTimeoutMills=" + ms(o.ElectionTimeout),
			"-D", "haMaxTimeSlaveNotCatchup=" + ms(o.SlaveNotCatchup)}}
	}
	return c, nil
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// start (re)starts n and waits until it listens at listen.
func (c *cluster) start(n *node, listen string) error {
	p, err := killloop.StartProc(n.name, c.bin, filepath.Join(c.dir, n.name+".log"), n.args)
	if err != nil {
		return err
	}
	n.p = p
	if err := p.WaitListening(listen, c.o.StartTimeout); err != nil {
		return fmt.Errorf("%w\n%s", err, c.tail(n, 20))
	}
	return nil
}

// startEach restarts ns in order, each listening before the next starts.
func (c *cluster) startEach(ns []*node) error {
	for _, n := range ns {
		if err := c.start(n, n.addr); err != nil {
			return fmt.Errorf("restart %s: %w", n.name, err)
		}
	}
	return nil
}

// startAll starts the controllers, the name server and the brokers.
func (c *cluster) startAll() error {
	for _, n := range c.ctls {
		if err := c.start(n, n.addr); err != nil {
			return err
		}
	}
	if err := c.start(c.namesrv, c.namesrv.addr); err != nil {
		return err
	}
	for _, n := range c.brokers {
		if err := c.start(n, n.addr); err != nil {
			return err
		}
	}
	return nil
}

// kill sends n SIGKILL and waits until it is reaped.
func (c *cluster) kill(n *node) error {
	if n.p == nil || !n.p.Alive() {
		return fmt.Errorf("%s is not running", n.name)
	}
	return n.p.Kill(30 * time.Second)
}

// ctlAddrs are the controllers' RPC addresses, straight (no proxy).
func (c *cluster) ctlAddrs() []string {
	out := make([]string, replicas)
	for i, n := range c.ctls {
		out[i] = n.addr
	}
	return out
}

// leader is the controller replica that says it is the Raft leader,
// asked directly; nil if none does (an election under way).
func (c *cluster) leader(ctx context.Context, cli *ctlclient.Client) *node {
	for _, n := range c.ctls {
		if n.p == nil || !n.p.Alive() {
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		md, err := cli.Metadata(mctx, n.addr)
		cancel()
		if err == nil && md.IsLeader {
			return n
		}
	}
	return nil
}

// awaitLeader waits up to timeout for a controller leader.
func (c *cluster) awaitLeader(ctx context.Context, cli *ctlclient.Client, timeout time.Duration) (*node, error) {
	deadline := time.Now().Add(timeout)
	for {
		if n := c.leader(ctx, cli); n != nil {
			return n, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no controller replica is the Raft leader after %v\n%s", timeout, c.tails(c.ctls[:], 10))
		}
		if err := lab.Sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// cutBroker cuts (or heals) broker b's links to every controller: its
// own proxies, and its process's connections through the advertised ones.
func (c *cluster) cutBroker(b int, cut bool) {
	for _, p := range c.ctlLinks[b] {
		if cut {
			p.Cut()
		} else {
			p.Heal()
		}
	}
	for _, p := range c.ctlShared {
		if cut {
			p.CutFrom(ownedBy(c.brokers[b].p.Pid(), &c.lookupErrs))
		} else {
			p.Heal()
		}
	}
}

// close kills every process still running and closes the proxies.
func (c *cluster) close() {
	var all []*node
	all = append(all, c.brokers[:]...)
	all = append(all, c.namesrv)
	all = append(all, c.ctls[:]...)
	for _, n := range all {
		if n != nil && n.p != nil {
			_ = n.p.Resume() // a paused process takes SIGKILL anyway; this is for its reaper
			if n.p.Alive() {
				_ = n.p.Kill(30 * time.Second)
			}
		}
	}
	for b := range c.ctlLinks {
		for _, p := range c.ctlLinks[b] {
			if p != nil {
				_ = p.Close() // the run is over: a proxy's listener close changes nothing
			}
		}
	}
	for _, p := range c.ctlShared {
		if p != nil {
			_ = p.Close()
		}
	}
}

// tail is the last lines of n's log, headed by its name.
func (c *cluster) tail(n *node, lines int) string {
	t, err := killloop.Tail(filepath.Join(c.dir, n.name+".log"), lines)
	if err != nil {
		return n.name + ": " + err.Error()
	}
	return n.name + ".log (last lines):\n" + t
}

func (c *cluster) tails(ns []*node, lines int) string {
	var out []string
	for _, n := range ns {
		out = append(out, c.tail(n, lines))
	}
	return strings.Join(out, "\n")
}

var errNoMaster = errors.New("no broker is a writable master")
