package raftctl_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/controller/ctlclient"
	"github.com/samsamq/samsa/controller/raftctl"
	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/internal/netx/netxtest"
	"github.com/samsamq/samsa/internal/testutil"
	"github.com/samsamq/samsa/protocol"
)

// brokerSide is what the broker needs of a controller client.
type brokerSide interface {
	RegisterBroker(ctx context.Context, c controller.RegisterBroker) (controller.Result, error)
	Heartbeat(ctx context.Context, c controller.Heartbeat) (controller.Result, error)
	AlterSyncStateSet(ctx context.Context, c controller.AlterSyncStateSet) (controller.Result, error)
	Close() error
}

var _ brokerSide = (*ctlclient.Client)(nil)

const wait = 60 * time.Second // generous: two shared cores, -race

type replica struct {
	opts raftctl.Options
	node *raftctl.Node
}

type cluster struct {
	t     *testing.T
	peers []raftctl.Peer
	reps  []*replica
}

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln
		}
		if time.Now().After(deadline) {
			t.Fatalf("listen %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func baseOptions(t *testing.T) raftctl.Options {
	return raftctl.Options{
		Controller:           controller.Config{ElectionTimeout: time.Second},
		TickInterval:         50 * time.Millisecond,
		RaftHeartbeatTimeout: 500 * time.Millisecond,
		RaftElectionTimeout:  500 * time.Millisecond,
		ApplyTimeout:         10 * time.Second,
		Logger:               slog.New(slog.NewTextHandler(io.Discard, nil)),
		RaftLogOutput:        io.Discard,
	}
}

// startCluster opens n replicas on 127.0.0.1 ephemeral ports in temp dirs.
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	return startClusterWith(t, n, nil)
}

// startClusterWith lets tweak change every replica's options.
func startClusterWith(t *testing.T, n int, tweak func(*raftctl.Options)) *cluster {
	t.Helper()
	c := &cluster{t: t}
	var rafts, rpcs []net.Listener
	for i := range n {
		r, s := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
		rafts, rpcs = append(rafts, r), append(rpcs, s)
		c.peers = append(c.peers, raftctl.Peer{ID: fmt.Sprint(i + 1), RaftAddr: r.Addr().String(), RPCAddr: s.Addr().String()})
	}
	for i := range n {
		o := baseOptions(t)
		o.ID, o.Peers, o.DataDir = c.peers[i].ID, c.peers, t.TempDir()
		o.RaftListener, o.Listener = rafts[i], rpcs[i]
		if tweak != nil {
			tweak(&o)
		}
		node, err := raftctl.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		o.RaftListener, o.Listener = nil, nil
		c.reps = append(c.reps, &replica{opts: o, node: node})
	}
	t.Cleanup(func() {
		for _, r := range c.reps {
			if r.node != nil {
				closeBounded(t, r.node)
			}
		}
	})
	return c
}

func closeBounded(t *testing.T, n *raftctl.Node) {
	done := make(chan error, 1)
	go func() { done <- n.Close() }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Errorf("closing replica %s hung", n.ID())
	}
}

func (c *cluster) addrs() []string {
	var a []string
	for _, p := range c.peers {
		a = append(a, p.RPCAddr)
	}
	return a
}

