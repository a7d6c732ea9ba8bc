package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/delay"
	"github.com/samsamq/samsa/namesrv"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// startNamesrv starts a name server on loopback, closed by the test's end.
func startNamesrv(t testing.TB) *namesrv.Server {
	t.Helper()
	ns, err := namesrv.New(namesrv.Options{Listen: "127.0.0.1:0", Logger: quietLogger()})
	if err == nil {
		err = ns.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// asSlave makes a config broker-a's slave number id, registered with ns
// ("" for none).
func asSlave(ns string, id int64, then func(*Config)) func(*Config) {
	return func(c *Config) {
		c.BrokerRole, c.BrokerID = Slave, id
		if ns != "" {
			c.NamesrvAddrs = []string{ns}
		}
		if then != nil {
			then(c)
		}
	}
}

// withNamesrv registers a (master) config with ns.
func withNamesrv(ns string, then func(*Config)) func(*Config) {
	return func(c *Config) {
		c.NamesrvAddrs = []string{ns}
		if then != nil {
			then(c)
		}
	}
}

// seedMessages appends bodies to (topic, queue) of b's store directly (a
// slave's store gets records from replication; tests put the same ones in
// both stores) and waits until they are readable.
func seedMessages(t *testing.T, b *Broker, topic string, queue int32, bodies ...string) {
	t.Helper()
	start := b.store.MaxQueueOffset(topic, queue)
	for _, body := range bodies {
		m := &storage.Message{Topic: topic, QueueID: queue, Body: []byte(body), BornTimestamp: time.Now().UnixMilli(),
			BornHost: b.storeHost, StoreHost: b.storeHost}
		if _, err := b.store.Append(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	want := start + int64(len(bodies))
	deadline := time.Now().Add(10 * time.Second)
	for b.store.MaxQueueOffset(topic, queue) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s-%d: max offset %d, want %d", topic, queue, b.store.MaxQueueOffset(topic, queue), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// seedTopic gives a slave without a master a topic, the way the metadata
// sync would.
func seedTopic(t *testing.T, b *Broker, name string, queues int) {
	t.Helper()
	table, v := b.topics.snapshot()
	table[name] = newTopicConfig(name, queues, PermRead|PermWrite)
	v.Counter++
	if _, _, err := b.topics.adopt(table, v); err != nil {
		t.Fatal(err)
	}
}

func updateOffsetReq(group, topic string, queue int32, off int64) *protocol.Command {
	h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue, CommitOffset: off}
	return protocol.NewRequest(protocol.UpdateConsumerOffset, h.Encode(), nil)
}

func groupReq(t *testing.T, g protocol.SubscriptionGroupConfig) *protocol.Command {
	t.Helper()
	body, err := protocol.MarshalBody(g)
	if err != nil {
		t.Fatal(err)
	}
	return protocol.NewRequest(protocol.UpdateAndCreateSubscriptionGroup, nil, body)
}

func offsetOf(t *testing.T, b *Broker, group, topic string, queue int32) int64 {
	t.Helper()
	off, ok := b.offsets.Query(group, topic, queue)
	if !ok {
		return -1
	}
	return off
}

// TestSlaveRefusesWrites: a slave answers every send with RocketMQ's
// SERVICE_NOT_AVAILABLE (before looking at the topic: nothing is
// auto-created), send-back with SYSTEM_ERROR, topic and group changes
// with validateSlave's refusal; heartbeats create no retry topic or
// group; offset commits are taken (and kept for the master).
func TestSlaveRefusesWrites(t *testing.T) {
	b := startBroker(t, "", asSlave("", 1, nil))
	defer b.Close()
	c := dialRaw(t, b.Addr())
	topicsBefore := len(b.topics.names())

	r := c.call(sendReq("auto-t", 0, []byte("x"), nil))
	if r.Code != protocol.ServiceNotAvailable || !strings.Contains(r.Remark, "messages are put to the slave") {
		t.Fatalf("send to a slave: %s", r)
	}
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "auto-t", DefaultTopic: AutoCreateTopicKey,
		DefaultTopicQueueNums: 4, BornTimestamp: time.Now().UnixMilli(), Batch: true}
	for _, code := range []int32{protocol.SendMessageV2, protocol.SendBatchMessage} {
		if r := c.call(protocol.NewRequest(code, h.V2().Encode(), []byte("whatever"))); r.Code != protocol.ServiceNotAvailable {
			t.Fatalf("code %d to a slave: %s", code, r)
		}
	}
	bh := protocol.ConsumerSendMsgBackRequestHeader{Offset: 0, Group: "g", OriginTopic: "auto-t"}
	if r := c.call(protocol.NewRequest(protocol.ConsumerSendMsgBack, bh.Encode(), nil)); r.Code != protocol.SystemError ||
		!strings.Contains(r.Remark, "SERVICE_NOT_AVAILABLE") {
		t.Fatalf("send-back to a slave: %s", r)
	}
	for name, req := range map[string]*protocol.Command{
		"create topic": createTopicReq("made-t", 2),
		"delete topic": protocol.NewRequest(protocol.DeleteTopicInBroker, (&protocol.DeleteTopicRequestHeader{Topic: "x"}).Encode(), nil),
		"create group": groupReq(t, protocol.DefaultSubscriptionGroup("g")),
		"delete group": protocol.NewRequest(protocol.DeleteSubscriptionGroup, map[string]string{"groupName": "g"}, nil),
	} {
		if r := c.call(req); r.Code != protocol.SystemError || r.Remark != slaveMetadataRemark {
			t.Fatalf("%s on a slave: %s", name, r)
		}
	}
	if r := c.call(heartbeatReq(t, "client-1", "g", "auto-t")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if n := len(b.topics.names()); n != topicsBefore {
		t.Fatalf("the slave made topics: %v", b.topics.names())
	}
	if groups, _ := b.groups.snapshot(); len(groups) != 0 {
		t.Fatalf("the slave made groups: %v", groups)
	}
	if r := c.call(updateOffsetReq("g", "auto-t", 1, 7)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if got := offsetOf(t, b, "g", "auto-t", 1); got != 7 {
		t.Fatalf("offset committed to the slave: %d", got)
	}
	if local := b.offsets.Local(); len(local) != 1 {
		t.Fatalf("local changes %v", local)
	}
	if b.stats.slaveRefused.Load() != 4 {
		t.Fatalf("refused sends counted %d", b.stats.slaveRefused.Load())
	}
}

// TestSlaveMetadataSync: a slave copies its master's topics, groups and
// offsets; offsets committed to the slave while the master is down reach
// the master when it is back (those ahead of the master's), and the
// slave then follows the master's table again.
func TestSlaveMetadataSync(t *testing.T) {
	ns := startNamesrv(t)
	masterDir := t.TempDir()
	master := startBroker(t, masterDir, withNamesrv(ns.Addr(), nil))
	slaveDir := t.TempDir()
	slave := startBroker(t, slaveDir, asSlave(ns.Addr(), 1, nil))
	defer func() { slave.Close() }()
	if slave.repl.MasterAddr() != master.Addr() {
		t.Fatalf("the slave learned master %q, want %q", slave.repl.MasterAddr(), master.Addr())
	}
	// With listenPort 0 the HA port is free too: advertised as the
	// replication listener bound it.
	if want := master.repl.HAAddr(); want == "" || slave.repl.HAMasterAddr() != want {
		t.Fatalf("the slave learned HA address %q, want %q", slave.repl.HAMasterAddr(), want)
	}

	mc := dialRaw(t, master.Addr())
	for _, req := range []*protocol.Command{
		createTopicReq("ms-t", 4),
		groupReq(t, protocol.SubscriptionGroupConfig{GroupName: "g1", ConsumeEnable: true, WhichBrokerWhenConsumeSlowly: 2}),
		updateOffsetReq("g1", "ms-t", 0, 5),
		updateOffsetReq("g1", "ms-t", 2, 7),
	} {
		if r := mc.call(req); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	if err := slave.repl.meta.round(); err != nil {
		t.Fatal(err)
	}
	if tc, ok := slave.topics.get("ms-t"); !ok || tc.WriteQueueNums != 4 {
		t.Fatalf("topic on the slave: %+v %v", tc, ok)
	}
	if g := slave.groups.find("g1"); g.WhichBrokerWhenConsumeSlowly != 2 || !g.ConsumeEnable {
		t.Fatalf("group on the slave: %+v", g)
	}
	if offsetOf(t, slave, "g1", "ms-t", 0) != 5 || offsetOf(t, slave, "g1", "ms-t", 2) != 7 {
		t.Fatal("offsets not copied")
	}

	// The master goes (and unregisters); the slave hears of it at its next
	// registration. Consumers commit to the slave meanwhile.
	if err := master.Close(); err != nil {
		t.Fatal(err)
	}
	slave.reg.registerAll(false)
	if slave.repl.MasterAddr() != "" {
		t.Fatalf("master still known: %q", slave.repl.MasterAddr())
	}
	sc := dialRaw(t, slave.Addr())
	for _, req := range []*protocol.Command{
		updateOffsetReq("g1", "ms-t", 0, 9), // ahead of the master's 5
		updateOffsetReq("g1", "ms-t", 1, 3), // the master has none
		updateOffsetReq("g1", "ms-t", 2, 6), // behind the master's 7: dropped
	} {
		if r := sc.call(req); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	if err := slave.repl.meta.round(); err == nil {
		t.Fatal("a round without a master succeeded")
	}
	// The slave restarts while the master is away: its local commits
	// survive.
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	slave = startBroker(t, slaveDir, asSlave(ns.Addr(), 1, nil))
	if n := len(slave.offsets.Local()); n != 3 {
		t.Fatalf("local commits after a restart: %d", n)
	}

	// The master returns (another port); the slave learns it at its next
	// registration, hands over its commits and copies the master again.
	master2 := startBroker(t, masterDir, withNamesrv(ns.Addr(), nil))
	defer master2.Close()
	if r := dialRaw(t, master2.Addr()).call(createTopicReq("ms-t2", 1)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	slave.reg.registerAll(false)
	if slave.repl.MasterAddr() != master2.Addr() {
		t.Fatalf("the slave follows %q, want %q", slave.repl.MasterAddr(), master2.Addr())
	}
	if err := slave.repl.meta.round(); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[int32]int64{0: 9, 1: 3, 2: 7} {
		if got := offsetOf(t, master2, "g1", "ms-t", q); got != want {
			t.Errorf("master's offset of queue %d: %d, want %d", q, got, want)
		}
		if got := offsetOf(t, slave, "g1", "ms-t", q); got != want {
			t.Errorf("slave's offset of queue %d: %d, want %d", q, got, want)
		}
	}
	if n := len(slave.offsets.Local()); n != 0 {
		t.Fatalf("local commits left after the hand-over: %d", n)
	}
	if _, ok := slave.topics.get("ms-t2"); !ok {
		t.Fatal("topic created on the returned master not copied")
	}
	// The master moves on; the slave follows (nothing local any more).
	if r := dialRaw(t, master2.Addr()).call(updateOffsetReq("g1", "ms-t", 0, 4)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if err := slave.repl.meta.round(); err != nil {
		t.Fatal(err)
	}
	if got := offsetOf(t, slave, "g1", "ms-t", 0); got != 4 {
		t.Fatalf("slave's offset after the master's reset: %d", got)
	}
}

// TestSlaveMetadataPersists: what a slave copied is on disk, so a slave
// restarted without its master still knows its topics, groups and
// offsets.
func TestSlaveMetadataPersists(t *testing.T) {
	ns := startNamesrv(t)
	master := startBroker(t, "", withNamesrv(ns.Addr(), nil))
	defer master.Close()
	slaveDir := t.TempDir()
	slave := startBroker(t, slaveDir, asSlave(ns.Addr(), 1, nil))
	mc := dialRaw(t, master.Addr())
	for _, req := range []*protocol.Command{
		createTopicReq("p-t", 2),
		groupReq(t, protocol.SubscriptionGroupConfig{GroupName: "pg1", BrokerID: 1}),
		updateOffsetReq("pg1", "p-t", 1, 11),
	} {
		if r := mc.call(req); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	if err := slave.repl.meta.round(); err != nil {
		t.Fatal(err)
	}
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	alone := startBroker(t, slaveDir, asSlave("", 1, nil))
	defer alone.Close()
	if _, ok := alone.topics.get("p-t"); !ok {
		t.Fatal("topic lost")
	}
	if g := alone.groups.find("pg1"); g.BrokerID != 1 {
		t.Fatalf("group lost: %+v", g)
	}
	if got := offsetOf(t, alone, "pg1", "p-t", 1); got != 11 {
		t.Fatalf("offset lost: %d", got)
	}
}

// TestSlaveStartedFirstFindsItsMaster: a slave started before its master
// asks the name server every second until it learns the master, not only
// every registerNameServerPeriod (an hour here).
func TestSlaveStartedFirstFindsItsMaster(t *testing.T) {
	ns := startNamesrv(t)
	slave := startBroker(t, t.TempDir(), asSlave(ns.Addr(), 1, func(c *Config) { c.RegisterNameServerPeriod = time.Hour }))
	defer slave.Close()
	if slave.repl.MasterAddr() != "" {
		t.Fatalf("the slave knows master %q before there is one", slave.repl.MasterAddr())
	}
	master := startBroker(t, t.TempDir(), withNamesrv(ns.Addr(), nil))
	defer master.Close()
	waitFor(t, func() bool { return slave.repl.MasterAddr() == master.Addr() }, "the slave learning its master")
}

// TestSlaveCopiesDelayOffsets: a slave runs no schedule service; its
// metadata sync copies the master's delay-level progress
// (GET_ALL_DELAY_OFFSET) into its delayOffset.json.
func TestSlaveCopiesDelayOffsets(t *testing.T) {
	ns := startNamesrv(t)
	short := func(c *Config) { c.MessageDelayLevel = shortLevels }
	master := startBroker(t, "", withNamesrv(ns.Addr(), short))
	defer master.Close()
	slaveDir := t.TempDir()
	slave := startBroker(t, slaveDir, asSlave(ns.Addr(), 1, short))
	defer slave.Close()
	mc := dialRaw(t, master.Addr())
	mc.call(createTopicReq("sd", 1))
	if r := mc.call(sendReq("sd", 0, []byte("x"), map[string]string{"DELAY": "1"})); r.Code != protocol.Success {
		t.Fatal(r)
	}
	waitRecord(t, mc, "sd", 0, 0, 20*time.Second)
	if err := slave.repl.meta.round(); err != nil {
		t.Fatal(err)
	}
	if got := slave.delay.Offsets().OffsetTable[1]; got != 1 {
		t.Fatalf("slave's level 1 offset %d, want the master's 1", got)
	}
	slave.Close()
	f, _, err := jsonFile{fs: slave.cfg.FS, path: slaveDir + "/config/delayOffset.json"}.read()
	if d, derr := delay.DecodeOffsets(f); err != nil || derr != nil || d.OffsetTable[1] != 1 {
		t.Fatalf("slave's delayOffset.json %s %v %v", f, err, derr)
	}
}
