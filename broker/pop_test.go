package broker

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/delay"
	"github.com/samsamq/samsa/broker/pop"
	"github.com/samsamq/samsa/protocol"
)

func popReq(group, topic string, queue, max int32, invisible, poll time.Duration) *protocol.Command {
	h := protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue, MaxMsgNums: max,
		InvisibleTime: invisible.Milliseconds(), PollTime: poll.Milliseconds(), BornTime: time.Now().UnixMilli()}
	return protocol.NewRequest(protocol.PopMessage, h.Encode(), nil)
}

// popMsg is a popped message with the ack request a RocketMQ client would
// build for it from the answer's header.
type popMsg struct {
	body  string
	times int32
	ack   protocol.AckMessageRequestHeader
}

func popped(t *testing.T, group, topic string, r *protocol.Command) []popMsg {
	t.Helper()
	if r.Code == protocol.PollingTimeout {
		return nil
	}
	if r.Code != protocol.Success {
		t.Fatalf("pop: %d %s", r.Code, r.Remark)
	}
	var h protocol.PopMessageResponseHeader
	if err := h.Decode(r.ExtFields); err != nil {
		t.Fatal(err)
	}
	start := map[string]int64{}
	for _, s := range strings.Split(h.StartOffsetInfo, ";") {
		f := strings.Split(s, " ")
		start[f[1]], _ = strconv.ParseInt(f[2], 10, 64)
	}
	var out []popMsg
	for _, rec := range decodeRecords(t, r.Body) {
		q := strconv.Itoa(int(rec.QueueID))
		e := pop.ExtraInfo{CkQueueOffset: start[q], PopTime: h.PopTime, InvisibleTime: h.InvisibleTime, ReviveQid: h.ReviveQid,
			Retry: "0", BrokerName: DefaultBrokerName, QueueID: rec.QueueID, QueueOffset: rec.QueueOffset}
		out = append(out, popMsg{body: string(rec.Body), times: rec.ReconsumeTimes, ack: protocol.AckMessageRequestHeader{
			ConsumerGroup: group, Topic: topic, QueueID: rec.QueueID, ExtraInfo: e.String(), Offset: rec.QueueOffset}})
	}
	return out
}

// popN pops until n messages are in hand (the store indexes what was sent
// asynchronously, so one pop may see only part of it). All of them share
// one pop time when they came in one answer; the answers are returned.
func popN(t *testing.T, c *rawClient, group, topic string, queue int32, n int, invisible time.Duration) ([]popMsg, []*protocol.Command) {
	t.Helper()
	var out []popMsg
	var answers []*protocol.Command
	for end := time.Now().Add(30 * time.Second); len(out) < n; {
		if time.Now().After(end) {
			t.Fatalf("popped %d of %d", len(out), n)
		}
		r := c.call(popReq(group, topic, queue, int32(n-len(out)), invisible, time.Second))
		if got := popped(t, group, topic, r); len(got) > 0 {
			out = append(out, got...)
			answers = append(answers, r)
		}
	}
	return out, answers
}

func ackReq(h protocol.AckMessageRequestHeader) *protocol.Command {
	return protocol.NewRequest(protocol.AckMessage, h.Encode(), nil)
}

func sendN(t *testing.T, c *rawClient, topic string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if r := c.call(sendReq(topic, 0, []byte(b), nil)); r.Code != protocol.Success {
			t.Fatalf("send: %d %s", r.Code, r.Remark)
		}
	}
}

// Three POP consumers on a one-queue topic each get a share, and every
// message is received exactly once when all acknowledge.
func TestPopMoreConsumersThanQueues(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	admin := dialRaw(t, b.Addr())
	if r := admin.call(createTopicReq("pt", 1)); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	const n = 30
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("m%d", i))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 3 {
		c := dialRaw(t, b.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := time.Now().Add(60 * time.Second); time.Now().Before(end); {
				mu.Lock()
				done := len(seen) == n
				mu.Unlock()
				if done {
					return
				}
				r := c.call(popReq("pg1", "pt", -1, 3, time.Minute, 200*time.Millisecond))
				if r.Code != protocol.Success && r.Code != protocol.PollingTimeout {
					t.Errorf("pop: %d %s", r.Code, r.Remark)
					return
				}
				for _, m := range popped(t, "pg1", "pt", r) {
					mu.Lock()
					seen[m.body]++
					mu.Unlock()
					if a := c.call(ackReq(m.ack)); a.Code != protocol.Success {
						t.Errorf("ack: %d %s", a.Code, a.Remark)
					}
				}
			}
		}()
	}
	sendN(t, admin, "pt", want...)
	wg.Wait()
	for _, w := range want {
		if seen[w] != 1 {
			t.Errorf("%s received %d times, want once", w, seen[w])
		}
	}
}