// leader waits for exactly one live replica to lead.
func (c *cluster) leader() *replica {
	c.t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		var leaders []*replica
		for _, r := range c.reps {
			if r.node != nil && r.node.IsLeader() {
				leaders = append(leaders, r)
			}
		}
		if len(leaders) == 1 {
			return leaders[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no single controller leader")
	return nil
}

// eventually retries f until it returns nil or the deadline passes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: still failing after %v: %v", what, wait, err)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// heartbeater sends heartbeats for the given broker ids until stopped,
// tracking the epoch each learnt, as a broker would.
type heartbeater struct {
	mu    sync.Mutex
	alive map[int64]bool
	epoch map[int64]int64
	last  map[int64]controller.Result
	// masters is every (epoch, master) any answer named; violations lists
	// an epoch named with two masters.
	masters    map[int64]int64
	violations []string
	stop       chan struct{}
	done       chan struct{}
}

func startHeartbeats(t *testing.T, cl *ctlclient.Client, g controller.Group, ids ...int64) *heartbeater {
	h := &heartbeater{alive: map[int64]bool{}, epoch: map[int64]int64{}, last: map[int64]controller.Result{}, masters: map[int64]int64{},
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, id := range ids {
		h.alive[id] = true
		h.epoch[id] = 1
	}
	go func() {
		defer close(h.done)
		for range 100000 { // bounded; stopped long before
			select {
			case <-h.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			h.mu.Lock()
			var ids []int64
			for id, ok := range h.alive {
				if ok {
					ids = append(ids, id)
				}
			}
			h.mu.Unlock()
			slices.Sort(ids)
			for _, id := range ids {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				h.mu.Lock()
				ep := h.epoch[id]
				h.mu.Unlock()
				r, err := cl.Heartbeat(ctx, controller.Heartbeat{Group: g, ID: id, Epoch: ep})
				cancel()
				if err == nil {
					h.mu.Lock()
					h.epoch[id], h.last[id] = r.MasterEpoch, r
					if r.MasterID != controller.NoMaster {
						if prev, ok := h.masters[r.MasterEpoch]; ok && prev != r.MasterID {
							h.violations = append(h.violations, fmt.Sprintf("epoch %d has masters %d and %d", r.MasterEpoch, prev, r.MasterID))
						}
						h.masters[r.MasterEpoch] = r.MasterID
					}
					h.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(h.close)
	return h
}

func (h *heartbeater) silence(id int64) { h.set(id, false) }
func (h *heartbeater) revive(id int64)  { h.set(id, true) }

func (h *heartbeater) set(id int64, alive bool) {
	h.mu.Lock()
	h.alive[id] = alive
	h.mu.Unlock()
}

func (h *heartbeater) close() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
}

// alter sends an AlterSyncStateSet and needs the set in place after it: a
// stale set epoch is taken as success when the set is the one asked for
// (an answer lost in a controller leader change, the alter retried).
func alter(t *testing.T, ctx context.Context, cl *ctlclient.Client, a controller.AlterSyncStateSet) {
	t.Helper()
	r, err := cl.AlterSyncStateSet(ctx, a)
	if errors.Is(err, controller.ErrStaleSyncEpoch) {
		r, _, err = cl.Show(ctx, a.Group)
	}
	if err != nil || !slices.Equal(r.SyncSet, a.NewSet) {
		t.Fatalf("alter to %v: %s %v", a.NewSet, r, err)
	}
}

func TestClusterFailover(t *testing.T) {
	// An election timeout well above the heartbeat interval (100 ms): a
	// busy machine must not take a live master for dead.
	c := startClusterWith(t, 3, func(o *raftctl.Options) {
		o.Controller.ElectionTimeout = 2 * time.Second
		o.TickInterval = 50 * time.Millisecond
	})
	c.leader()
	// Attempts bounded by ctx (wait), not by count: -race on a busy machine.
	cl, err := ctlclient.New(ctlclient.Options{Addrs: c.addrs(), MaxAttempts: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	g := controller.Group{Cluster: "c", Broker: "b"}
	ctx := ctxT(t)

	// Register a group: the first replica becomes master at epoch 1.
	for id := int64(0); id < 3; id++ {
		r, err := cl.RegisterBroker(ctx, controller.RegisterBroker{Group: g, ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", 10911+id)})
		if err != nil {
			t.Fatalf("register %d: %v", id, err)
		}
		if r.MasterID != 0 || r.MasterEpoch != 1 {
			t.Fatalf("register %d: %s", id, r)
		}
	}
	alter(t, ctx, cl, controller.AlterSyncStateSet{Group: g, From: 0, MasterEpoch: 1, NewSet: []int64{0, 1, 2}, SyncSetEpoch: 1})
	// A refused command comes back with its Result and a matching error.
	r, err := cl.AlterSyncStateSet(ctx, controller.AlterSyncStateSet{Group: g, From: 1, MasterEpoch: 1, NewSet: []int64{1}, SyncSetEpoch: 2})
	if !errors.Is(err, controller.ErrNotMaster) || !r.Fenced || r.MasterID != 0 {
		t.Fatalf("alter from a slave: %s %v", r, err)
	}
	if _, err := cl.Heartbeat(ctx, controller.Heartbeat{Group: controller.Group{Cluster: "c", Broker: "nope"}, ID: 0}); !errors.Is(err, controller.ErrUnknownGroup) {
		t.Fatalf("heartbeat of an unknown group: %v", err)
	}
	hb := startHeartbeats(t, cl, g, 0, 1, 2)

	// Kill the controller leader: a new one leads with the same state, the
	// client follows it, and no master change happens (heartbeats go on).
	old := c.leader()
	closeBounded(t, old.node)
	old.node = nil
	// A call right after the loss follows the new leader by itself.
	if r, err := cl.Heartbeat(ctx, controller.Heartbeat{Group: g, ID: 1, Epoch: 1}); err != nil || r.MasterID != 0 {
		t.Fatalf("heartbeat across the controller leader change: %s %v", r, err)
	}
	nl := c.leader()
	if nl == old {
		t.Fatal("the closed replica still leads")
	}
	eventually(t, "show on the new leader", func() error {
		r, reps, err := cl.Show(ctx, g)
		if err != nil {
			return err
		}
		if r.MasterID != 0 || r.MasterEpoch != 1 || !slices.Equal(r.SyncSet, []int64{0, 1, 2}) || len(reps) != 3 {
			return fmt.Errorf("state after the leader change: %s %v", r, reps)
		}
		return nil
	})
	alter(t, ctx, cl, controller.AlterSyncStateSet{Group: g, From: 0, MasterEpoch: 1, NewSet: []int64{0, 1}, SyncSetEpoch: 2})

	// The master's heartbeats stop: the in-sync slave 1 (not 2, out of
	// the set) is elected, at epoch 2 (3 if a controller leader change
	// left the group without a master for a moment).
	hb.silence(0)
	eventually(t, "a new master", func() error {
		r, _, err := cl.Show(ctx, g)
		if err != nil {
			return err
		}
		if r.MasterID == 0 {
			return fmt.Errorf("still %s", r)
		}
		if r.MasterID != 1 || r.MasterEpoch < 2 || !slices.Equal(r.SyncSet, []int64{1}) {
			t.Fatalf("wrong election: %s", r)
		}
		return nil
	})
	eventually(t, "slave 2 told of the new master", func() error {
		hb.mu.Lock()
		defer hb.mu.Unlock()
		if r := hb.last[2]; r.MasterID != 1 || r.Role != controller.RoleSlave {
			return fmt.Errorf("broker 2 last heard %s", r)
		}
		return nil
	})
	// The old master comes back with epoch 1: fenced, follow 1 at 2.
	r, err = cl.Heartbeat(ctx, controller.Heartbeat{Group: g, ID: 0, Epoch: 1})
	if err != nil || !r.Fenced || r.MasterID != 1 || r.Role != controller.RoleSlave {
		t.Fatalf("old master's heartbeat: %s %v", r, err)
	}
	// Every live replica converges on the same state.
	want, _, _ := cl.Show(ctx, g)
	for _, rep := range c.reps {
		if rep.node == nil {
			continue
		}
		eventually(t, "replica "+rep.node.ID()+" converges", func() error {
			got, err := rep.node.LocalShow(g)
			if err != nil || got.String() != want.String() {
				return fmt.Errorf("%s %v, want %s", got, err, want)
			}
			return nil
		})
	}
}

// TestFollowerAnswers checks the wire: a follower answers a write with
// CONTROLLER_NOT_LEADER naming the leader, and a request without our
// dialect (a Java broker's) gets REQUEST_CODE_NOT_SUPPORTED.
func TestFollowerAnswers(t *testing.T) {
	c := startCluster(t, 3)
	send := func(addr string, req *protocol.Command) *protocol.Command {
		t.Helper()
		nc, err := net.DialTimeout("tcp", addr, wait)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(wait))
		req.Opaque = 7
		b, _ := protocol.AppendCommand(nil, req)
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
		resp, err := protocol.ReadCommand(bufio.NewReader(nc), 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	body := []byte(`{"Group":{"Cluster":"c","Broker":"b"},"ID":0,"Addr":"127.0.0.1:1","Epoch":0}`)
	ours := map[string]string{raftctl.ExtDialect: raftctl.DialectJSON1}
	var ld *replica
	eventually(t, "follower names the leader", func() error {
		// Leadership may move on a busy machine: look again each time.
		ld = c.leader()
		follower := c.reps[(idx(c, ld)+1)%len(c.reps)]
		resp := send(follower.node.Addr(), protocol.NewRequest(protocol.ControllerRegisterBroker, ours, body))
		if resp.Code != protocol.ControllerNotLeader {
			return fmt.Errorf("code %d %s", resp.Code, resp.Remark)
		}
		if got := resp.ExtFields[raftctl.ExtLeaderAddr]; got != ld.node.Addr() {
			return fmt.Errorf("leader address %q, want %q", got, ld.node.Addr())
		}
		return nil
	})
	ld = c.leader()
	java := map[string]string{"brokerName": "b", "clusterName": "c", "brokerAddress": "127.0.0.1:1"}
	if resp := send(ld.node.Addr(), protocol.NewRequest(protocol.ControllerRegisterBroker, java, nil)); resp.Code != protocol.RequestCodeNotSupported {
		t.Fatalf("java broker's request: code %d %s", resp.Code, resp.Remark)
	}
	if resp := send(ld.node.Addr(), protocol.NewRequest(protocol.ControllerRegisterBroker, ours, []byte(`{"Bogus":1}`))); resp.Code != protocol.ControllerInvalidRequest {
		t.Fatalf("bad body: code %d %s", resp.Code, resp.Remark)
	}
	if resp := send(ld.node.Addr(), protocol.NewRequest(protocol.SendMessage, ours, nil)); resp.Code != protocol.RequestCodeNotSupported {
		t.Fatalf("unknown code: code %d %s", resp.Code, resp.Remark)
	}
	eventually(t, "register on the leader", func() error {
		if resp := send(c.leader().node.Addr(), protocol.NewRequest(protocol.ControllerRegisterBroker, ours, body)); resp.Code != protocol.Success {
			return fmt.Errorf("code %d %s", resp.Code, resp.Remark)
		}
		return nil
	})
}

// TestSingleReplicaRestart: a one-replica controller (samsa dev) leads at
// once; after a snapshot, more commands and a restart on the same data
// dir, it has the same state (snapshot restored, later log replayed).
func TestSingleReplicaRestart(t *testing.T) {
	ln, rpc := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
	o := baseOptions(t)
	o.ID, o.DataDir = "1", t.TempDir()
	o.Peers = []raftctl.Peer{{ID: "1", RaftAddr: ln.Addr().String(), RPCAddr: rpc.Addr().String()}}
	o.RaftListener, o.Listener = ln, rpc
	n, err := raftctl.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	g := controller.Group{Cluster: "c", Broker: "b"}
	reg := func(n *raftctl.Node, id int64) {
		t.Helper()
		eventually(t, "register", func() error {
			_, err := n.Register(ctx, controller.RegisterBroker{Group: g, ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", 20000+id), Epoch: 0})
			return err
		})
	}
	reg(n, 4)
	reg(n, 5)
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AlterSyncStateSet(ctx, controller.AlterSyncStateSet{Group: g, From: 4, MasterEpoch: 1, NewSet: []int64{4, 5}, SyncSetEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	want, _ := n.LocalShow(g)
	closeBounded(t, n)

	o.RaftListener, o.Listener = listen(t, o.Peers[0].RaftAddr), listen(t, o.Peers[0].RPCAddr)
	n, err = raftctl.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer closeBounded(t, n)
	eventually(t, "state after restart", func() error {
		got, err := n.LocalShow(g)
		if err != nil || got.String() != want.String() {
			return fmt.Errorf("%s %v, want %s", got, err, want)
		}
		return nil
	})
	cl, err := ctlclient.New(ctlclient.Options{Addrs: []string{o.Peers[0].RPCAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	eventually(t, "heartbeat after restart", func() error {
		r, err := cl.Heartbeat(ctx, controller.Heartbeat{Group: g, ID: 5, Epoch: 1})
		if err == nil && r.Role != controller.RoleSlave {
			return fmt.Errorf("role %s", r.Role)
		}
		return err
	})
}

func TestParsePeers(t *testing.T) {
	ps, err := raftctl.ParsePeers("1=127.0.0.1:9001@127.0.0.1:9101, 2=h2:9001@h2:9101")
	if err != nil || len(ps) != 2 || ps[1] != (raftctl.Peer{ID: "2", RaftAddr: "h2:9001", RPCAddr: "h2:9101"}) {
		t.Fatalf("%v %v", ps, err)
	}
	if got := raftctl.FormatPeers(ps); got != "1=127.0.0.1:9001@127.0.0.1:9101,2=h2:9001@h2:9101" {
		t.Fatal(got)
	}
	for _, bad := range []string{"", "1=a:1", "1=a:1@b:2,1=c:1@d:2", "1=a@b:2", "=a:1@b:2", "1=0.0.0.0:1@h:2", "1=h:1@:2", "1=a:1@b:2,2=a:1@c:3"} {
		if _, err := raftctl.ParsePeers(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestLaggingReplicaInstallsSnapshot: a replica away while the log was
// compacted behind a snapshot catches up by installing the snapshot
// (fsm.Restore over the network) and has the leader's state.
func TestLaggingReplicaInstallsSnapshot(t *testing.T) {
	var raftLog syncBuffer
	c := startClusterWith(t, 3, func(o *raftctl.Options) {
		o.TrailingLogs = 2
		o.RaftLogOutput, o.RaftLogLevel = &raftLog, "info"
	})
	ld := c.leader()
	var away *replica
	for _, r := range c.reps {
		if r != ld {
			away = r
			break
		}
	}
	closeBounded(t, away.node)
	away.node = nil
	ctx := ctxT(t)
	var groups []controller.Group
	for i := range 10 {
		g := controller.Group{Cluster: "c", Broker: fmt.Sprintf("b%d", i)}
		groups = append(groups, g)
		eventually(t, "register", func() error {
			ld := c.leader()
			_, err := ld.node.Register(ctx, controller.RegisterBroker{Group: g, ID: 0, Addr: "127.0.0.1:1"})
			return err
		})
	}
	// Both live replicas snapshot and compact, so whichever leads when the
	// replica returns must send it a snapshot.
	for _, r := range c.reps {
		if r.node != nil {
			if err := r.node.Snapshot(); err != nil {
				t.Fatalf("snapshot on %s: %v", r.node.ID(), err)
			}
		}
	}
	o := away.opts
	o.RaftListener, o.Listener = listen(t, o.Peers[idx(c, away)].RaftAddr), listen(t, o.Peers[idx(c, away)].RPCAddr)
	n, err := raftctl.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	away.node = n
	for _, g := range groups {
		eventually(t, "caught up "+g.String(), func() error {
			got, err := n.LocalShow(g)
			if err != nil || got.MasterID != 0 || got.MasterEpoch != 1 {
				return fmt.Errorf("%s %v", got, err)
			}
			return nil
		})
	}
	// raft logs the install just after the FSM restored it.
	eventually(t, "the snapshot install logged", func() error {
		if !strings.Contains(raftLog.String(), "Installed remote snapshot") {
			return errors.New("the replica caught up without installing a snapshot")
		}
		return nil
	})
}

// syncBuffer is a bytes.Buffer safe for raft's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func idx(c *cluster, r *replica) int {
	for i, x := range c.reps {
		if x == r {
			return i
		}
	}
	return -1
}

// TestACL: with an ACL, unsigned and non-admin requests are refused with
// NO_PERMISSION, an admin account's go through, and metadata needs only
// a valid account.
func TestACL(t *testing.T) {
	cfg, err := acl.Parse([]byte("accounts:\n  - accessKey: brokerAdmin\n    secretKey: 12345678\n    admin: true\n  - accessKey: plainUser\n    secretKey: 12345678\n    admin: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	store := acl.NewStatic(cfg)
	defer store.Close()
	c := startClusterWith(t, 1, func(o *raftctl.Options) { o.ACL = store })
	c.leader()
	ctx := ctxT(t)
	g := controller.Group{Cluster: "c", Broker: "b"}
	reg := controller.RegisterBroker{Group: g, ID: 0, Addr: "127.0.0.1:1"}
	for _, who := range []struct{ ak, sk string }{{"", ""}, {"plainUser", "12345678"}, {"brokerAdmin", "wrongwrong"}} {
		cl, _ := ctlclient.New(ctlclient.Options{Addrs: c.addrs(), AccessKey: who.ak, SecretKey: who.sk})
		_, err := cl.RegisterBroker(ctx, reg)
		cl.Close()
		var re *raftctl.RemoteError
		if !errors.As(err, &re) || re.Code != protocol.NoPermission {
			t.Fatalf("account %q: %v, want NO_PERMISSION", who.ak, err)
		}
	}
	plain, _ := ctlclient.New(ctlclient.Options{Addrs: c.addrs(), AccessKey: "plainUser", SecretKey: "12345678"})
	defer plain.Close()
	if md, err := plain.Metadata(ctx, c.addrs()[0]); err != nil || !md.IsLeader {
		t.Fatalf("metadata for a plain account: %+v %v", md, err)
	}
	admin, _ := ctlclient.New(ctlclient.Options{Addrs: c.addrs(), AccessKey: "brokerAdmin", SecretKey: "12345678"})
	defer admin.Close()
	eventually(t, "admin registers", func() error {
		_, err := admin.RegisterBroker(ctx, reg)
		return err
	})
}

// TestTLS: with TLS enforcing, a client with the CA is served and a plain
// one is not.
func TestTLS(t *testing.T) {
	certs := netxtest.New(t)
	c := startClusterWith(t, 1, func(o *raftctl.Options) {
		o.TLS = netx.TLSServerOptions{Mode: netx.TLSEnforcing, CertFile: certs.ServerCertFile, KeyFile: certs.ServerKey}
	})
	c.leader()
	ctx := ctxT(t)
	g := controller.Group{Cluster: "c", Broker: "b"}
	secure, _ := ctlclient.New(ctlclient.Options{Addrs: c.addrs(), TLS: certs.ClientConfig(t, false)})
	defer secure.Close()
	eventually(t, "register over TLS", func() error {
		_, err := secure.RegisterBroker(ctx, controller.RegisterBroker{Group: g, ID: 0, Addr: "127.0.0.1:1"})
		return err
	})
	plain, _ := ctlclient.New(ctlclient.Options{Addrs: c.addrs(), MaxAttempts: 2, RetryPause: time.Millisecond})
	defer plain.Close()
	if _, _, err := plain.Show(ctx, g); err == nil {
		t.Fatal("a plain client was served by a TLS-enforcing controller")
	}
}

// restart closes replica r and opens it again on its data dir and ports.
func (c *cluster) restart(r *replica) {
	c.t.Helper()
	if r.node != nil {
		closeBounded(c.t, r.node)
		r.node = nil
	}
	o := r.opts
	self := c.peers[idx(c, r)]
	o.RaftListener, o.Listener = listen(c.t, self.RaftAddr), listen(c.t, self.RPCAddr)
	n, err := raftctl.Open(o)
	if err != nil {
		c.t.Fatal(err)
	}
	r.node = n
}

// TestRepeatedFailover runs cycles of (restart the controller leader, the
// master goes silent, a new master is elected, the old one returns and is
// fenced, the new master takes every replica into its set) and checks that
// no answer ever named two masters for one epoch, that every election
// picks a member of the sync-state set, and that the replicas converge.
func TestRepeatedFailover(t *testing.T) {
	c := startClusterWith(t, 3, func(o *raftctl.Options) {
		o.Controller.ElectionTimeout = 1500 * time.Millisecond
	})
	c.leader()
	cl, err := ctlclient.New(ctlclient.Options{Addrs: c.addrs(), MaxAttempts: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(t)
	g := controller.Group{Cluster: "c", Broker: "b"}
	ids := []int64{0, 1, 2}
	for _, id := range ids {
		if _, err := cl.RegisterBroker(ctx, controller.RegisterBroker{Group: g, ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", 10911+id)}); err != nil {
			t.Fatal(err)
		}
	}
	hb := startHeartbeats(t, cl, g, ids...)
	// takeAll: the master takes every replica into its set, as it would
	// once they caught up.
	takeAll := func() controller.Result {
		var r controller.Result
		eventually(t, "the master takes every replica", func() error {
			cur, _, err := cl.Show(ctx, g)
			if err != nil {
				return err
			}
			if slices.Equal(cur.SyncSet, ids) {
				r = cur
				return nil
			}
			_, err = cl.AlterSyncStateSet(ctx, controller.AlterSyncStateSet{Group: g, From: cur.MasterID,
				MasterEpoch: cur.MasterEpoch, NewSet: ids, SyncSetEpoch: cur.SyncSetEpoch})
			if err == nil {
				return errors.New("altered; checking")
			}
			return err
		})
		return r
	}
	cur := takeAll()
	const cycles = 3
	for cycle := range cycles {
		c.restart(c.leader())
		old := cur.MasterID
		hb.silence(old)
		eventually(t, fmt.Sprintf("cycle %d: a new master", cycle), func() error {
			r, _, err := cl.Show(ctx, g)
			if err != nil {
				return err
			}
			if r.MasterID == old || r.MasterID == controller.NoMaster {
				return fmt.Errorf("still %s", r)
			}
			if r.MasterEpoch <= cur.MasterEpoch || !slices.Contains(cur.SyncSet, r.MasterID) {
				t.Fatalf("cycle %d: elected %s from %s", cycle, r, cur)
			}
			return nil
		})
		hb.revive(old)
		eventually(t, fmt.Sprintf("cycle %d: the old master follows", cycle), func() error {
			hb.mu.Lock()
			defer hb.mu.Unlock()
			if r := hb.last[old]; r.Role != controller.RoleSlave {
				return fmt.Errorf("old master %d last heard %s", old, r)
			}
			return nil
		})
		cur = takeAll()
	}
	hb.close()
	if len(hb.violations) > 0 {
		t.Fatalf("two masters in one epoch: %v", hb.violations)
	}
	if cur.MasterEpoch < 1+cycles {
		t.Fatalf("epoch %d after %d fail-overs", cur.MasterEpoch, cycles)
	}
	for _, rep := range c.reps {
		eventually(t, "replica "+rep.node.ID()+" converges", func() error {
			got, err := rep.node.LocalShow(g)
			if err != nil || got.String() != cur.String() {
				return fmt.Errorf("%s %v, want %s", got, err, cur)
			}
			return nil
		})
	}
}

// TestRegisterRefusesLongFenceTimeout: a broker that would keep taking
// writes, as master, longer than the controller waits before electing
// another (controllerHeartBeatTimeoutMills above the election timeout) is
// refused at registration, through the wire, with a reason naming both.
func TestRegisterRefusesLongFenceTimeout(t *testing.T) {
	c := startCluster(t, 1)
	cl, err := ctlclient.New(ctlclient.Options{Addrs: c.addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(t)
	g := controller.Group{Cluster: "c", Broker: "b"}
	et := baseOptions(t).Controller.ElectionTimeout
	_, err = cl.RegisterBroker(ctx, controller.RegisterBroker{Group: g, ID: 1, Addr: "127.0.0.1:20001", FenceTimeout: et + time.Second})
	if !errors.Is(err, controller.ErrBadCommand) || !strings.Contains(err.Error(), "controllerHeartBeatTimeoutMills") {
		t.Fatalf("register with a fence timeout above the election timeout: %v; want ErrBadCommand naming controllerHeartBeatTimeoutMills", err)
	}
	eventually(t, "register with the election timeout", func() error {
		_, err := cl.RegisterBroker(ctx, controller.RegisterBroker{Group: g, ID: 1, Addr: "127.0.0.1:20001", FenceTimeout: et})
		return err
	})
}

// TestMasterRenewalSurvivesLeaderLoss: the master's heartbeat is a
// replicated renewal that every replica records when it applies it, so the
// replica that takes over from a dead leader elects a new master one
// election timeout after the master's last renewal, not one after it took
// over. The replicas share a clock the test moves (Raft's own timers run
// on real time): it stops just past the master's timeout, less than a
// timeout after the takeover, where a leader that counted from its
// takeover would never elect.
func TestMasterRenewalSurvivesLeaderLoss(t *testing.T) {
	clk := testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := startClusterWith(t, 3, func(o *raftctl.Options) { o.Now = clk.Now })
	ctx := ctxT(t)
	g := controller.Group{Cluster: "c", Broker: "b"}
	lead := c.leader()
	for id := int64(1); id <= 3; id++ {
		eventually(t, "register", func() error {
			_, err := lead.node.Register(ctx, controller.RegisterBroker{Group: g, ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", 20000+id)})
			return err
		})
	}
	if _, err := lead.node.AlterSyncStateSet(ctx, controller.AlterSyncStateSet{Group: g, From: 1, MasterEpoch: 1, NewSet: []int64{1, 2, 3}, SyncSetEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	et := baseOptions(t).Controller.ElectionTimeout
	// Registration counted as a heartbeat of each; the renewal comes half
	// a timeout later, so no one is dead at any moment the clock shows.
	renewed := clk.Now().Add(et / 2)
	clk.Set(renewed)
	if r, err := lead.node.Heartbeat(ctx, controller.Heartbeat{Group: g, ID: 1, Epoch: 1}); err != nil || r.Role != controller.RoleMaster {
		t.Fatalf("master heartbeat: %s %v", r, err)
	}
	for _, r := range c.reps {
		eventually(t, "replica "+r.node.ID()+" applies the renewal", func() error {
			if at, ok := r.node.LocalLastHeartbeat(g, 1); !ok || !at.Equal(renewed) {
				return fmt.Errorf("master last heard at %v (%v), want %v", at, ok, renewed)
			}
			return nil
		})
	}
	// The leader dies; another takes over at renewed + et/2.
	clk.Set(renewed.Add(et / 2))
	closeBounded(t, lead.node)
	lead.node = nil
	next := c.leader()
	cl, err := ctlclient.New(ctlclient.Options{Addrs: c.addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The slaves find it; the clock moves just past the master's timeout.
	for _, id := range []int64{2, 3} {
		eventually(t, "slave heartbeat", func() error {
			_, err := cl.Heartbeat(ctx, controller.Heartbeat{Group: g, ID: id, Epoch: 1})
			return err
		})
	}
	clk.Set(renewed.Add(et + time.Millisecond))
	for _, id := range []int64{2, 3} { // heard at the new time too
		eventually(t, "slave heartbeat", func() error {
			_, err := cl.Heartbeat(ctx, controller.Heartbeat{Group: g, ID: id, Epoch: 1})
			return err
		})
	}
	eventually(t, "a slave elected", func() error {
		r, err := next.node.LocalShow(g)
		if err != nil {
			return err
		}
		if r.MasterID != 2 || r.MasterEpoch != 2 {
			return fmt.Errorf("group is %s, want master 2 at epoch 2", r)
		}
		return nil
	})
}
