package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

func sqlPullReq(group, topic string, queue int32, offset int64, max int32, expr string) *protocol.Command {
	withSub := expr != ""
	flag := protocol.BuildPullSysFlag(false, false, withSub, false)
	h := protocol.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue, QueueOffset: offset,
		MaxMsgNums: max, SysFlag: flag, Subscription: expr, ExpressionType: ExpSQL92}
	return protocol.NewRequest(protocol.PullMessage, h.Encode(), nil)
}

func sqlHeartbeatReq(t *testing.T, group, topic, expr string) *protocol.Command {
	t.Helper()
	hb := protocol.HeartbeatData{ClientID: "sql-client",
		ConsumerDataSet: []protocol.ConsumerData{{GroupName: group, ConsumeType: protocol.ConsumePassively,
			MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromFirstOffset,
			SubscriptionDataSet: []protocol.SubscriptionData{{Topic: topic, SubString: expr, ExpressionType: ExpSQL92, SubVersion: 1}}}}}
	body, err := protocol.MarshalBody(hb)
	if err != nil {
		t.Fatal(err)
	}
	return protocol.NewRequest(protocol.HeartBeat, nil, body)
}

// TestSQL92Refusals: RocketMQ's answers to SQL92 subscriptions that do not
// compile, and to any with enablePropertyFilter off.
func TestSQL92Refusals(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		b := startBroker(t, "", func(c *Config) { c.EnablePropertyFilter = enabled })
		c := dialRaw(t, b.Addr())
		c.call(createTopicReq("sq", 1))
		c.call(sendReq("sq", 0, []byte("m"), map[string]string{"a": "7"}))
		// Indexed before the pulls below read it (a flake under load).
		waitFor(t, func() bool { return b.store.MaxQueueOffset("sq", 0) == 1 }, "dispatch")
		for _, g := range []struct{ group, expr string }{{"good", "a > 5"}, {"bad", "a >"}} {
			if r := c.call(sqlHeartbeatReq(t, g.group, "sq", g.expr)); r.Code != protocol.Success {
				t.Fatalf("heartbeat %s: %s", g.group, r)
			}
		}
		notSupported := func(r *protocol.Command) bool {
			return r.Code == protocol.SystemError && r.Remark == "The broker does not support consumer to filter message by SQL92"
		}
		if r := c.call(sqlPullReq("bad", "sq", 0, 0, 32, "")); r.Code != protocol.FilterDataNotExist {
			t.Errorf("enabled %v, heartbeat with a bad expression: %s", enabled, r)
		}
		if r := c.call(sqlPullReq("x", "sq", 0, 0, 32, "a >")); r.Code != protocol.SubscriptionParseFailed {
			t.Errorf("enabled %v, pull with a bad expression: %s", enabled, r)
		}
		r1, r2 := c.call(sqlPullReq("good", "sq", 0, 0, 32, "")), c.call(sqlPullReq("x", "sq", 0, 0, 32, "a > 5"))
		for _, r := range []*protocol.Command{r1, r2} {
			if enabled && r.Code != protocol.Success || !enabled && !notSupported(r) {
				t.Errorf("enabled %v: %s", enabled, r)
			}
		}
		b.Close()
	}
}

// TestSQL92Pull: the broker keeps the messages whose properties (TAGS
// among them) match, reads past those that do not, and says where to go
// on.
func TestSQL92Pull(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.EnablePropertyFilter = true })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("sqp", 1))
	for i := 0; i < 20; i++ {
		tag := []string{"even", "odd"}[i%2]
		if r := c.call(sendReq("sqp", 0, []byte(fmt.Sprint(i)), map[string]string{"TAGS": tag, "n": fmt.Sprint(i)})); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("sqp", 0) == 20 }, "dispatch")
	bodies := func(r *protocol.Command) string {
		var out []string
		for _, rec := range decodeRecords(t, r.Body) {
			out = append(out, string(rec.Body))
		}
		return strings.Join(out, ",")
	}
	r := c.call(sqlPullReq("g", "sqp", 0, 0, 32, "n >= 10 AND TAGS = 'odd'"))
	if r.Code != protocol.Success || bodies(r) != "11,13,15,17,19" || ext64(t, r, "nextBeginOffset") != 20 {
		t.Fatalf("filtered pull: %s %q", r, bodies(r))
	}
	r = c.call(sqlPullReq("g", "sqp", 0, 0, 2, "n BETWEEN 3 AND 8"))
	if r.Code != protocol.Success || bodies(r) != "3,4" || ext64(t, r, "nextBeginOffset") != 5 {
		t.Fatalf("two of six: %s %q", r, bodies(r))
	}
	r = c.call(sqlPullReq("g", "sqp", 0, 0, 32, "n > 100"))
	if r.Code != protocol.PullRetryImmediately || ext64(t, r, "nextBeginOffset") != 20 {
		t.Fatalf("nothing matches: %s", r)
	}
	// The heartbeat's subscription filters pulls that carry none.
	if r := c.call(sqlHeartbeatReq(t, "hb", "sqp", "n IN ('2', '4')")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	r = c.call(sqlPullReq("hb", "sqp", 0, 0, 32, ""))
	if r.Code != protocol.Success || bodies(r) != "2,4" {
		t.Fatalf("heartbeat subscription: %s %q", r, bodies(r))
	}
}

