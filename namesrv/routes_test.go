package namesrv

import (
	"reflect"
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/testutil"
	"github.com/samsamq/samsa/protocol"
)

func newFakeClock() *testutil.Clock { return testutil.NewClock(time.Unix(1_700_000_000, 0)) }

func topicConfig(name string, queues int32) protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues,
		Perm: protocol.PermRead | protocol.PermWrite, TopicFilterType: protocol.TopicFilterSingleTag}
}

func registration(cluster, name string, id int64, addr string, counter int64, topics ...protocol.TopicConfig) Registration {
	tbl := map[string]protocol.TopicConfig{}
	for _, tc := range topics {
		tbl[tc.TopicName] = tc
	}
	return Registration{
		Header: protocol.RegisterBrokerRequestHeader{ClusterName: cluster, BrokerName: name, BrokerID: id,
			BrokerAddr: addr, HAServerAddr: addr + "1"},
		Body: protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
			TopicConfigTable: tbl, DataVersion: protocol.DataVersion{Timestamp: 1, Counter: counter}}},
	}
}

func mustRegister(t *testing.T, rt *RouteTable, r Registration) RegisterResult {
	t.Helper()
	return rt.RegisterBroker(r)
}

func TestRegisterAndRoute(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	res := mustRegister(t, rt, registration("c1", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4), topicConfig("U", 2)))
	if !res.New || res.MasterAddr != "" {
		t.Fatalf("master registration result %+v", res)
	}
	rd, ok := rt.Route("T")
	if !ok {
		t.Fatal("no route for T")
	}
	want := protocol.TopicRouteData{
		QueueDatas: []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		BrokerDatas: []protocol.BrokerData{{Cluster: "c1", BrokerName: "broker-a",
			BrokerAddrs: map[int64]string{0: "10.0.0.1:10911"}}},
		FilterServerTable: map[string][]string{},
	}
	if !reflect.DeepEqual(rd, want) {
		t.Fatalf("route\n got %+v\nwant %+v", rd, want)
	}
	if _, ok := rt.Route("nope"); ok {
		t.Fatal("route for an unknown topic")
	}
	if got := rt.Topics(); !reflect.DeepEqual(got, []string{"T", "U"}) {
		t.Fatalf("topics %v", got)
	}
}

func TestMastersAndSlaves(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	mustRegister(t, rt, registration("c1", "broker-a", 0, "a0:1", 1, topicConfig("T", 4)))
	res := mustRegister(t, rt, registration("c1", "broker-a", 1, "a1:1", 1, topicConfig("T", 8)))
	if res.MasterAddr != "a0:1" || res.HAServerAddr != "a0:11" {
		t.Fatalf("slave should learn its master: %+v", res)
	}
	mustRegister(t, rt, registration("c1", "broker-b", 0, "b0:1", 1, topicConfig("T", 2)))
	mustRegister(t, rt, registration("c2", "broker-c", 0, "c0:1", 1, topicConfig("V", 1)))

	rd, _ := rt.Route("T")
	if len(rd.QueueDatas) != 2 || rd.QueueDatas[0].BrokerName != "broker-a" || rd.QueueDatas[1].BrokerName != "broker-b" {
		t.Fatalf("queue datas %+v", rd.QueueDatas)
	}
	if rd.QueueDatas[0].WriteQueueNums != 4 {
		t.Fatalf("a slave's topic table must not override the master's: %+v", rd.QueueDatas[0])
	}
	if got := rd.BrokerDatas[0].BrokerAddrs; !reflect.DeepEqual(got, map[int64]string{0: "a0:1", 1: "a1:1"}) {
		t.Fatalf("broker-a addrs %v", got)
	}

	ci := rt.ClusterInfo()
	if !reflect.DeepEqual(ci.ClusterAddrTable, map[string][]string{"c1": {"broker-a", "broker-b"}, "c2": {"broker-c"}}) {
		t.Fatalf("cluster table %v", ci.ClusterAddrTable)
	}
	if len(ci.BrokerAddrTable) != 3 || ci.BrokerAddrTable["broker-c"].Cluster != "c2" {
		t.Fatalf("broker table %+v", ci.BrokerAddrTable)
	}

	// The master goes: the slave keeps the group (and the route) alive.
	rt.UnregisterBroker(protocol.UnregisterBrokerRequestHeader{ClusterName: "c1", BrokerName: "broker-a", BrokerID: 0, BrokerAddr: "a0:1"})
	rd, _ = rt.Route("T")
	if got := rd.BrokerDatas[0].BrokerAddrs; !reflect.DeepEqual(got, map[int64]string{1: "a1:1"}) {
		t.Fatalf("after master left: %v", got)
	}
	// Slave promoted on the same address: it leaves id 1 for id 0.
	mustRegister(t, rt, registration("c1", "broker-a", 0, "a1:1", 2, topicConfig("T", 4)))
	rd, _ = rt.Route("T")
	if got := rd.BrokerDatas[0].BrokerAddrs; !reflect.DeepEqual(got, map[int64]string{0: "a1:1"}) {
		t.Fatalf("after promotion: %v", got)
	}
}

