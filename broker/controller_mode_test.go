package broker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/ctlrole"
	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/namesrv"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// Controller mode in process: a name server, the fake controller and
// brokers of one group, on loopback.

var ctlGroup = controller.Group{Cluster: "fo-cluster", Broker: "fo"}

// ctlCluster is a name server, a fake controller and the brokers of
// ctlGroup, by replica id.
type ctlCluster struct {
	t    *testing.T
	root string               // the replicas' stores are root/<id>
	logs map[int64]*lockedLog // each replica's log lines (all its runs)
	ns   *namesrv.Server
	ctl  *fakeController
	dirs map[int64]string
	b    map[int64]*Broker
	// notCatchup, when set, is the brokers' haMaxTimeSlaveNotCatchup
	// (default 3 s here); hbTimeout their controllerHeartBeatTimeoutMills
	// (default 1 s here).
	notCatchup, hbTimeout time.Duration
	// mutate, when set for an id, changes that replica's configuration
	// last.
	mutate map[int64]func(*Config)
}

func newCtlCluster(t *testing.T, electionTimeout time.Duration) *ctlCluster {
	root := t.TempDir() // before the cleanup below: removed after the brokers closed
	ns, err := namesrv.New(namesrv.Options{Listen: "127.0.0.1:0", Logger: quietLogger()})
	if err == nil {
		err = ns.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	c := &ctlCluster{t: t, root: root, ns: ns, ctl: newFakeController(t, electionTimeout), dirs: map[int64]string{}, b: map[int64]*Broker{},
		logs: map[int64]*lockedLog{}}
	t.Cleanup(func() {
		for _, b := range c.b {
			closeBounded(t, b)
		}
		ns.Close()
	})
	return c
}

// closeBounded closes b, failing (not hanging) the test after a minute.
func closeBounded(t *testing.T, b *Broker) {
	done := make(chan struct{})
	go func() {
		b.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Errorf("broker %s did not close within a minute", b.Addr())
	}
}

func (c *ctlCluster) config(id int64) func(*Config) {
	return func(cfg *Config) {
		cfg.BrokerClusterName, cfg.BrokerName, cfg.BrokerID = ctlGroup.Cluster, ctlGroup.Broker, id
		cfg.BrokerRole, cfg.InSyncReplicas = SyncMaster, 2
		cfg.EnableControllerMode = true
		cfg.controllerClient = c.ctl.client(id)
		cfg.NamesrvAddrs = []string{c.ns.Addr()}
		_ = cfg.Set("haListenPort", "0")
		cfg.AdminListen = "off"
		cfg.MappedFileSizeCommitLog = 1 << 20
		cfg.BrokerHeartbeatInterval = 50 * time.Millisecond
		cfg.ControllerHeartBeatTimeout = time.Second
		if c.hbTimeout != 0 {
			cfg.ControllerHeartBeatTimeout = c.hbTimeout
		}
		cfg.HASendHeartbeatInterval = 100 * time.Millisecond
		cfg.HAHousekeepingInterval = 5 * time.Second
		cfg.HAMaxTimeSlaveNotCatchup = 3 * time.Second
		if c.notCatchup != 0 {
			cfg.HAMaxTimeSlaveNotCatchup = c.notCatchup
		}
		cfg.HASlaveAckTimeout = 5 * time.Second
		cfg.RegisterNameServerPeriod = time.Second
		cfg.SlaveSyncInterval = 200 * time.Millisecond
		if c.logs[id] == nil {
			c.logs[id] = &lockedLog{}
		}
		cfg.Logger = slog.New(slog.NewTextHandler(c.logs[id], &slog.HandlerOptions{Level: slog.LevelInfo}))
		if f := c.mutate[id]; f != nil {
			f(cfg)
		}
	}
}

// lockedLog keeps log output for a test to search.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lockedLog) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.buf.String(), s)
}

// start starts (or restarts, on its old store) replica id.
func (c *ctlCluster) start(id int64) *Broker {
	dir, ok := c.dirs[id]
	if !ok {
		dir = filepath.Join(c.root, strconv.FormatInt(id, 10))
		c.dirs[id] = dir
	}
	b := startBroker(c.t, dir, c.config(id))
	c.b[id] = b
	return b
}

