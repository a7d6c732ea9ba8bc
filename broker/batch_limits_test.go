package broker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

func itemsBatchReq(topic string, items []batchItem) *protocol.Command {
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: AutoCreateTopicKey,
		DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli(), Batch: true}
	return protocol.NewRequest(protocol.SendBatchMessage, h.V2().Encode(), encodeBatch(items))
}

// TestBatchOverMaxMessageSize: a 5 MiB batch of 1 MiB messages (each
// under the 4 MiB limit) is refused with MESSAGE_ILLEGAL and nothing of it
// is stored; the same messages in two batches go through.
func TestBatchOverMaxMessageSize(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.MappedFileSizeCommitLog = 32 << 20 })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("big", 1))
	body := bytes.Repeat([]byte("x"), 1<<20)
	items := make([]batchItem, 5)
	for i := range items {
		items[i] = batchItem{Body: body}
	}
	before := b.store.WrittenOffset()
	r := c.call(itemsBatchReq("big", items))
	if r.Code != protocol.MessageIllegal || !strings.Contains(r.Remark, "exceeds maxMessageSize") {
		t.Fatalf("5 MiB batch: %s", r)
	}
	if w := b.store.WrittenOffset(); w != before || b.store.MaxQueueOffset("big", 0) != 0 {
		t.Fatalf("a refused batch wrote %d bytes", w-before)
	}
	for _, part := range [][]batchItem{items[:3], items[3:]} {
		if r := c.call(itemsBatchReq("big", part)); r.Code != protocol.Success {
			t.Fatalf("batch of %d MiB: %s", len(part), r)
		}
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("big", 0) == 5 }, "five messages stored")
}

// TestBatchAnswerMustFitAFrame: a batch of small messages whose answer
// (a 33-byte msgId each) would exceed the frame is refused before
// anything is stored, not stored and left unanswered.
func TestBatchAnswerMustFitAFrame(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.MaxFrameSize, c.MaxMessageSize = 64<<10, 64<<10 })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("many", 1))
	n := b.batchAnswerLimit()/33 + 1
	items := make([]batchItem, n)
	for i := range items {
		items[i] = batchItem{Body: []byte("m")}
	}
	before := b.store.WrittenOffset()
	r := c.call(itemsBatchReq("many", items))
	if r.Code != protocol.MessageIllegal || !strings.Contains(r.Remark, "would not fit a frame") {
		t.Fatalf("batch of %d: %s", n, r)
	}
	if w := b.store.WrittenOffset(); w != before {
		t.Fatalf("a refused batch wrote %d bytes", w-before)
	}
	// One message fewer fits, and is answered with every msgId.
	r = c.call(itemsBatchReq("many", items[:n-1]))
	if r.Code != protocol.Success || strings.Count(r.ExtFields["msgId"], ",") != n-2 {
		t.Fatalf("batch of %d: code %d, %d msgIds", n-1, r.Code, strings.Count(r.ExtFields["msgId"], ",")+1)
	}
}