func TestTopicTableFollowsDataVersion(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	mustRegister(t, rt, registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4)))
	// Same data version, different content: read all the same (RocketMQ
	// would trust the version; a full registration split in chunks
	// carries one version in every chunk).
	mustRegister(t, rt, registration("c1", "a", 0, "a:1", 1, topicConfig("T", 2)))
	if rd, _ := rt.Route("T"); rd.QueueDatas[0].WriteQueueNums != 2 {
		t.Fatalf("changed topic not read under the same version: %+v", rd.QueueDatas[0])
	}
	// New version: re-read, and a new topic appears.
	mustRegister(t, rt, registration("c1", "a", 0, "a:1", 2, topicConfig("T", 8), topicConfig("N", 1)))
	if rd, _ := rt.Route("T"); rd.QueueDatas[0].WriteQueueNums != 8 {
		t.Fatalf("table not re-read after a version change: %+v", rd.QueueDatas[0])
	}
	if _, ok := rt.Route("N"); !ok {
		t.Fatal("new topic missing")
	}
	if rt.DataVersionChanged("c1", "a:1", protocol.DataVersion{Timestamp: 1, Counter: 2}) {
		t.Fatal("held version reported as changed")
	}
	if !rt.DataVersionChanged("c1", "a:1", protocol.DataVersion{Timestamp: 1, Counter: 3}) {
		t.Fatal("newer version not reported as changed")
	}
}

func TestSingleTopicFirstRegistration(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	mustRegister(t, rt, registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4)))
	if _, ok := rt.Route("T"); !ok {
		t.Fatal("a first registration with one topic must be accepted")
	}
}

func TestExpiryAt120s(t *testing.T) {
	clk := newFakeClock()
	rt := NewRouteTable(clk, 0)
	mustRegister(t, rt, registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4)))
	mustRegister(t, rt, registration("c1", "b", 0, "b:1", 1, topicConfig("T", 4)))

	clk.Advance(60 * time.Second)
	mustRegister(t, rt, registration("c1", "b", 0, "b:1", 1, topicConfig("T", 4))) // b keeps registering

	clk.Advance(60 * time.Second) // a: exactly 120 s of silence, not past it
	if gone := rt.ScanNotActive(); len(gone) != 0 {
		t.Fatalf("expired at exactly 120 s: %+v", gone)
	}
	clk.Advance(time.Millisecond)
	gone := rt.ScanNotActive()
	want := []protocol.UnregisterBrokerRequestHeader{{ClusterName: "c1", BrokerName: "a", BrokerID: 0, BrokerAddr: "a:1"}}
	if !reflect.DeepEqual(gone, want) {
		t.Fatalf("gone %+v", gone)
	}
	rd, ok := rt.Route("T")
	if !ok || len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "b" {
		t.Fatalf("route after expiry %+v", rd)
	}
	if _, ok := rt.ClusterInfo().BrokerAddrTable["a"]; ok {
		t.Fatal("expired group still in cluster info")
	}
	clk.Advance(61 * time.Second)
	rt.ScanNotActive()
	if _, ok := rt.Route("T"); ok {
		t.Fatal("route survives every broker")
	}
	if len(rt.ClusterInfo().ClusterAddrTable) != 0 || rt.LiveBrokers() != 0 {
		t.Fatalf("table not empty: %+v", rt.ClusterInfo())
	}
}