// TestSQL92ScanBudget: a pull reads at most sqlScanBudget entries that do
// not match, then hands the offset past them back.
func TestSQL92ScanBudget(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.EnablePropertyFilter = true })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("budget", 1))
	total := sqlScanBudget + 100
	for i := 0; i < total; i++ {
		props := map[string]string{"k": "no"}
		if i == total-1 {
			props["k"] = "yes"
		}
		p, _ := record.EncodeProperties(props)
		h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "budget", QueueID: 0,
			BornTimestamp: time.Now().UnixMilli(), Properties: string(p)}
		c.start(protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte("m")))
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("budget", 0) == int64(total) }, "dispatch")
	r := c.call(sqlPullReq("g", "budget", 0, 0, 32, "k = 'yes'"))
	next := ext64(t, r, "nextBeginOffset")
	if r.Code != protocol.PullRetryImmediately || next < sqlScanBudget || next >= int64(total) {
		t.Fatalf("first pull: %s", r)
	}
	r = c.call(sqlPullReq("g", "budget", 0, next, 32, "k = 'yes'"))
	if recs := decodeRecords(t, r.Body); r.Code != protocol.Success || len(recs) != 1 || recs[0].QueueOffset != int64(total-1) {
		t.Fatalf("second pull: %s", r)
	}
}

// TestCheckClientConfig: CHECK_CLIENT_CONFIG answers as RocketMQ's
// ClientManageProcessor.checkClientConfig.
func TestCheckClientConfig(t *testing.T) {
	check := func(c *rawClient, expType, expr string) *protocol.Command {
		body, _ := protocol.MarshalBody(protocol.CheckClientRequestBody{ClientID: "c", Group: "g",
			SubscriptionData: &protocol.SubscriptionData{Topic: "t", SubString: expr, ExpressionType: expType}})
		return c.call(protocol.NewRequest(protocol.CheckClientConfig, nil, body))
	}
	for _, enabled := range []bool{false, true} {
		b := startBroker(t, "", func(c *Config) { c.EnablePropertyFilter = enabled })
		c := dialRaw(t, b.Addr())
		for _, tc := range []struct {
			expType, expr string
			want          int32
		}{
			{"TAG", "a || b", protocol.Success},
			{"SQL92", "a > 5", map[bool]int32{false: protocol.SystemError, true: protocol.Success}[enabled]},
			{"SQL92", "a >", map[bool]int32{false: protocol.SystemError, true: protocol.SubscriptionParseFailed}[enabled]},
		} {
			if r := check(c, tc.expType, tc.expr); r.Code != tc.want {
				t.Errorf("enabled %v, %s %q: %s", enabled, tc.expType, tc.expr, r)
			}
		}
		b.Close()
	}
}

// TestSQL92HeldPull: a held SQL92 pull woken by a message it does not
// want goes back to waiting past it, and is answered by the next one it
// wants, with only that one.
func TestSQL92HeldPull(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.EnablePropertyFilter = true })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("held", 1))
	c.call(sendReq("held", 0, []byte("old"), map[string]string{"k": "no"}))
	waitFor(t, func() bool { return b.store.MaxQueueOffset("held", 0) == 1 }, "dispatch")
	flag := protocol.BuildPullSysFlag(false, true, true, false)
	h := protocol.PullMessageRequestHeader{ConsumerGroup: "g", Topic: "held", QueueID: 0, QueueOffset: 0, MaxMsgNums: 32,
		SysFlag: flag, SuspendTimeoutMillis: 20_000, Subscription: "k = 'yes'", ExpressionType: ExpSQL92}
	answer := c.start(protocol.NewRequest(protocol.PullMessage, h.Encode(), nil))
	// The pull reads "old", which does not match, and waits at the tail.
	waitFor(t, func() bool { return b.poll.count.Load() == 1 }, "the pull held")
	for i := 0; i < 3; i++ {
		c.call(sendReq("held", 0, []byte(fmt.Sprint("no-", i)), map[string]string{"k": "no"}))
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("held", 0) == 4 && b.poll.count.Load() == 1 }, "the pull held past three more")
	c.call(sendReq("held", 0, []byte("wanted"), map[string]string{"k": "yes"}))
	select {
	case r := <-answer:
		recs := decodeRecords(t, r.Body)
		if r.Code != protocol.Success || len(recs) != 1 || string(recs[0].Body) != "wanted" || ext64(t, r, "nextBeginOffset") != 5 {
			t.Fatalf("answer: %s, %d records", r, len(recs))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the held pull was not answered by a matching message")
	}
}