// kill closes replica id.
func (c *ctlCluster) kill(id int64) {
	closeBounded(c.t, c.b[id])
	delete(c.b, id)
}

// waitMaster waits until the controller and the broker agree that some
// replica other than not is master, and returns it.
func (c *ctlCluster) waitMaster(not int64) *Broker {
	var m *Broker
	waitLong(c.t, func() bool {
		r := c.ctl.show(ctlGroup)
		b := c.b[r.MasterID]
		if r.MasterID == not || b == nil || b.repl.ControllerRole() != "master" || b.repl.MasterEpoch() != r.MasterEpoch || b.repl.isSlave() {
			return false
		}
		m = b
		return true
	}, fmt.Sprintf("a master other than %d", not))
	return m
}

// startGroup starts replica 1, waits until it is master, starts
// replicas 2 to n and waits until all n are in the sync-state set; it
// returns the master.
func (c *ctlCluster) startGroup(n int64) *Broker {
	c.start(1)
	m := c.waitMaster(-1)
	for id := int64(2); id <= n; id++ {
		c.start(id)
	}
	c.waitSyncSet(int(n))
	return m
}

// waitSyncSet waits until the controller's sync-state set has n members.
func (c *ctlCluster) waitSyncSet(n int) {
	waitLong(c.t, func() bool { return len(c.ctl.show(ctlGroup).SyncSet) == n }, fmt.Sprintf("a sync-state set of %d", n))
}