// A broker restarted on its data dir neither loses a popped, unacknowledged
// message (it comes back after its invisible time, its reconsume times
// raised) nor hands out an acknowledged one again.
func TestPopSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, nil)
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("pr", 1)); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	sendN(t, c, "pr", "acked", "kept")
	got, _ := popN(t, c, "pg", "pr", 0, 2, 4*time.Second)
	if a := c.call(ackReq(got[0].ack)); a.Code != protocol.Success {
		t.Fatalf("ack: %d %s", a.Code, a.Remark)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, dir, nil)
	defer b.Close()
	c = dialRaw(t, b.Addr())
	// The long poll wakes when the invisible time passes.
	var again []popMsg
	for end := time.Now().Add(30 * time.Second); len(again) == 0 && time.Now().Before(end); {
		again = popped(t, "pg", "pr", c.call(popReq("pg", "pr", 0, 8, time.Minute, 10*time.Second)))
	}
	if len(again) != 1 || again[0].body != "kept" || again[0].times != 1 {
		t.Fatalf("after the restart: %+v, want kept once more with reconsume times 1", again)
	}
	if a := c.call(ackReq(got[1].ack)); a.Code != protocol.NoMessage || a.Remark == "" {
		t.Fatalf("an ack with the handle of the first delivery: %d %q, want NO_MESSAGE (stale)", a.Code, a.Remark)
	}
	if a := c.call(ackReq(again[0].ack)); a.Code != protocol.Success {
		t.Fatalf("ack: %d %s", a.Code, a.Remark)
	}
}

// ChangeInvisibleTime answers the new pop time; bad input gets a clear
// error; the POP codes not served say so; a POP group cannot also pull.
func TestPopBadInputAndRefusals(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("pb", 2)); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	sendN(t, c, "pb", "x")
	m, _ := popN(t, c, "pg", "pb", 0, 1, time.Minute)
	ch := protocol.ChangeInvisibleTimeRequestHeader{ConsumerGroup: "pg", Topic: "pb", QueueID: 0, ExtraInfo: m[0].ack.ExtraInfo,
		Offset: m[0].ack.Offset, InvisibleTime: 120_000}
	r := c.call(protocol.NewRequest(protocol.ChangeMessageInvisibleTime, ch.Encode(), nil))
	var rh protocol.ChangeInvisibleTimeResponseHeader
	if r.Code != protocol.Success || rh.Decode(r.ExtFields) != nil || rh.InvisibleTime != 120_000 {
		t.Fatalf("change: %d %s %v", r.Code, r.Remark, r.ExtFields)
	}
	if a := c.call(ackReq(m[0].ack)); a.Code != protocol.NoMessage || !strings.Contains(a.Remark, "stale") {
		t.Fatalf("ack with the handle before the change: %d %q", a.Code, a.Remark)
	}
	e, _ := pop.ParseExtraInfo(m[0].ack.ExtraInfo)
	e.PopTime = rh.PopTime
	fresh := m[0].ack
	fresh.ExtraInfo = e.String()
	if a := c.call(ackReq(fresh)); a.Code != protocol.Success {
		t.Fatalf("ack with the new handle: %d %s", a.Code, a.Remark)
	}

	for _, tc := range []struct {
		name string
		req  *protocol.Command
		code int32
	}{
		{"huge maxMsgNums", popReq("pg", "pb", 0, 1<<30, time.Minute, 0), protocol.InvalidParameter},
		{"unknown queue", popReq("pg", "pb", 7, 1, time.Minute, 0), protocol.InvalidParameter},
		{"unknown topic", popReq("pg", "nope", 0, 1, time.Minute, 0), protocol.TopicNotExist},
		{"malformed extraInfo", ackReq(protocol.AckMessageRequestHeader{ConsumerGroup: "pg", Topic: "pb", QueueID: 0,
			ExtraInfo: "garbage", Offset: 0}), protocol.InvalidParameter},
		{"ack on an unknown queue", ackReq(protocol.AckMessageRequestHeader{ConsumerGroup: "pg", Topic: "pb", QueueID: 9,
			ExtraInfo: m[0].ack.ExtraInfo, Offset: 0}), protocol.InvalidParameter},
		{"peek without a header", protocol.NewRequest(protocol.PeekMessage, nil, nil), protocol.SystemError},
		{"pop rollback", protocol.NewRequest(protocol.PopRollback, nil, nil), protocol.RequestCodeNotSupported},
		{"batch ack without a body", protocol.NewRequest(protocol.BatchAckMessage, nil, nil), protocol.InvalidParameter},
		{"notification on an unknown topic", protocol.NewRequest(protocol.Notification, (&protocol.NotificationRequestHeader{
			ConsumerGroup: "pg", Topic: "nope", QueueID: -1}).Encode(), nil), protocol.TopicNotExist},
		{"polling info on an unknown queue", protocol.NewRequest(protocol.PollingInfo, (&protocol.PollingInfoRequestHeader{
			ConsumerGroup: "pg", Topic: "pb", QueueID: 9}).Encode(), nil), protocol.InvalidParameter},
		{"pull by a POP group", pullReq("pg", "pb", 0, 0, 1, 0, "*"), protocol.SystemError},
	} {
		if r := c.call(tc.req); r.Code != tc.code || r.Remark == "" {
			t.Errorf("%s: %d %q, want code %d with a reason", tc.name, r.Code, r.Remark, tc.code)
		}
	}
}

