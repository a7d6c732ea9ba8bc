package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/controller/raftctl"
)

// ctlCluster is the fail-over controller: three replicas of
// controller/raftctl (the state machine, hashicorp/raft, the leader's tick
// loop: the code a real controller runs) on raft's in-memory transport
// and stores, so that they run inside the synctest bubble. Raft's
// connections follow the Net: a replica sends to another only while the
// Net links them both ways (syncLinks). A replica's crash keeps its log
// and stable store (bolt syncs each write) and drops the rest.
type ctlCluster struct {
	// mu guards the replicas' nodes: the brokers' calls read them, the
	// schedule crashes and restarts them.
	mu    sync.Mutex
	net   *Net
	cfg   controller.Config
	lg    *slog.Logger
	peers []raftctl.Peer
	reps  []*ctlReplica
}

// ctlReplica is one controller replica: its node while up, its Raft
// state across crashes.
type ctlReplica struct {
	name  string
	node  *raftctl.Node // nil while down
	trans *raft.InmemTransport
	store *raft.InmemStore
	snaps *raft.InmemSnapshotStore
}

const ctlReplicas = 3

func ctlName(i int) string { return fmt.Sprintf("c%d", i+1) }

func newCtlCluster(n *Net, cfg controller.Config, lg *slog.Logger) (*ctlCluster, error) {
	c := &ctlCluster{net: n, cfg: cfg, lg: lg}
	for i := 0; i < ctlReplicas; i++ {
		name := ctlName(i)
		c.peers = append(c.peers, raftctl.Peer{ID: name, RaftAddr: name + ":9878", RPCAddr: name + ":9876"})
		c.reps = append(c.reps, &ctlReplica{name: name, store: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()})
	}
	for i := range c.reps {
		if err := c.start(i); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// start opens replica i on its Raft state.
func (c *ctlCluster) start(i int) error {
	rp := c.reps[i]
	_, rp.trans = raft.NewInmemTransport(raft.ServerAddress(c.peers[i].RaftAddr))
	node, err := raftctl.OpenWith(raftctl.Options{ID: rp.name, Peers: c.peers, Controller: c.cfg,
		Logger: c.lg, RaftLogOutput: io.Discard, RaftLogLevel: "off",
		// A real controller's defaults, but for the tick: every 20 ms
		// instead of 100 costs nothing in virtual time.
		TickInterval: 20 * time.Millisecond},
		raftctl.RaftParts{Transport: rp.trans, Logs: rp.store, Stable: rp.store, Snapshots: rp.snaps})
	if err != nil {
		return fmt.Errorf("sim: controller %s: %w", rp.name, err)
	}
	c.mu.Lock()
	rp.node = node
	c.mu.Unlock()
	c.syncLinks()
	return nil
}

// crash stops replica i (its Raft log and term survive, as on disk).
func (c *ctlCluster) crash(i int) {
	rp := c.reps[i]
	c.mu.Lock()
	node := rp.node
	rp.node = nil
	c.mu.Unlock()
	if node == nil {
		return
	}
	_ = node.Close() // the error is Raft's shutdown's: nothing to do for a crash
	_ = rp.trans.Close()
	c.syncLinks()
}

// syncLinks connects each pair of up replicas' transports while the Net
// links them both ways, and disconnects the rest.
func (c *ctlCluster) syncLinks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, a := range c.reps {
		if a.node == nil {
			continue
		}
		for j, b := range c.reps {
			if i == j {
				continue
			}
			addr := raft.ServerAddress(c.peers[j].RaftAddr)
			if b.node != nil && c.net.Linked(a.name, b.name) && c.net.Linked(b.name, a.name) {
				a.trans.Connect(addr, b.trans)
			} else {
				a.trans.Disconnect(addr)
			}
		}
	}
}

// leader is the index of the replica that is Raft leader now, -1 if none.
// (Two may think they lead for a moment across a partition.)
func (c *ctlCluster) leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, rp := range c.reps {
		if rp.node != nil && rp.node.IsLeader() {
			return i
		}
	}
	return -1
}

func (c *ctlCluster) close() {
	for i := range c.reps {
		c.crash(i)
	}
}

// errUnreachable: no controller replica answered from where the caller
// stands.
var errUnreachable = errors.New("sim: no controller leader reachable")

// call sends one request from broker node from to the controller as
// package ctlclient does: to each replica in turn, the one that led last
// first, until one that leads answers. A replica the Net does not link
// from `from` never sees the request; one that answers across a one-way
// cut back has applied it, and the answer is lost.
func (c *ctlCluster) call(from string, dead *atomic.Bool, last *int, do func(n *raftctl.Node) (controller.Result, error)) (controller.Result, error) {
	none := controller.Result{MasterID: controller.NoMaster}
	for k := 0; k < len(c.reps); k++ {
		if dead.Load() {
			return none, errUnreachable
		}
		i := (*last + k) % len(c.reps)
		rp := c.reps[i]
		c.mu.Lock()
		node := rp.node
		c.mu.Unlock()
		if node == nil || !c.net.Linked(from, rp.name) {
			continue
		}
		r, err := do(node)
		if errors.Is(err, raftctl.ErrNotLeader) || errors.Is(err, raftctl.ErrClosed) {
			continue
		}
		if !c.net.Linked(rp.name, from) || dead.Load() {
			return none, fmt.Errorf("sim: %s's answer to %s lost: %w", rp.name, from, errUnreachable)
		}
		*last = i
		return r, err
	}
	return none, errUnreachable
}

// ctlClient is one broker's view of the controller. A dead process
// sends nothing.
type ctlClient struct {
	c    *ctlCluster
	from string
	last int
	dead *atomic.Bool
}

func (k *ctlClient) register(ctx context.Context, r controller.RegisterBroker) (controller.Result, error) {
	return k.c.call(k.from, k.dead, &k.last, func(n *raftctl.Node) (controller.Result, error) { return n.Register(ctx, r) })
}

func (k *ctlClient) heartbeat(ctx context.Context, h controller.Heartbeat) (controller.Result, error) {
	return k.c.call(k.from, k.dead, &k.last, func(n *raftctl.Node) (controller.Result, error) { return n.Heartbeat(ctx, h) })
}

func (k *ctlClient) alter(ctx context.Context, a controller.AlterSyncStateSet) (controller.Result, error) {
	return k.c.call(k.from, k.dead, &k.last, func(n *raftctl.Node) (controller.Result, error) { return n.AlterSyncStateSet(ctx, a) })
}
