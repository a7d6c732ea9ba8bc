package client

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/storage"
)

// startSlave starts broker-a's slave (id 1) in c, copying its master's
// metadata every 50 ms, and waits until the name server routes it and it
// holds the master's topics.
func (c *testCluster) startSlave(mutate func(*broker.Config)) *broker.Broker {
	c.t.Helper()
	cfg := broker.Config{StorePathRootDir: c.t.TempDir(), BrokerName: "broker-a", BrokerID: 1, BrokerRole: broker.Slave,
		NamesrvAddrs: []string{c.ns.Addr()}, Logger: quietLogger(), MappedFileSizeCommitLog: 64 << 20,
		SlaveSyncInterval: 50 * time.Millisecond}
	if err := cfg.Set("listenPort", "0"); err != nil {
		c.t.Fatal(err)
	}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := broker.New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		s.Close()
		c.t.Fatal(err)
	}
	c.brokers = append(c.brokers, s)
	c.configs = append(c.configs, cfg)
	c.brokerAddr = append(c.brokerAddr, s.Addr())
	deadline := time.Now().Add(10 * time.Second)
	for {
		ci, err := c.admin.ClusterInfo(context.Background())
		if err == nil && ci.BrokerAddrTable["broker-a"].BrokerAddrs[1] == s.Addr() {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("slave not registered: %v %v", ci, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// waitSlaveTopics waits until the slave holds as many topics as master.
func (c *testCluster) waitSlaveTopics(master, slave *broker.Broker) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, s := c.stat(master.Addr(), "topics"), c.stat(slave.Addr(), "topics")
		if m > 0 && m == s {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("slave holds %d topics, the master %d", s, m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stat reads one number from a broker's text stats.
func (c *testCluster) stat(addr, name string) int64 {
	c.t.Helper()
	st, err := c.admin.BrokerStats(context.Background(), addr)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, s := range st {
		if s.Name == name {
			v, _ := strconv.ParseInt(s.Value, 10, 64)
			return v
		}
	}
	c.t.Fatalf("%s: no stat %s", addr, name)
	return 0
}

// seed appends messages to (topic, 0) of the master's store (bs[0]) and
// waits until every broker of bs holds them readable: the slaves by
// replication. (Appending to a slave's store too, as before the
// replication link was wired, made its log differ from the master's, and
// the pull counts below flaky.)
func seed(t *testing.T, topic string, bodies []string, bs ...*broker.Broker) {
	t.Helper()
	host := netip.MustParseAddrPort(bs[0].Addr())
	for _, body := range bodies {
		m := &storage.Message{Topic: topic, QueueID: 0, Body: []byte(body), BornTimestamp: time.Now().UnixMilli(),
			BornHost: host, StoreHost: host}
		if _, err := bs[0].Store().Append(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range bs {
		deadline := time.Now().Add(20 * time.Second)
		for b.Store().MaxQueueOffset(topic, 0) < int64(len(bodies)) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d seeded messages readable", b.Addr(), b.Store().MaxQueueOffset(topic, 0), len(bodies))
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func bodiesOf(msgs []*MessageExt) string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Body))
	}
	return strings.Join(out, ",")
}

// TestPullFromSlaveWhenMasterDown: with the master gone from the route, a
// consumer pulls from the slave and commits its offsets there.
func TestPullFromSlaveWhenMasterDown(t *testing.T) {
	c := startCluster(t, 1, nil)
	master := c.brokers[0]
	slave := c.startSlave(nil)
	c.createTopic("ha-t", 1)
	c.waitSlaveTopics(master, slave)
	seed(t, "ha-t", []string{"m0", "m1", "m2", "m3", "m4"}, master, slave)

	opts := PullConsumerOptions{ClientOptions: c.clientOptions(), Group: "hg"}
	opts.RouteRefresh = 50 * time.Millisecond
	pc, err := NewPullConsumer(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx := context.Background()
	q := MessageQueue{Topic: "ha-t", BrokerName: "broker-a", QueueID: 0}
	res, err := pc.Pull(ctx, q, 0, PullOptions{})
	if err != nil || bodiesOf(res.Messages) != "m0,m1,m2,m3,m4" {
		t.Fatalf("pull from the master: %v %+v", err, res)
	}
	if err := pc.Commit(ctx, map[MessageQueue]int64{q: 2}); err != nil {
		t.Fatal(err)
	}
	if c.stat(master.Addr(), "cmd_get") != 5 || c.stat(slave.Addr(), "cmd_get") != 0 {
		t.Fatal("the first pull did not go to the master")
	}

	c.stopBroker(0)
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err = pc.Pull(ctx, q, 2, PullOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pull from the slave: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if bodiesOf(res.Messages) != "m2,m3,m4" || c.stat(slave.Addr(), "cmd_get") != 3 {
		t.Fatalf("pull from the slave: %+v", res)
	}
	if err := pc.Commit(ctx, map[MessageQueue]int64{q: 5}); err != nil {
		t.Fatalf("commit with the master gone: %v", err)
	}
	if got, err := pc.Committed(ctx, q); err != nil || got != 5 {
		t.Fatalf("committed on the slave: %d %v", got, err)
	}
}

// TestPullFollowsSuggestion: with slaveReadEnable a consumer reading far
// behind is sent to the slave, and back to the master once it reads near
// the tail.
func TestPullFollowsSuggestion(t *testing.T) {
	tiny := func(cfg *broker.Config) {
		cfg.SlaveReadEnable = true
		cfg.TotalPhysicalMemorySize = 1000 // "far" is more than 400 bytes behind
	}
	c := startCluster(t, 1, tiny)
	master := c.brokers[0]
	slave := c.startSlave(tiny)
	c.createTopic("sg-t", 1)
	c.waitSlaveTopics(master, slave)
	var bodies []string
	for i := 0; i < 10; i++ {
		bodies = append(bodies, fmt.Sprintf("%d-%s", i, strings.Repeat("x", 60)))
	}
	seed(t, "sg-t", bodies, master, slave)

	pc, err := NewPullConsumer(PullConsumerOptions{ClientOptions: c.clientOptions(), Group: "sg"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx := context.Background()
	q := MessageQueue{Topic: "sg-t", BrokerName: "broker-a", QueueID: 0}
	gets := func() (m, s int64) { return c.stat(master.Addr(), "cmd_get"), c.stat(slave.Addr(), "cmd_get") }
	for i, step := range []struct {
		offset int64
		m, s   int64 // messages pulled from master and slave so far
	}{
		{0, 1, 0}, // master: far behind, suggests the slave
		{1, 1, 1}, // slave: still far, stays
		{9, 1, 2}, // slave: at the tail, suggests the master
		{9, 2, 2}, // master
	} {
		if _, err := pc.Pull(ctx, q, step.offset, PullOptions{MaxMessages: 1}); err != nil {
			t.Fatal(err)
		}
		if m, s := gets(); m != step.m || s != step.s {
			t.Fatalf("after pull %d: %d from the master, %d from the slave; want %d, %d", i, m, s, step.m, step.s)
		}
	}
}

// TestPullFromPinnedAddress: PullOptions.BrokerAddr reads the slave's copy
// while the master runs and the route names it, and the next unpinned
// pull still goes to the master.
func TestPullFromPinnedAddress(t *testing.T) {
	c := startCluster(t, 1, nil)
	master := c.brokers[0]
	slave := c.startSlave(nil)
	c.createTopic("pin-t", 1)
	c.waitSlaveTopics(master, slave)
	seed(t, "pin-t", []string{"m0", "m1", "m2"}, master, slave)

	pc, err := NewPullConsumer(PullConsumerOptions{ClientOptions: c.clientOptions(), Group: "pg"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx := context.Background()
	q := MessageQueue{Topic: "pin-t", BrokerName: "broker-a", QueueID: 0}
	res, err := pc.Pull(ctx, q, 1, PullOptions{BrokerAddr: slave.Addr()})
	if err != nil || bodiesOf(res.Messages) != "m1,m2" || res.MaxOffset != 3 {
		t.Fatalf("pinned pull from the slave: %v %+v", err, res)
	}
	if c.stat(master.Addr(), "cmd_get") != 0 || c.stat(slave.Addr(), "cmd_get") != 2 {
		t.Fatal("the pinned pull did not go to the slave alone")
	}
	if res, err = pc.Pull(ctx, q, 0, PullOptions{}); err != nil || bodiesOf(res.Messages) != "m0,m1,m2" {
		t.Fatalf("unpinned pull: %v %+v", err, res)
	}
	if c.stat(master.Addr(), "cmd_get") != 3 {
		t.Fatal("the unpinned pull did not go to the master")
	}
}