// An ordered POP (order=true) holds the queue until its messages are
// acknowledged, and says how often each was handed out (orderCountInfo).
func TestPopOrdered(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("po", 1)); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	sendN(t, c, "po", "a", "b", "c")
	popOrdered := func() *protocol.Command {
		h := protocol.PopMessageRequestHeader{ConsumerGroup: "og", Topic: "po", QueueID: -1, MaxMsgNums: 2,
			InvisibleTime: 60_000, BornTime: time.Now().UnixMilli(), Order: true}
		return c.call(protocol.NewRequest(protocol.PopMessage, h.Encode(), nil))
	}
	var first []popMsg
	var r *protocol.Command
	for end := time.Now().Add(30 * time.Second); len(first) < 2 && time.Now().Before(end); {
		// the store indexes what was sent asynchronously: wait for all three
		if b.store.MaxQueueOffset("po", 0) < 3 {
			time.Sleep(time.Millisecond)
			continue
		}
		r = popOrdered()
		first = popped(t, "og", "po", r)
	}
	var h protocol.PopMessageResponseHeader
	if err := h.Decode(r.ExtFields); err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[0].body != "a" || first[1].body != "b" || h.OrderCountInfo != "0 0 0" {
		t.Fatalf("ordered pop: %+v, orderCountInfo %q", first, h.OrderCountInfo)
	}
	if r := popOrdered(); r.Code != protocol.PollingTimeout {
		t.Fatalf("a held queue answered %d %q", r.Code, r.Remark)
	}
	for _, m := range first {
		if a := c.call(ackReq(m.ack)); a.Code != protocol.Success {
			t.Fatalf("ack: %d %s", a.Code, a.Remark)
		}
	}
	if got := popped(t, "og", "po", popOrdered()); len(got) != 1 || got[0].body != "c" {
		t.Fatalf("after the acks: %+v, want c", got)
	}
}

// A group whose members heartbeat as push consumers of a topic is refused
// a POP of it; one heartbeating as RocketMQ 5's POP consumers is not.
func TestPopRefusedToAPushGroup(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("pm", 1)); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	if r := c.call(heartbeatReq(t, "cid-1", "pushers", "pm")); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	r := c.call(popReq("pushers", "pm", 0, 1, time.Minute, 0))
	if r.Code != protocol.SystemError || !strings.Contains(r.Remark, "push or pull") {
		t.Fatalf("POP by a push group: %d %q", r.Code, r.Remark)
	}
	hb := protocol.HeartbeatData{ClientID: "cid-2", ConsumerDataSet: []protocol.ConsumerData{{GroupName: "poppers",
		ConsumeType: "CONSUME_POP", MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromFirstOffset,
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "pm", SubString: "*", ExpressionType: "TAG"}}}}}
	body, err := protocol.MarshalBody(hb)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.call(protocol.NewRequest(protocol.HeartBeat, nil, body)); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	if r := c.call(popReq("poppers", "pm", 0, 1, time.Minute, 0)); r.Code != protocol.PollingTimeout {
		t.Fatalf("POP by a POP group: %d %q, want POLLING_TIMEOUT (nothing there)", r.Code, r.Remark)
	}
}

