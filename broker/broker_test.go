package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

func TestSendPullRoundTrip(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("rt", 2)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	for i := 0; i < 20; i++ {
		tag := "even"
		if i%2 == 1 {
			tag = "odd"
		}
		r := c.call(sendReq("rt", 1, []byte(fmt.Sprintf("m%d", i)), map[string]string{"TAGS": tag, "KEYS": fmt.Sprint(i)}))
		if r.Code != protocol.Success || ext64(t, r, "queueOffset") != int64(i) {
			t.Fatalf("send %d: %s", i, r)
		}
	}
	// Wait for dispatch: the max offset reaches 20.
	deadline := time.Now().Add(30 * time.Second)
	for b.store.MaxQueueOffset("rt", 1) < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	r := c.call(pullReq("g", "rt", 1, 0, 32, 0, "*"))
	if r.Code != protocol.Success {
		t.Fatal(r)
	}
	recs := decodeRecords(t, r.Body)
	if len(recs) != 20 || ext64(t, r, "nextBeginOffset") != 20 || ext64(t, r, "maxOffset") != 20 {
		t.Fatalf("pulled %d, header %v", len(recs), r.ExtFields)
	}
	for i, rec := range recs {
		if string(rec.Body) != fmt.Sprintf("m%d", i) || rec.QueueOffset != int64(i) {
			t.Fatalf("record %d: %q at %d", i, rec.Body, rec.QueueOffset)
		}
		if k, _ := record.LookupProperty(rec.Properties, "KEYS"); string(k) != fmt.Sprint(i) {
			t.Fatalf("record %d keys %q", i, k)
		}
	}
	// Tag filter.
	r = c.call(pullReq("g", "rt", 1, 0, 32, 0, "odd"))
	if recs := decodeRecords(t, r.Body); r.Code != protocol.Success || len(recs) != 10 || string(recs[0].Body) != "m1" {
		t.Fatalf("filtered pull: %s, %d records", r, len(recs))
	}
	// Offsets past the end, an empty queue, a moved offset.
	if r := c.call(pullReq("g", "rt", 1, 20, 32, 0, "*")); r.Code != protocol.PullNotFound {
		t.Fatalf("at max: %s", r)
	}
	if r := c.call(pullReq("g", "rt", 1, 50, 32, 0, "*")); r.Code != protocol.PullOffsetMoved || ext64(t, r, "nextBeginOffset") != 20 {
		t.Fatalf("past max: %s", r)
	}
	if r := c.call(pullReq("g", "rt", 0, 0, 32, 0, "*")); r.Code != protocol.PullNotFound {
		t.Fatalf("empty queue: %s", r)
	}
	if r := c.call(pullReq("g", "rt", 5, 0, 32, 0, "*")); r.Code != protocol.SystemError {
		t.Fatalf("bad queue: %s", r)
	}
	if r := c.call(pullReq("g", "nosuch", 0, 0, 32, 0, "*")); r.Code != protocol.TopicNotExist {
		t.Fatalf("unknown topic: %s", r)
	}
	// Offsets: commit, query, max/min.
	uh := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "rt", QueueID: 1, CommitOffset: 7}
	if r := c.call(protocol.NewRequest(protocol.UpdateConsumerOffset, uh.Encode(), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	qh := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "rt", QueueID: 1}
	if r := c.call(protocol.NewRequest(protocol.QueryConsumerOffset, qh.Encode(), nil)); r.Code != protocol.Success || ext64(t, r, "offset") != 7 {
		t.Fatal(r)
	}
	mh := protocol.GetMaxOffsetRequestHeader{Topic: "rt", QueueID: 1}
	if r := c.call(protocol.NewRequest(protocol.GetMaxOffset, mh.Encode(), nil)); ext64(t, r, "offset") != 20 {
		t.Fatal(r)
	}
	sh := protocol.SearchOffsetRequestHeader{Topic: "rt", QueueID: 1, Timestamp: 0}
	if r := c.call(protocol.NewRequest(protocol.SearchOffsetByTimestamp, sh.Encode(), nil)); ext64(t, r, "offset") != 0 {
		t.Fatal(r)
	}
	eh := protocol.GetEarliestMsgStoretimeRequestHeader{Topic: "rt", QueueID: 1}
	if r := c.call(protocol.NewRequest(protocol.GetEarliestMsgStoretime, eh.Encode(), nil)); r.Code != protocol.Success || ext64(t, r, "timestamp") <= 0 {
		t.Fatal(r)
	}
}

func TestBatchSend(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("bt", 1))
	var items []batchItem
	for i := 0; i < 50; i++ {
		p, _ := record.EncodeProperties(map[string]string{"TAGS": "t", "i": fmt.Sprint(i)})
		items = append(items, batchItem{Flag: int32(i), Body: []byte(fmt.Sprintf("batch-%d", i)), Properties: p})
	}
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "bt", DefaultTopic: AutoCreateTopicKey,
		DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli(), Batch: true}
	r := c.call(protocol.NewRequest(protocol.SendBatchMessage, h.V2().Encode(), encodeBatch(items)))
	if r.Code != protocol.Success {
		t.Fatal(r)
	}
	// A broken batch body is refused.
	bad := encodeBatch(items[:2])
	bad[3] = 0xff
	if r := c.call(protocol.NewRequest(protocol.SendBatchMessage, h.V2().Encode(), bad)); r.Code != protocol.MessageIllegal {
		t.Fatal(r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for b.store.MaxQueueOffset("bt", 0) < 50 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	var got []record.Record
	for off := int64(0); off < 50; {
		r := c.call(pullReq("g", "bt", 0, off, 32, 0, "*"))
		if r.Code != protocol.Success {
			t.Fatal(r)
		}
		got = append(got, decodeRecords(t, r.Body)...)
		off = ext64(t, r, "nextBeginOffset")
	}
	for i, rec := range got {
		if string(rec.Body) != fmt.Sprintf("batch-%d", i) || rec.Flag != int32(i) {
			t.Fatalf("record %d: %q flag %d", i, rec.Body, rec.Flag)
		}
	}
}

func TestAutoCreateTopicOnSend(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(sendReq("fresh", -1, []byte("x"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if tc, ok := b.topics.get("fresh"); !ok || tc.WriteQueueNums != 4 {
		t.Fatalf("auto-created %+v %v", tc, ok)
	}
	if r := c.call(sendReq(AutoCreateTopicKey, 0, []byte("x"), nil)); r.Code == protocol.Success {
		t.Fatal("send to TBW102 accepted")
	}
	b2 := startBroker(t, "", func(c *Config) { _ = c.Set("autoCreateTopicEnable", "false") })
	defer b2.Close()
	c2 := dialRaw(t, b2.Addr())
	if r := c2.call(sendReq("fresh", 0, []byte("x"), nil)); r.Code != protocol.TopicNotExist {
		t.Fatal(r)
	}
}