func TestHeartbeatTimeoutOverride(t *testing.T) {
	clk := newFakeClock()
	rt := NewRouteTable(clk, 0)
	r := registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4))
	r.Header.HeartbeatTimeoutMillis = 5000
	mustRegister(t, rt, r)
	clk.Advance(5001 * time.Millisecond)
	if len(rt.ScanNotActive()) != 1 {
		t.Fatal("registration's own timeout ignored")
	}
}

func TestTouchKeepsAlive(t *testing.T) {
	clk := newFakeClock()
	rt := NewRouteTable(clk, 0)
	mustRegister(t, rt, registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4)))
	clk.Advance(100 * time.Second)
	if !rt.Touch("c1", "a:1") {
		t.Fatal("touch of a registered broker failed")
	}
	clk.Advance(100 * time.Second)
	if len(rt.ScanNotActive()) != 0 {
		t.Fatal("touched broker expired")
	}
	if rt.Touch("c1", "zz:1") {
		t.Fatal("touch of an unknown broker succeeded")
	}
}

func TestUnregisterAndConnClosed(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	r := registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4))
	r.Conn = 7
	mustRegister(t, rt, r)
	r2 := registration("c1", "b", 0, "b:1", 1, topicConfig("T", 4))
	r2.Conn = 8
	mustRegister(t, rt, r2)
	if gone := rt.ConnClosed(7); len(gone) != 1 || gone[0].BrokerName != "a" {
		t.Fatalf("conn 7 closed: %+v", gone)
	}
	rt.UnregisterBroker(protocol.UnregisterBrokerRequestHeader{ClusterName: "c1", BrokerName: "b", BrokerID: 0, BrokerAddr: "b:1"})
	if _, ok := rt.Route("T"); ok || len(rt.Topics()) != 0 {
		t.Fatal("topic outlives its brokers")
	}
	rt.UnregisterBroker(protocol.UnregisterBrokerRequestHeader{ClusterName: "c1", BrokerName: "b", BrokerAddr: "b:1"}) // twice: no-op
}

func TestNewerStateVersionWins(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	r := registration("c1", "a", 0, "old:1", 1, topicConfig("T", 4))
	r.Body.TopicConfigSerializeWrapper.DataVersion.StateVersion = 5
	mustRegister(t, rt, r)
	r2 := registration("c1", "a", 0, "new:1", 1, topicConfig("T", 4))
	r2.Body.TopicConfigSerializeWrapper.DataVersion.StateVersion = 4
	if res := mustRegister(t, rt, r2); !res.Ignored {
		t.Fatal("older state version not ignored")
	}
	rd, _ := rt.Route("T")
	if rd.BrokerDatas[0].BrokerAddrs[0] != "old:1" {
		t.Fatalf("addrs %v", rd.BrokerDatas[0].BrokerAddrs)
	}
}