// BATCH_ACK_MESSAGE, with the body as RocketMQ 5 writes it (short names,
// the BitSet's bytes in base64), acknowledges the offsets its bits name
// and counts a stale one in its remark.
func TestPopBatchAck(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("pa", 1)); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	sendN(t, c, "pa", "a", "b", "c")
	got, answers := popN(t, c, "pg", "pa", 0, 3, time.Minute)
	var acks []string
	for _, r := range answers { // one batch ack per answer (pop time): bit i is offset so+i
		var h protocol.PopMessageResponseHeader
		if err := h.Decode(r.ExtFields); err != nil {
			t.Fatal(err)
		}
		var bits byte
		so := int64(-1)
		for _, m := range popped(t, "pg", "pa", r) {
			if so < 0 {
				so = m.ack.Offset
			}
			if m.body != "b" {
				bits |= 1 << (m.ack.Offset - so)
			}
		}
		if bits != 0 {
			acks = append(acks, fmt.Sprintf(`{"c":"pg","t":"pa","r":"0","so":%d,"q":0,"rq":0,"pt":%d,"it":60000,"b":"%s"}`,
				so, h.PopTime, base64.StdEncoding.EncodeToString([]byte{bits})))
		}
	}
	if len(got) != 3 {
		t.Fatalf("popped %d", len(got))
	}
	body := `{"brokerName":"` + DefaultBrokerName + `","acks":[` + strings.Join(acks, ",") + `]}`
	if a := c.call(protocol.NewRequest(protocol.BatchAckMessage, nil, []byte(body))); a.Code != protocol.Success || a.Remark != "" {
		t.Fatalf("batch ack: %d %q", a.Code, a.Remark)
	}
	if a := c.call(protocol.NewRequest(protocol.BatchAckMessage, nil, []byte(body))); a.Code != protocol.Success || !strings.Contains(a.Remark, "2 not in flight") {
		t.Fatalf("batch ack again: %d %q, want the two counted stale", a.Code, a.Remark)
	}
	if st := b.pop.Stats(); len(st) != 1 || st[0].InFlight != 1 {
		t.Fatalf("stats %+v, want one message (b) in flight", st)
	}
}

// POP's back-off follows the retry ladder one step behind a push
// consumer's retries: the invisible time is the first step.
func TestPopBackoffLadder(t *testing.T) {
	levels, err := delay.ParseLevels(DefaultMessageDelayLevel)
	if err != nil {
		t.Fatal(err)
	}
	f := popBackoff(levels)
	for times, want := range map[int32]time.Duration{1: 0, 2: 10 * time.Second, 3: 30 * time.Second, 4: time.Minute,
		17: 2 * time.Hour, 100: 2 * time.Hour} {
		if got := f(times); got != want {
			t.Errorf("attempt %d waits %v past its invisible time, want %v", times, got, want)
		}
	}
}

// The dashboard and GET_CONSUME_STATS show a POP group's messages in
// flight and its lowest offset not acknowledged as committed.
func TestPopObservability(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("pv", 1)); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	sendN(t, c, "pv", "a", "b", "c", "d")
	got, _ := popN(t, c, "vg", "pv", 0, 3, time.Hour)
	if a := c.call(ackReq(got[0].ack)); a.Code != protocol.Success {
		t.Fatalf("ack: %d %s", a.Code, a.Remark)
	}
	d, err := dashboardSource{b: b}.Group("vg")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Queues) != 1 || d.Queues[0].InFlight != 2 || d.Queues[0].Committed != 1 || d.Queues[0].Lag != 3 {
		t.Fatalf("dashboard: %+v", d.Queues)
	}
	var row bool
	for _, g := range (dashboardSource{b: b}).Groups() {
		if g.Name == "vg" {
			row = g.InFlight == 2
		}
	}
	if !row {
		t.Fatalf("the dashboard's group list misses vg's messages in flight: %+v", dashboardSource{b: b}.Groups())
	}
	r := c.call(protocol.NewRequest(protocol.GetConsumeStats, map[string]string{"consumerGroup": "vg"}, nil))
	var cs protocol.ConsumeStats
	if r.Code != protocol.Success || cs.Decode(r.Body) != nil {
		t.Fatalf("consume stats: %d %s", r.Code, r.Remark)
	}
	w := cs.OffsetTable[protocol.MessageQueue{Topic: "pv", BrokerName: DefaultBrokerName, QueueID: 0}]
	if w.PopInFlight != 2 || w.ConsumerOffset != 1 || w.BrokerOffset != 4 {
		t.Fatalf("consume stats: %+v", cs.OffsetTable)
	}
}

