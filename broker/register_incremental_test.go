package broker

import (
	"fmt"
	"testing"

	"github.com/samsamq/samsa/namesrv"
	"github.com/samsamq/samsa/protocol"
)

// A create registers that topic alone; a table past one chunk registers
// in full as several deflated frames; a name server that restarted
// refuses the next increment and gets the whole table, and the period's
// data-version query finds a restart with no change in between.
func TestRegistrationFollowsChanges(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dev.Close() }()
	b := dev.Broker
	reg := b.reg

	// A table of more than two chunks, put straight into the table (a
	// create a topic would rewrite topics.json each time).
	n := 2*registerChunk + 10
	b.topics.mu.Lock()
	for i := range n {
		name := fmt.Sprintf("bulk-%05d", i)
		b.topics.mu.table[name] = newTopicConfig(name, 1, PermRead|PermWrite)
	}
	b.topics.changedLocked()
	b.topics.mu.Unlock()
	frames := reg.stats.frames.Load()
	reg.registerAll(false)
	if got := reg.stats.frames.Load() - frames; got != 3 {
		t.Fatalf("a full registration of %d topics took %d frames, want 3", b.topics.count(), got)
	}
	ns := dialRaw(t, dev.NamesrvAddr())
	for _, topic := range []string{"bulk-00000", fmt.Sprintf("bulk-%05d", n-1)} {
		if _, code := routeOf(t, ns, topic); code != protocol.Success {
			t.Fatalf("%s not routed after a chunked registration: %d", topic, code)
		}
	}

	// A create: one incremental frame, no full registration.
	c := dialRaw(t, dev.BrokerAddr())
	full, inc, bytes := reg.stats.full.Load(), reg.stats.incremental.Load(), reg.stats.bytes.Load()
	if r := c.call(createTopicReq("one", 2)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if reg.stats.full.Load() != full || reg.stats.incremental.Load() != inc+1 {
		t.Fatalf("a create sent %d full and %d incremental registrations, want 0 and 1",
			reg.stats.full.Load()-full, reg.stats.incremental.Load()-inc)
	}
	if sent := reg.stats.bytes.Load() - bytes; sent > 1024 {
		t.Fatalf("a create's registration took %d bytes", sent)
	}
	if rd, code := routeOf(t, ns, "one"); code != protocol.Success || rd.QueueDatas[0].WriteQueueNums != 2 {
		t.Fatalf("created topic's route: %+v %d", rd, code)
	}
	// The same create again changes nothing and sends nothing.
	if r := c.call(createTopicReq("one", 2)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if reg.stats.incremental.Load() != inc+1 || reg.stats.full.Load() != full {
		t.Fatal("an unchanged create registered")
	}

	// The name server restarts on its address: the next create's increment
	// is refused, and the broker registers in full.
	restart := func() {
		t.Helper()
		addr := dev.Namesrv.Addr()
		if err := dev.Namesrv.Close(); err != nil {
			t.Fatal(err)
		}
		s, err := namesrv.New(namesrv.Options{Listen: addr, Logger: quietLogger()})
		if err == nil {
			err = s.Start()
		}
		if err != nil {
			t.Fatal(err)
		}
		dev.Namesrv = s
		ns = dialRaw(t, addr)
	}
	restart()
	full = reg.stats.full.Load()
	if r := c.call(createTopicReq("two", 1)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if reg.stats.full.Load() != full+1 {
		t.Fatalf("after a name-server restart a create sent %d full registrations, want 1", reg.stats.full.Load()-full)
	}
	for _, topic := range []string{"bulk-00000", "one", "two"} {
		if _, code := routeOf(t, ns, topic); code != protocol.Success {
			t.Fatalf("%s not routed after the restart's full registration: %d", topic, code)
		}
	}

	// The period: the name server holds the version, so a query does.
	full, queries := reg.stats.full.Load(), reg.stats.queries.Load()
	reg.ticks = 0
	reg.period()
	if reg.stats.full.Load() != full || reg.stats.queries.Load() != queries+1 {
		t.Fatalf("period with nothing changed: %d full, %d queries", reg.stats.full.Load()-full, reg.stats.queries.Load()-queries)
	}
	restart()
	reg.period()
	if reg.stats.full.Load() != full+1 {
		t.Fatal("period after a name-server restart did not register in full")
	}
	if _, code := routeOf(t, ns, fmt.Sprintf("bulk-%05d", n-1)); code != protocol.Success {
		t.Fatalf("not routed after the period's full registration: %d", code)
	}
}

// Concurrent creates, the same topics from several clients: every create
// is answered only once the name server routes its topic, including the
// create that found the topic made by another request still registering.
func TestConcurrentCreatesRouteWhenAnswered(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dev.Close() }()
	const clients, topics = 8, 12
	errs := make(chan error, clients)
	for i := range clients {
		c, ns := dialRaw(t, dev.BrokerAddr()), dialRaw(t, dev.NamesrvAddr())
		go func() {
			for j := range topics {
				topic := fmt.Sprintf("c%d-%d", (i+j)%4, j) // each topic made by two clients
				if r := c.call(createTopicReq(topic, 1)); r.Code != protocol.Success {
					errs <- fmt.Errorf("create %s: %s", topic, r.Remark)
					return
				}
				h := protocol.GetRouteInfoRequestHeader{Topic: topic}
				if r := ns.call(protocol.NewRequest(protocol.GetRouteInfoByTopic, h.Encode(), nil)); r.Code != protocol.Success {
					errs <- fmt.Errorf("%s answered as created but not routed: %d %s", topic, r.Code, r.Remark)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// UPDATE_AND_CREATE_TOPIC_LIST: checked whole before anything is stored,
// then one save and one registration for the batch, routed when answered.
func TestCreateTopicList(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dev.Close() }()
	c := dialRaw(t, dev.BrokerAddr())
	list := func(tcs ...protocol.TopicConfig) *protocol.Command {
		body, err := protocol.MarshalBody(protocol.CreateTopicListRequestBody{TopicConfigList: tcs})
		if err != nil {
			t.Fatal(err)
		}
		return c.call(protocol.NewRequest(protocol.UpdateAndCreateTopicList, nil, body))
	}
	tc := func(name string, queues int32) protocol.TopicConfig {
		return protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: PermRead | PermWrite}
	}
	if r := list(tc("ok-1", 2), tc("bad name", 2)); r.Code != protocol.SystemError {
		t.Fatalf("a batch with a bad name: %s", r)
	}
	if r := list(tc("ok-1", 2), tc(AutoCreateTopicKey, 2)); r.Code != protocol.SystemError {
		t.Fatalf("a batch with a system topic: %s", r)
	}
	if _, ok := dev.Broker.topics.get("ok-1"); ok {
		t.Fatal("a refused batch stored a topic")
	}
	reg := dev.Broker.reg
	inc, full := reg.stats.incremental.Load(), reg.stats.full.Load()
	if r := list(tc("ok-1", 2), tc("ok-2", 3), tc("ok-3", 1)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if reg.stats.incremental.Load() != inc+1 || reg.stats.full.Load() != full {
		t.Fatalf("a batch sent %d incremental and %d full registrations, want 1 and 0",
			reg.stats.incremental.Load()-inc, reg.stats.full.Load()-full)
	}
	ns := dialRaw(t, dev.NamesrvAddr())
	for topic, q := range map[string]int32{"ok-1": 2, "ok-2": 3, "ok-3": 1} {
		if rd, code := routeOf(t, ns, topic); code != protocol.Success || rd.QueueDatas[0].WriteQueueNums != q {
			t.Fatalf("%s: %+v %d", topic, rd, code)
		}
	}
}

// GET_TOPIC_CONFIG answers one topic's config, TOPIC_NOT_EXIST for none.
func TestGetTopicConfig(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dev.Close() }()
	c := dialRaw(t, dev.BrokerAddr())
	if r := c.call(createTopicReq("one", 3)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	r := c.call(protocol.NewRequest(protocol.GetTopicConfig, map[string]string{"topic": "one"}, nil))
	var tc protocol.TopicConfig
	if r.Code != protocol.Success || protocol.UnmarshalBody(r.Body, &tc) != nil || tc.TopicName != "one" || tc.WriteQueueNums != 3 {
		t.Fatalf("GET_TOPIC_CONFIG: %s %+v", r, tc)
	}
	if r := c.call(protocol.NewRequest(protocol.GetTopicConfig, map[string]string{"topic": "none"}, nil)); r.Code != protocol.TopicNotExist {
		t.Fatalf("GET_TOPIC_CONFIG of a missing topic: %s", r)
	}
}