func TestDeleteTopicAndKV(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	mustRegister(t, rt, registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4), topicConfig("U", 4)))
	mustRegister(t, rt, registration("c2", "b", 0, "b:1", 1, topicConfig("T", 4)))
	rt.DeleteTopic("T", "c2")
	if rd, _ := rt.Route("T"); len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "a" {
		t.Fatalf("delete in c2: %+v", rd.QueueDatas)
	}
	rt.DeleteTopic("U", "")
	if _, ok := rt.Route("U"); ok {
		t.Fatal("U survives delete")
	}

	if _, ok := rt.GetKV("ns", "k"); ok {
		t.Fatal("kv in an empty table")
	}
	if err := rt.PutKV("ns", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, ok := rt.GetKV("ns", "k"); !ok || v != "v" {
		t.Fatalf("kv %q %v", v, ok)
	}
	if m, ok := rt.KVList("ns"); !ok || m["k"] != "v" {
		t.Fatalf("kv list %v", m)
	}
	rt.DeleteKV("ns", "k")
	if _, ok := rt.KVList("ns"); ok {
		t.Fatal("namespace survives its last key")
	}
}

func TestActingMasterWipesWrite(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	m := registration("c1", "a", 0, "a0:1", 1, topicConfig("T", 4))
	m.Header.EnableActingMaster = true
	mustRegister(t, rt, m)
	s := registration("c1", "a", 1, "a1:1", 1, topicConfig("T", 4))
	s.Header.EnableActingMaster = true
	mustRegister(t, rt, s)
	rt.UnregisterBroker(protocol.UnregisterBrokerRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerID: 0, BrokerAddr: "a0:1"})
	rd, _ := rt.Route("T")
	if rd.QueueDatas[0].Perm&protocol.PermWrite != 0 {
		t.Fatalf("no master, still writable: %+v", rd.QueueDatas[0])
	}
}

// TestSlaveLearnsMasterChanges: a slave's registration answer names its
// master's current addresses: none while the master is gone (expired), the
// new ones when it returns elsewhere; the route keeps the slave's address
// throughout, so consumers can read from it.
func TestSlaveLearnsMasterChanges(t *testing.T) {
	clock := newFakeClock()
	rt := NewRouteTable(clock, 10*time.Second)
	mustRegister(t, rt, registration("c1", "broker-a", 0, "a0:1", 1, topicConfig("T", 4)))
	if res := mustRegister(t, rt, registration("c1", "broker-a", 1, "a1:1", 1)); res.MasterAddr != "a0:1" || res.HAServerAddr != "a0:11" {
		t.Fatalf("slave's answer: %+v", res)
	}
	clock.Advance(6 * time.Second)
	mustRegister(t, rt, registration("c1", "broker-a", 1, "a1:1", 1)) // the slave stays alive
	clock.Advance(6 * time.Second)
	if gone := rt.ScanNotActive(); len(gone) != 1 || gone[0].BrokerAddr != "a0:1" {
		t.Fatalf("expired %+v", gone)
	}
	if res := mustRegister(t, rt, registration("c1", "broker-a", 1, "a1:1", 1)); res.MasterAddr != "" || res.HAServerAddr != "" {
		t.Fatalf("slave's answer with the master gone: %+v", res)
	}
	rd, ok := rt.Route("T")
	if !ok || !reflect.DeepEqual(rd.BrokerDatas[0].BrokerAddrs, map[int64]string{1: "a1:1"}) {
		t.Fatalf("route with the master gone: %+v %v", rd, ok)
	}
	mustRegister(t, rt, registration("c1", "broker-a", 0, "a2:1", 2, topicConfig("T", 4)))
	if res := mustRegister(t, rt, registration("c1", "broker-a", 1, "a1:1", 1)); res.MasterAddr != "a2:1" || res.HAServerAddr != "a2:11" {
		t.Fatalf("slave's answer after the master's return: %+v", res)
	}
	rd, _ = rt.Route("T")
	if !reflect.DeepEqual(rd.BrokerDatas[0].BrokerAddrs, map[int64]string{0: "a2:1", 1: "a1:1"}) {
		t.Fatalf("route after the return: %v", rd.BrokerDatas[0].BrokerAddrs)
	}
}
