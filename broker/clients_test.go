package broker

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

func heartbeatReq(t *testing.T, clientID, group, topic string) *protocol.Command {
	t.Helper()
	hb := protocol.HeartbeatData{ClientID: clientID,
		ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}},
		ConsumerDataSet: []protocol.ConsumerData{{GroupName: group, ConsumeType: protocol.ConsumePassively,
			MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromFirstOffset,
			SubscriptionDataSet: []protocol.SubscriptionData{{Topic: topic, SubString: "*", ExpressionType: "TAG"}}}}}
	body, err := protocol.MarshalBody(hb)
	if err != nil {
		t.Fatal(err)
	}
	return protocol.NewRequest(protocol.HeartBeat, nil, body)
}

// notifyWatcher is a raw connection that records NOTIFY_CONSUMER_IDS_CHANGED
// requests the broker sends it.
type notifyWatcher struct {
	nc    net.Conn
	resp  chan *protocol.Command
	notes chan string
}

func watch(t *testing.T, addr string) *notifyWatcher {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	w := &notifyWatcher{nc: nc, resp: make(chan *protocol.Command, 16), notes: make(chan string, 16)}
	go func() {
		br := bufio.NewReader(nc)
		for {
			c, err := protocol.ReadCommand(br, 1<<20, nil)
			if err != nil {
				return
			}
			if c.IsResponse() {
				w.resp <- c
			} else if c.Code == protocol.NotifyConsumerIdsChanged && c.IsOneway() {
				w.notes <- c.Ext("consumerGroup")
			}
		}
	}()
	return w
}

func (w *notifyWatcher) call(t *testing.T, req *protocol.Command) *protocol.Command {
	t.Helper()
	req.Opaque = 1
	f, _ := protocol.AppendCommand(nil, req)
	if _, err := w.nc.Write(f); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-w.resp:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no response")
	}
	return nil
}

// TestConsumerGroupMembership: heartbeats make a group, a new member makes
// the broker notify the others one-way, GET_CONSUMER_LIST_BY_GROUP lists
// them, and a closed connection leaves the group (notifying the rest).
func TestConsumerGroupMembership(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	ctl := dialRaw(t, b.Addr())
	ctl.call(createTopicReq("grp", 2))
	a, c := watch(t, b.Addr()), watch(t, b.Addr())
	if r := a.call(t, heartbeatReq(t, "client-A", "g1", "grp")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if _, ok := b.topics.get(RetryGroupPrefix + "g1"); !ok {
		t.Fatal("retry topic not created by the heartbeat")
	}
	select { // its own arrival
	case <-a.notes:
	case <-time.After(30 * time.Second):
		t.Fatal("no notification of the first member's arrival")
	}
	if r := c.call(t, heartbeatReq(t, "client-C", "g1", "grp")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	select {
	case g := <-a.notes:
		if g != "g1" {
			t.Fatalf("notified for %q", g)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("member A not notified when C joined")
	}
	lh := protocol.GetConsumerListByGroupRequestHeader{ConsumerGroup: "g1"}
	r := ctl.call(protocol.NewRequest(protocol.GetConsumerListByGroup, lh.Encode(), nil))
	var list protocol.GetConsumerListByGroupResponseBody
	if err := protocol.UnmarshalBody(r.Body, &list); err != nil || len(list.ConsumerIDList) != 2 {
		t.Fatalf("consumer list %s %v %v", r, list, err)
	}
	// A repeated heartbeat changes nothing and notifies no one.
	a.call(t, heartbeatReq(t, "client-A", "g1", "grp"))
	c.nc.Close()
	select {
	case <-a.notes:
	case <-time.After(30 * time.Second):
		t.Fatal("member A not notified when C left")
	}
	waitFor(t, func() bool { return len(b.clients.consumerIDs("g1")) == 1 }, "C gone from the group")
	uh := protocol.UnregisterClientRequestHeader{ClientID: "client-A", ConsumerGroup: "g1", ProducerGroup: "pg"}
	if r := a.call(t, protocol.NewRequest(protocol.UnregisterClient, uh.Encode(), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if r := ctl.call(protocol.NewRequest(protocol.GetConsumerListByGroup, lh.Encode(), nil)); r.Code != protocol.SystemError {
		t.Fatalf("empty group: %s", r)
	}
}

// TestSendBackRetryAndDLQ: CONSUMER_SEND_MSG_BACK copies the message to
// %RETRY%group with one more reconsume, and past maxReconsumeTimes to
// %DLQ%group.
func TestSendBackRetryAndDLQ(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.MessageDelayLevel = shortLevels }) // the retry waits level 3
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("sb", 1))
	r := c.call(sendReq("sb", 0, []byte("payload"), map[string]string{"TAGS": "t1", "KEYS": "k"}))
	_, phys, err := parseOffsetMsgID(r.Ext("msgId"))
	if err != nil {
		t.Fatal(err)
	}
	vh := protocol.ViewMessageRequestHeader{Offset: phys}
	if vr := c.call(protocol.NewRequest(protocol.ViewMessageByID, vh.Encode(), nil)); vr.Code != protocol.Success ||
		string(decodeRecords(t, vr.Body)[0].Body) != "payload" {
		t.Fatalf("view message: %s", vr)
	}
	back := func(offset int64, maxTimes int32) *protocol.Command {
		h := protocol.ConsumerSendMsgBackRequestHeader{Offset: offset, Group: "cg", DelayLevel: 0, OriginTopic: "sb",
			MaxReconsumeTimes: maxTimes, HasMaxReconsumeTimes: true}
		return c.call(protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil))
	}
	if r := back(phys, 16); r.Code != protocol.Success {
		t.Fatal(r)
	}
	retry := RetryGroupPrefix + "cg"
	waitFor(t, func() bool { return b.store.MaxQueueOffset(retry, 0) == 1 }, "retry message dispatched")
	pr := c.call(pullReq("cg", retry, 0, 0, 32, 0, "*"))
	recs := decodeRecords(t, pr.Body)
	if len(recs) != 1 || string(recs[0].Body) != "payload" || recs[0].ReconsumeTimes != 1 {
		t.Fatalf("retry: %s %+v", pr, recs)
	}
	props := record.ParseProperties(recs[0].Properties)
	if props["RETRY_TOPIC"] != "sb" || props["KEYS"] != "k" || props["ORIGIN_MESSAGE_ID"] == "" {
		t.Fatalf("retry properties %v", props)
	}
	// The retried copy, sent back once more with max 1: dead letters.
	if r := back(recs[0].PhysOffset, 1); r.Code != protocol.Success {
		t.Fatal(r)
	}
	dlq := DLQGroupPrefix + "cg"
	waitFor(t, func() bool { return b.store.MaxQueueOffset(dlq, 0) == 1 }, "DLQ message dispatched")
	if r := back(1<<40, 16); r.Code != protocol.SystemError {
		t.Fatalf("bad offset: %s", r)
	}
}

func TestAdminMetrics(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("mt", 1))
	c.call(sendReq("mt", 0, []byte("x"), nil))
	resp, err := http.Get("http://" + b.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"samsa_broker_messages_put_total 1", `samsa_broker_topic_messages_put_total{topic="mt"} 1`,
		"samsa_broker_connections_open 1", "samsa_store_fsyncs_total", "samsa_store_flush_latency_seconds_bucket",
		"samsa_store_durable_offset_bytes", "samsa_broker_longpoll_pulls_held 0", "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	resp, err = http.Get("http://" + b.AdminAddr() + "/debug/pprof/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("pprof: %v %v", resp, err)
	}
	resp.Body.Close()
}