// PEEK_MESSAGE shows what a pop would hand out and hands out nothing;
// NOTIFICATION says whether there is something, waiting for an arrival;
// POLLING_INFO counts the waiting.
func TestPopPeekNotificationPollingInfo(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("pk", 1)); r.Code != protocol.Success {
		t.Fatal(r.Remark)
	}
	notify := func(poll time.Duration) *protocol.Command {
		h := protocol.NotificationRequestHeader{ConsumerGroup: "kg", Topic: "pk", QueueID: -1, PollTime: poll.Milliseconds(),
			BornTime: time.Now().UnixMilli()}
		return c.call(protocol.NewRequest(protocol.Notification, h.Encode(), nil))
	}
	var nh protocol.NotificationResponseHeader
	if r := notify(0); r.Code != protocol.Success || nh.Decode(r.ExtFields) != nil || nh.HasMsg {
		t.Fatalf("notification on an empty topic: %d %q %v", r.Code, r.Remark, r.ExtFields)
	}
	// a notification waits in the broker; POLLING_INFO counts it
	waiting := make(chan *protocol.Command, 1)
	c2 := dialRaw(t, b.Addr())
	go func() {
		h := protocol.NotificationRequestHeader{ConsumerGroup: "kg", Topic: "pk", QueueID: -1, PollTime: 20_000,
			BornTime: time.Now().UnixMilli()}
		waiting <- c2.call(protocol.NewRequest(protocol.Notification, h.Encode(), nil))
	}()
	pi := protocol.PollingInfoRequestHeader{ConsumerGroup: "kg", Topic: "pk", QueueID: 0}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		r := c.call(protocol.NewRequest(protocol.PollingInfo, pi.Encode(), nil))
		var ph protocol.PollingInfoResponseHeader
		if r.Code != protocol.Success || ph.Decode(r.ExtFields) != nil {
			t.Fatalf("polling info: %d %q", r.Code, r.Remark)
		}
		if ph.PollingNum == 1 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("polling info never counted the waiting notification: %d", ph.PollingNum)
		}
	}
	sendN(t, c, "pk", "a", "b")
	select {
	case r := <-waiting:
		if r.Code != protocol.Success || nh.Decode(r.ExtFields) != nil || !nh.HasMsg {
			t.Fatalf("the waiting notification: %d %q %v", r.Code, r.Remark, r.ExtFields)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the arrival did not answer the waiting notification")
	}
	peek := protocol.PeekMessageRequestHeader{ConsumerGroup: "kg", Topic: "pk", QueueID: -1, MaxMsgNums: 8}
	var seen []string
	for end := time.Now().Add(30 * time.Second); len(seen) < 2 && time.Now().Before(end); {
		r := c.call(protocol.NewRequest(protocol.PeekMessage, peek.Encode(), nil))
		seen = nil
		if r.Code == protocol.Success {
			for _, rec := range decodeRecords(t, r.Body) {
				seen = append(seen, string(rec.Body))
			}
		}
	}
	if len(seen) != 2 || seen[0] != "a" || seen[1] != "b" {
		t.Fatalf("peek: %v", seen)
	}
	if got, _ := popN(t, c, "kg", "pk", 0, 2, time.Minute); got[0].body != "a" || got[0].times != 0 {
		t.Fatalf("after the peeks the pop gave %+v", got)
	}
	if r := c.call(protocol.NewRequest(protocol.PeekMessage, peek.Encode(), nil)); r.Code != protocol.PullNotFound {
		t.Fatalf("peek with everything in flight: %d %q", r.Code, r.Remark)
	}
}

// A POP with an SQL92 selector (enablePropertyFilter) hands out only the
// messages it matches, and a tag expression only the tag's; what neither
// matches is passed over, never handed out.
func TestPopFilters(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.EnablePropertyFilter = true })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("pf", 1))
	for i := range 10 {
		tag := []string{"even", "odd"}[i%2]
		if r := c.call(sendReq("pf", 0, []byte(fmt.Sprint(i)), map[string]string{"TAGS": tag, "n": fmt.Sprint(i)})); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("pf", 0) == 10 }, "dispatch")
	pop := func(group, expType, exp string) string {
		h := protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: "pf", QueueID: -1, MaxMsgNums: 32,
			InvisibleTime: 60_000, BornTime: time.Now().UnixMilli(), ExpType: expType, Exp: exp}
		var out []string
		for _, m := range popped(t, group, "pf", c.call(protocol.NewRequest(protocol.PopMessage, h.Encode(), nil))) {
			out = append(out, m.body)
		}
		return strings.Join(out, ",")
	}
	if got := pop("sql", ExpSQL92, "n >= 4 AND TAGS = 'odd'"); got != "5,7,9" {
		t.Fatalf("SQL92 pop: %q", got)
	}
	if got := pop("tag", ExpTag, "even"); got != "0,2,4,6,8" {
		t.Fatalf("tag pop: %q", got)
	}
	if got := pop("sql", ExpSQL92, "n >= 4 AND TAGS = 'odd'"); got != "" {
		t.Fatalf("the SQL92 group's second pop: %q, want nothing", got)
	}
}
