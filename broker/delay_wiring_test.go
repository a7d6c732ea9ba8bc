package broker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/delay"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// shortLevels is a delay table for tests: level n waits n×300 ms up to
// level 4, then seconds.
const shortLevels = "300ms 600ms 900ms 1200ms"

// waitRecord pulls topic/queue from offset until a record arrives or the
// deadline passes.
func waitRecord(t *testing.T, c *rawClient, topic string, queue int32, offset int64, deadline time.Duration) record.Record {
	t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		r := c.call(pullReq("waiter", topic, queue, offset, 1, 0, "*"))
		if r.Code == protocol.Success {
			return decodeRecords(t, r.Body)[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("nothing arrived in %s/%d@%d within %v", topic, queue, offset, deadline)
	return record.Record{}
}

// TestDelayWiring: the broker's request path into package delay, on one
// broker (the package tests the levels, the wheel and their clocks). A
// DELAY=2 message is stored in the schedule topic, answered with its real
// queue, and delivered there with its properties restored (DELAY gone,
// REAL_TOPIC and REAL_QID kept as RocketMQ does); GET_ALL_DELAY_OFFSET,
// the text stats and delayOffset.json show the progress; timers arrive;
// a send-back waits its retry level and goes to %DLQ% past
// maxReconsumeTimes; what delay refuses gets RocketMQ's codes.
func TestDelayWiring(t *testing.T) {
	b := startBroker(t, "", func(c *Config) {
		c.MessageDelayLevel = "100ms 500ms 200ms 300ms"
		c.TimerMaxDelaySec = 60
	})
	defer b.Close()
	c := dialRaw(t, b.Addr())
	for _, topic := range []string{"dl", "tm", "rb", "rf"} {
		if r := c.call(createTopicReq(topic, 2)); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}

	// A delay level.
	t0 := time.Now().UnixMilli()
	r := c.call(sendReq("dl", 1, []byte("later"), map[string]string{"DELAY": "2", "TAGS": "tg", "KEYS": "k1"}))
	if r.Code != protocol.Success {
		t.Fatal(r)
	}
	if q := r.ExtFields["queueId"]; q != "1" {
		t.Errorf("answer names queue %s, want the real queue 1", q)
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset(ScheduleTopic, 1) == 1 }, "the schedule queue of level 2 to hold the message")
	// The first record of dl/1 is the delivered copy, stored no earlier
	// than the level's delay: the message was not stored there at once.
	rec := waitRecord(t, c, "dl", 1, 0, 20*time.Second)
	if lag := rec.StoreTimestamp - t0; lag < 500 {
		t.Fatalf("delivered %d ms after the send, before the level's 500 ms", lag)
	}
	props := record.ParseProperties(rec.UserProperties())
	if string(rec.Body) != "later" || string(rec.Topic) != "dl" || props["DELAY"] != "" || props["TAGS"] != "tg" ||
		props["KEYS"] != "k1" || props["REAL_TOPIC"] != "dl" || props["REAL_QID"] != "1" {
		t.Fatalf("delivered %s %q %v", rec.Topic, rec.Body, props)
	}
	ans := c.call(protocol.NewRequest(protocol.GetAllDelayOffset, nil, nil))
	var f delay.Offsets
	if ans.Code != protocol.Success || json.Unmarshal(ans.Body, &f) != nil || f.OffsetTable[2] != 1 {
		t.Fatalf("GET_ALL_DELAY_OFFSET: %s %s", ans, ans.Body)
	}
	// The text stats show it too (RocketMQ's scheduleMessageOffset_<level>).
	tc, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	fmt.Fprintf(tc, "stats schedule\r\n")
	line, _ := bufio.NewReader(tc).ReadString('\n')
	if line != "STAT scheduleMessageOffset_2 1,1\r\n" {
		t.Fatalf("stats schedule: %q", line)
	}

	// Timers: two ahead, one due already; beyond timerMaxDelaySec refused.
	now := time.Now().UnixMilli()
	sends := []map[string]string{
		{"TIMER_DELAY_MS": "300"},
		{"TIMER_DELAY_SEC": "1"},
		{"TIMER_DELIVER_MS": strconv.FormatInt(now-1000, 10)}, // due: at once
	}
	want := []int64{now + 300, now + 1000, now}
	for i, p := range sends {
		p["KEYS"] = strconv.Itoa(i)
		if r := c.call(sendReq("tm", 0, []byte("t"+strconv.Itoa(i)), p)); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	seen := 0
	for off := int64(0); off < 3; off++ {
		rec := waitRecord(t, c, "tm", 0, off, 20*time.Second)
		props := record.ParseProperties(rec.UserProperties())
		i, _ := strconv.Atoi(props["KEYS"])
		if rec.StoreTimestamp < want[i] {
			t.Errorf("timer %d delivered at %d, %d ms early", i, rec.StoreTimestamp, want[i]-rec.StoreTimestamp)
		}
		if i != 2 && (props["REAL_TOPIC"] != "" || props["TIMER_OUT_MS"] == "" || props["TIMER_DEQUEUE_MS"] == "") {
			t.Errorf("timer %d delivered with %v", i, props)
		}
		seen |= 1 << i
	}
	if seen != 7 {
		t.Fatalf("delivered set %b", seen)
	}

	// A send-back with delay level 0 waits level 3 + reconsume times
	// (200 ms, then 300 ms); past maxReconsumeTimes it goes to
	// %DLQ%group at once, with its origin fields.
	r = c.call(sendReq("rb", 0, []byte("fails"), map[string]string{"KEYS": "k", "TAGS": "t"}))
	origin := r.Ext("msgId")
	_, phys, err := parseOffsetMsgID(origin)
	if err != nil {
		t.Fatal(err)
	}
	back := func(offset int64) {
		h := protocol.ConsumerSendMsgBackRequestHeader{Offset: offset, Group: "cg", DelayLevel: 0, OriginTopic: "rb",
			MaxReconsumeTimes: 2, HasMaxReconsumeTimes: true}
		if r := c.call(protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil)); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	retry := RetryGroupPrefix + "cg"
	for i, wait := range []int64{200, 300} {
		t0 := time.Now().UnixMilli()
		back(phys)
		rec := waitRecord(t, c, retry, 0, int64(i), 20*time.Second)
		if lag := rec.StoreTimestamp - t0; lag < wait {
			t.Fatalf("retry %d consumable %d ms after the send-back, before its %d ms", i+1, lag, wait)
		}
		if rec.ReconsumeTimes != int32(i+1) {
			t.Fatalf("retry %d has reconsume times %d", i+1, rec.ReconsumeTimes)
		}
		phys = rec.PhysOffset
	}
	back(phys)
	dlq := DLQGroupPrefix + "cg"
	rec = waitRecord(t, c, dlq, 0, 0, 20*time.Second)
	props = record.ParseProperties(rec.UserProperties())
	if string(rec.Body) != "fails" || rec.ReconsumeTimes != 3 || props["RETRY_TOPIC"] != "rb" ||
		props["ORIGIN_MESSAGE_ID"] != origin || props["KEYS"] != "k" || props["TAGS"] != "t" {
		t.Fatalf("dead letter %q reconsume %d %v (origin %s)", rec.Body, rec.ReconsumeTimes, props, origin)
	}
	if n := b.store.MaxQueueOffset(retry, 0); n != 2 {
		t.Fatalf("%d retries, want 2", n)
	}

	// Refusals.
	if r := c.call(sendReq(ScheduleTopic, 0, []byte("x"), nil)); r.Code != protocol.NoPermission {
		t.Fatalf("send to %s: %s", ScheduleTopic, r)
	}
	if r := c.call(sendReq("rf", 0, []byte("far"), map[string]string{"TIMER_DELAY_SEC": "61"})); r.Code != protocol.MessageIllegal {
		t.Fatalf("a timer beyond timerMaxDelaySec: %s", r)
	}
	req := batchReq("rf", 2)
	h, _ := protocol.DecodeSendMessageRequest(req)
	h.Properties = "DELAY\x013\x02"
	req = protocol.NewRequest(protocol.SendBatchMessage, h.V2().Encode(), req.Body)
	if r := c.call(req); r.Code != protocol.MessageIllegal {
		t.Fatalf("delayed batch: %s", r)
	}
	if r := c.call(sendReq("rf", 0, []byte("x"), map[string]string{"TIMER_DELAY_MS": "soon"})); r.Code != protocol.MessageIllegal {
		t.Fatalf("bad timer property: %s", r)
	}

	// Close saves the progress (the saver runs every 10 s only).
	b.Close()
	saved, _, err := jsonFile{fs: b.cfg.FS, path: b.cfg.ConfigDir() + "/delayOffset.json"}.read()
	if d, derr := delay.DecodeOffsets(saved); err != nil || derr != nil || d.OffsetTable[2] != 1 {
		t.Fatalf("delayOffset.json after Close: %s %v %v", saved, err, derr)
	}
}

// TestDeferDeliveryCodes: a timer while timers are off is SYSTEM_ERROR
// (RocketMQ's answer), any other refusal of package delay
// MESSAGE_ILLEGAL.
func TestDeferDeliveryCodes(t *testing.T) {
	req := protocol.NewRequest(protocol.SendMessage, nil, nil)
	if r := deferAnswer(req, delay.ErrTimersOff); r.Code != protocol.SystemError {
		t.Fatalf("timers off: %s", r)
	}
	if r := deferAnswer(req, errors.New("bad TIMER_DELAY_MS")); r.Code != protocol.MessageIllegal {
		t.Fatalf("bad property: %s", r)
	}
	if r := deferAnswer(req, nil); r != nil {
		t.Fatalf("no error: %s", r)
	}
}