// sendAcked sends body-prefixed messages through our client until n are
// acknowledged (SEND_OK), each attempt with a body of its own, and returns
// the acknowledged bodies.
func sendAcked(t *testing.T, p *client.Producer, topic, prefix string, n int) []string {
	t.Helper()
	var acked []string
	deadline := time.Now().Add(90 * time.Second)
	for i, attempt := 0, 0; len(acked) < n; attempt++ {
		if time.Now().After(deadline) {
			t.Fatalf("%s: only %d of %d sends acknowledged in 90 s", prefix, len(acked), n)
		}
		body := fmt.Sprintf("%s-%04d-a%d", prefix, i, attempt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := p.Send(ctx, &client.Message{Topic: topic, Body: []byte(body)})
		cancel()
		if err != nil || r.Status != client.SendOK {
			if attempt%50 == 0 {
				t.Logf("%s: send: %v %+v", prefix, err, r)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		acked = append(acked, body)
		i++
	}
	return acked
}

// bodies counts the bodies of every record of topic in st's queues.
func bodies(t *testing.T, st *storage.Store, topic string, queues int32) map[string]int {
	t.Helper()
	out := map[string]int{}
	for q := int32(0); q < queues; q++ {
		for off := st.MinQueueOffset(topic, q); off < st.MaxQueueOffset(topic, q); {
			g, err := st.GetMessages(topic, q, off, 256, 0, nil)
			if err != nil || len(g.Records) == 0 {
				t.Fatalf("%s/%d at %d: %v (%v)", topic, q, off, err, g.Status)
			}
			for _, raw := range g.Records {
				var r record.Record
				if err := record.DecodeUnchecked(raw, &r); err != nil {
					t.Fatal(err)
				}
				out[string(r.Body)]++
			}
			off = g.NextOffset
		}
	}
	return out
}

// TestControllerFailover: three replicas of a SYNC_MASTER group under the
// fake controller. The master is killed; a slave is elected within the
// timeout and takes sends (our client follows the routes); the old master,
// restarted with an unreplicated tail, is fenced, cuts the tail and follows;
// every acknowledged message is on the new master exactly once, and the
// old master's log is the new master's byte for byte.
func TestControllerFailover(t *testing.T) {
	c := newCtlCluster(t, 1500*time.Millisecond)
	c.start(1)
	first := c.waitMaster(-1)
	if first.cfg.BrokerID != 1 {
		t.Fatalf("first master %d, want 1 (the first to register)", first.cfg.BrokerID)
	}
	c.start(2)
	c.start(3)
	c.waitSyncSet(3)

	const topic = "failover"
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: client.ClientOptions{NameServers: []string{c.ns.Addr()},
		Logger: quietLogger(), RouteRefresh: 200 * time.Millisecond}, SendTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if resp := dialRaw(t, first.Addr()).call(createTopicReq(topic, 4)); resp.Code != protocol.Success {
		t.Fatalf("create topic: %s", resp)
	}
	acked := sendAcked(t, p, topic, "before", 100)

	// Kill the master; write a tail into its store that no slave got.
	opts := first.Store().Options()
	epoch1 := first.repl.MasterEpoch()
	oldAddr, oldHA, oldTopics := first.Addr(), first.repl.HAAddr(), first.topicWrapper()
	c.kill(1)
	// As if it had crashed: the name server still holds it as brokerId 0
	// (a clean close unregistered it). The new master's registration must
	// win (a newer stateVersion), and no slave may follow the dead one.
	oldTopics.DataVersion.StateVersion = epoch1
	staleBody, err := protocol.MarshalBody(protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: oldTopics})
	if err != nil {
		t.Fatal(err)
	}
	staleHeader := protocol.RegisterBrokerRequestHeader{BrokerName: ctlGroup.Broker, BrokerAddr: oldAddr, ClusterName: ctlGroup.Cluster,
		HAServerAddr: oldHA, BrokerID: 0, BodyCrc32: protocol.BodyCRC32(staleBody)}
	if resp := dialRaw(t, c.ns.Addr()).call(protocol.NewRequest(protocol.RegisterBroker, staleHeader.Encode(), staleBody)); resp.Code != protocol.Success {
		t.Fatalf("stale registration: %s", resp)
	}
	st, err := storage.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	tailFrom := st.WrittenOffset()
	for i := 0; i < 20; i++ {
		m := &storage.Message{Topic: topic, QueueID: 0, Body: []byte(fmt.Sprintf("diverged-%d", i)),
			BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:1"),
			StoreHost: netip.MustParseAddrPort("127.0.0.1:2")}
		if _, err := st.Append(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	tailTo := st.WrittenOffset()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	m2 := c.waitMaster(1)
	if e := m2.repl.MasterEpoch(); e != epoch1+1 {
		t.Fatalf("new master at epoch %d, want %d", e, epoch1+1)
	}
	c.waitSyncSet(2) // the other slave follows the new master and is caught up
	acked = append(acked, sendAcked(t, p, topic, "after", 100)...)

	// The old master returns: fenced, it follows and cuts its tail.
	old := c.start(1)
	waitLong(t, func() bool {
		w := m2.Store().WrittenOffset()
		return old.repl.ControllerRole() == "slave" && old.repl.MasterEpoch() == m2.repl.MasterEpoch() && old.repl.LinkStatus().Connected &&
			old.Store().WrittenOffset() == w && old.Store().HandedOffset() == w && m2.Store().HandedOffset() == w
	}, "the old master following the new one")
	if old.Store().WrittenOffset() <= tailFrom || tailTo <= tailFrom {
		t.Fatalf("test setup: the new master's log (%d) should pass the old tail [%d, %d)", old.Store().WrittenOffset(), tailFrom, tailTo)
	}
	sameCommitLog(t, m2.Store(), old.Store())
	if !c.logs[1].contains("ha: slave cut its diverged tail") {
		t.Errorf("the old master did not cut its tail by the epochs (copied afresh?)")
	}
	acked = append(acked, sendAcked(t, p, topic, "rejoined", 20)...)
	c.waitSyncSet(3)

	// Every acknowledged message is on the new master exactly once; no
	// record of the cut tail is anywhere.
	for _, b := range []*Broker{m2, old} {
		waitLong(t, func() bool {
			w := m2.Store().WrittenOffset()
			return b.Store().WrittenOffset() == w && b.Store().DispatchedOffset() == w
		}, "replication and indexing")
		got := bodies(t, b.Store(), topic, 4)
		for _, a := range acked {
			if got[a] != 1 {
				t.Errorf("broker %d: acknowledged %q read %d times, want once", b.cfg.BrokerID, a, got[a])
			}
		}
		for body := range got {
			if strings.HasPrefix(body, "diverged-") {
				t.Errorf("broker %d: the cut tail's %q is still there", b.cfg.BrokerID, body)
			}
		}
	}
	// The old master's registration as a slave; sends to it are refused.
	rc := dialRaw(t, old.Addr())
	if resp := rc.call(sendReq(topic, 0, []byte("to-a-slave"), nil)); resp.Code == protocol.Success {
		t.Fatalf("a slave took a send: %s", resp)
	}
}

// TestControllerFencing: a master cut off from the controller stops taking
// writes within controllerHeartBeatTimeoutMills; another replica is
// elected; reconnected, the old master learns it is fenced and follows,
// without a restart.
func TestControllerFencing(t *testing.T) {
	c := newCtlCluster(t, 1500*time.Millisecond)
	m1 := c.startGroup(2)
	rc := dialRaw(t, m1.Addr())
	if resp := rc.call(sendReq("fence", 0, []byte("ok"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send to the master: %s", resp)
	}
	c.ctl.setCut(1, true)
	waitLong(t, func() bool { return m1.repl.isSlave() }, "the cut-off master to stop taking writes")
	if resp := rc.call(sendReq("fence", 0, []byte("refused"), nil)); resp.Code == protocol.Success {
		t.Fatalf("a fenced master took a send: %s", resp)
	}
	m2 := c.waitMaster(1)
	c.ctl.setCut(1, false)
	waitLong(t, func() bool {
		return m1.repl.ControllerRole() == "slave" && m1.repl.MasterEpoch() == m2.repl.MasterEpoch() && m1.repl.LinkStatus().Connected
	}, "the old master following")
	if resp := rc.call(sendReq("fence", 0, []byte("refused-again"), nil)); resp.Code == protocol.Success {
		t.Fatalf("a demoted master took a send: %s", resp)
	}
	c.waitSyncSet(2)
	if resp := dialRaw(t, m2.Addr()).call(sendReq("fence", 0, []byte("new"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send to the new master: %s", resp)
	}
	// The old master's stats (its view of the set follows its next heartbeat).
	waitLong(t, func() bool {
		var out bytes.Buffer
		writeStatsTo(&out, m1, "ha")
		for _, want := range []string{"controller_role slave", fmt.Sprintf("controller_master_epoch %d", m2.repl.MasterEpoch()),
			"controller_writable 0", `controller_sync_set "1,2"`} {
			if !strings.Contains(out.String(), want) {
				return false
			}
		}
		return true
	}, "the old master's stats ha to show it a slave in the set")
}

// TestControllerModeUnreachableController: with the real client and no
// controller listening, the broker starts, takes no writes (fenced until a
// controller names it master) and closes cleanly.
func TestControllerModeUnreachableController(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := Config{StorePathRootDir: t.TempDir(), Logger: quietLogger(), BrokerRole: AsyncMaster, BrokerID: 1,
		EnableControllerMode: true, ControllerAddrs: []string{addr}}
	_ = cfg.Set("listenPort", "0")
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		b.Close()
		t.Fatal(err)
	}
	defer b.Close()
	if !b.store.Fenced() {
		t.Fatal("a replica no controller named master takes writes")
	}
}

// TestControllerSyncStateSet: a slave that goes away (its replication link
// gone) leaves the sync-state set after controllerHeartBeatTimeoutMills
// (1 s here), though haMaxTimeSlaveNotCatchup is an hour: until then a
// SYNC_MASTER send waits for it. It joins again once caught up.
func TestControllerSyncStateSet(t *testing.T) {
	c := newCtlCluster(t, 1500*time.Millisecond)
	c.notCatchup = time.Hour
	m := c.startGroup(3)
	rc := dialRaw(t, m.Addr())
	if resp := rc.call(sendReq("sss", 0, []byte("all"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send with the whole set: %s", resp)
	}
	c.kill(3)
	waitLong(t, func() bool {
		s := c.ctl.show(ctlGroup).SyncSet
		return len(s) == 2 && s[0] == 1 && s[1] == 2
	}, "slave 3 to leave the sync-state set")
	if resp := rc.call(sendReq("sss", 0, []byte("two"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send after the set shrank: %s", resp)
	}
	c.start(3)
	c.waitSyncSet(3)
	if resp := rc.call(sendReq("sss", 0, []byte("three"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send after the set grew: %s", resp)
	}
}

// TestControllerSyncStateSetDropsClosedLink: a member whose replication
// link to the master ended leaves the sync-state set at once, not after
// controllerHeartBeatTimeoutMills (ten minutes here) or
// haMaxTimeSlaveNotCatchup (an hour): a SYNC_MASTER's sends wait for every
// member, so a killed slave would stall them that long.
func TestControllerSyncStateSetDropsClosedLink(t *testing.T) {
	c := newCtlCluster(t, 20*time.Minute)
	c.notCatchup, c.hbTimeout = time.Hour, 10*time.Minute
	m := c.startGroup(3)
	c.kill(3)
	waitLong(t, func() bool {
		s := c.ctl.show(ctlGroup).SyncSet
		return len(s) == 2 && s[0] == 1 && s[1] == 2
	}, "slave 3 to leave the sync-state set once its link closed")
	rc := dialRaw(t, m.Addr())
	if resp := rc.call(sendReq("sss", 0, []byte("two"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send after the set shrank: %s", resp)
	}
}

// A send that passed the role check and met the store's fence (the role
// changed between) is refused with SERVICE_NOT_AVAILABLE, which clients
// retry elsewhere.
func TestFencedStoreAnswer(t *testing.T) {
	req := sendReq("t", 0, []byte("x"), nil)
	if r := errorResponse(req, fmt.Errorf("append: %w", storage.ErrFenced)); r.Code != protocol.ServiceNotAvailable ||
		!strings.Contains(r.Remark, "fenced") {
		t.Fatalf("answer %d %q", r.Code, r.Remark)
	}
}

// TestControllerMasterRestartIsRanked: a master restarted before the
// controller saw it gone registers again; it may have lost a tail its slave
// holds, so the controller takes its mastership away (the epoch rises) and
// elects the most up-to-date replica. Here both hold the same log: the
// lower id, the restarted broker, wins if it has read its log back by the
// election, else the slave does (a replica still verifying is no
// candidate). Either way the master serves under a new controller epoch,
// opens a new replication epoch, takes sends, and the other follows.
func TestControllerMasterRestartIsRanked(t *testing.T) {
	c := newCtlCluster(t, time.Hour) // no election by timeout: the restart is quicker
	m := c.startGroup(2)
	rc := dialRaw(t, m.Addr())
	if resp := rc.call(sendReq("restart", 0, []byte("before"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send: %s", resp)
	}
	s := c.b[2]
	waitLong(t, func() bool { return s.store.WrittenOffset() == m.store.WrittenOffset() }, "the slave to hold the whole log")
	epoch := m.repl.MasterEpoch()
	c.kill(1)
	c.start(1)
	m = c.waitMaster(-1)
	s = c.b[3-m.cfg.BrokerID] // the other one
	if m.repl.MasterEpoch() <= epoch {
		t.Fatalf("controller epoch %d after the restart, want above %d", m.repl.MasterEpoch(), epoch)
	}
	ep, ok := m.repl.ctl.epochs.Last()
	if !ok || ctlrole.CtlEpochOf(ep.Epoch) != m.repl.MasterEpoch() {
		t.Fatalf("replication epoch %+v: want one of controller epoch %d", ep, m.repl.MasterEpoch())
	}
	waitLong(t, func() bool {
		return s.repl.LinkStatus().Connected && len(m.repl.Slaves()) == 1 && m.repl.Slaves()[0].InSync
	},
		"the slave following the restarted master")
	// Only a member of the sync-state set acknowledges a SYNC_MASTER's
	// sends (ha.MasterConfig.RequiredOnly): the master adds the slave
	// once it holds the whole log.
	c.waitSyncSet(2)
	if resp := dialRaw(t, m.Addr()).call(sendReq("restart", 0, []byte("after"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send after the restart: %s", resp)
	}
}

// TestControllerSlaveCopiesTablesAndHandsOffsets: a controller-mode slave
// copies its master's topics, and an offset committed to it (a consumer
// reading there) goes to the master; once made master it keeps no local
// leftovers.
func TestControllerSlaveCopiesTablesAndHandsOffsets(t *testing.T) {
	c := newCtlCluster(t, 1500*time.Millisecond)
	c.start(1)
	m := c.waitMaster(-1)
	s := c.start(2)
	c.waitSyncSet(2)
	if resp := dialRaw(t, m.Addr()).call(createTopicReq("tables", 2)); resp.Code != protocol.Success {
		t.Fatalf("create topic: %s", resp)
	}
	waitLong(t, func() bool { _, ok := s.topics.get("tables"); return ok }, "the slave to copy the topic")
	if resp := dialRaw(t, s.Addr()).call(updateOffsetReq("g", "tables", 1, 5)); resp.Code != protocol.Success {
		t.Fatalf("commit to the slave: %s", resp)
	}
	waitLong(t, func() bool { off, ok := m.offsets.Query("g", "tables", 1); return ok && off == 5 }, "the master to take the slave's commit")
	waitLong(t, func() bool { return len(s.offsets.Local()) == 0 }, "the slave to forget the handed commit")
	if resp := dialRaw(t, m.Addr()).call(updateOffsetReq("g", "tables", 1, 9)); resp.Code != protocol.Success {
		t.Fatalf("commit to the master: %s", resp)
	}
	if n := len(m.offsets.Local()); n != 0 {
		t.Fatalf("the master keeps %d local offsets", n)
	}
}

// TestControllerReplacesMasterThatCannotServe: the replica elected after
// the master died cannot take up the role (its replication port is taken).
// Its heartbeats say so, renew no lease, and the controller elects the
// other slave within its election timeout; the sets before the failed
// election stay electable, so the group is not left without a master.
func TestControllerReplacesMasterThatCannotServe(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	c := newCtlCluster(t, 1500*time.Millisecond)
	c.mutate = map[int64]func(*Config){2: func(cfg *Config) { cfg.HAListenPort = port; cfg.ListenAddr = "127.0.0.1" }}
	c.startGroup(3)
	c.kill(1)
	m := c.waitMaster(1)
	if m.cfg.BrokerID != 3 {
		t.Fatalf("broker %d is master; broker 2 cannot bind its replication port", m.cfg.BrokerID)
	}
	if !c.logs[2].contains("cannot become master") {
		t.Fatalf("broker 2 never tried (its log):\n%s", c.logs[2].String())
	}
	c.waitSyncSet(2) // broker 2 follows the new master
	if resp := dialRaw(t, m.Addr()).call(sendReq("failed", 0, []byte("x"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send to the new master: %s", resp)
	}
}

// stallFS is the OS file system whose CommitLog files' syncs block while
// stalled: a disk whose fdatasync hangs.
type stallFS struct {
	vfs.FS
	mu      sync.Mutex
	stalled chan struct{} // closed to release; nil when not stalled
}

func (s *stallFS) stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled == nil {
		s.stalled = make(chan struct{})
	}
}

func (s *stallFS) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled != nil {
		close(s.stalled)
		s.stalled = nil
	}
}

func (s *stallFS) wait() {
	s.mu.Lock()
	ch := s.stalled
	s.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func (s *stallFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.Contains(name, "commitlog") {
		return f, err
	}
	return stallFile{File: f, fs: s}, nil
}

func (s *stallFS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := s.FS.Create(name, o)
	return s.wrap(name, f, err)
}

func (s *stallFS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := s.FS.Open(name, o)
	return s.wrap(name, f, err)
}

type stallFile struct {
	vfs.File
	fs *stallFS
}

func (f stallFile) Sync() error {
	f.fs.wait()
	return f.File.Sync()
}

// TestControllerFailsOverStalledDisk: the master's disk stops finishing
// its fdatasyncs. Once a flush has been in progress for
// diskStallFailoverMillis its heartbeats say it cannot serve, renew no
// lease, and the controller elects another replica, which takes sends.
func TestControllerFailsOverStalledDisk(t *testing.T) {
	sfs := &stallFS{FS: vfs.Default}
	t.Cleanup(sfs.release) // before the brokers close (cleanups run last first)
	c := newCtlCluster(t, 1500*time.Millisecond)
	c.mutate = map[int64]func(*Config){1: func(cfg *Config) {
		cfg.FS = sfs
		cfg.DiskStallFailover = 500 * time.Millisecond
	}}
	m := c.startGroup(3)
	if m.cfg.BrokerID != 1 {
		t.Fatalf("broker %d is master, want 1", m.cfg.BrokerID)
	}
	if resp := dialRaw(t, m.Addr()).call(sendReq("stall", 0, []byte("before"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send before the stall: %s", resp)
	}
	sfs.stall()
	// Something to flush: the periodic flush meets the stalled disk. The
	// send itself may time out or be refused; only the fail-over matters.
	dialRaw(t, m.Addr()).start(sendReq("stall", 0, []byte("during"), nil))
	n := c.waitMaster(1)
	if !c.logs[1].contains("the disk stalls") {
		t.Fatalf("broker 1 never said its disk stalls (its log):\n%s", c.logs[1].String())
	}
	sfs.release()
	rc := dialRaw(t, n.Addr())
	waitLong(t, func() bool { // until a slave is in sync with the new master
		return rc.call(sendReq("stall", 0, []byte("after"), nil)).Code == protocol.Success
	}, fmt.Sprintf("a send to the new master %d acknowledged", n.cfg.BrokerID))
}

// TestControllerFencingClockSetBack: the master's wall clock is set back
// an hour just before it is cut off from the controller. Its lease runs
// on the monotonic clock, so it still stops taking writes within
// controllerHeartBeatTimeoutMills (a lease read from the wall clock would
// have kept it writable for the hour, beside the master elected next).
func TestControllerFencingClockSetBack(t *testing.T) {
	var back atomic.Int64
	c := newCtlCluster(t, 1500*time.Millisecond)
	c.mutate = map[int64]func(*Config){1: func(cfg *Config) {
		cfg.ctlNow = func() time.Time { return time.Now().Add(-time.Duration(back.Load())) }
	}}
	m1 := c.startGroup(2)
	rc := dialRaw(t, m1.Addr())
	if resp := rc.call(sendReq("clock", 0, []byte("ok"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send to the master: %s", resp)
	}
	back.Store(int64(time.Hour))
	c.ctl.setCut(1, true)
	waitLong(t, func() bool { return m1.repl.isSlave() }, "the cut-off master, its clock set back, to stop taking writes")
	if resp := rc.call(sendReq("clock", 0, []byte("refused"), nil)); resp.Code == protocol.Success {
		t.Fatalf("a fenced master took a send: %s", resp)
	}
	c.waitMaster(1)
}

// TestControllerSlaveRefusesPop: in controller mode every replica has a
// POP service (each may become master); one that is a slave now refuses
// POP, as a static slave does, rather than hand out messages beside the
// master.
func TestControllerSlaveRefusesPop(t *testing.T) {
	c := newCtlCluster(t, 1500*time.Millisecond)
	m := c.startGroup(2)
	if resp := dialRaw(t, m.Addr()).call(sendReq("pop-slave", 0, []byte("x"), nil)); resp.Code != protocol.Success {
		t.Fatalf("send to the master: %s", resp)
	}
	var s *Broker
	for id, b := range c.b {
		if id != m.cfg.BrokerID {
			s = b
		}
	}
	resp := dialRaw(t, s.Addr()).call(popReq("g", "pop-slave", -1, 4, time.Minute, 0))
	if resp.Code != protocol.SystemError || !strings.Contains(resp.Remark, "master only") {
		t.Fatalf("POP to the slave: %s", resp)
	}
}
