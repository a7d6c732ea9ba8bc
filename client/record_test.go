package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
)

// TestRecordViewMatchesMessage: every field a Record reads equals what the
// MessageExt decode of the same answer holds.
func TestRecordViewMatchesMessage(t *testing.T) {
	ids := newIDGen(time.Now)
	var recs []record.Fields
	for i := range 5 {
		m := &Message{Topic: "t", Body: []byte(fmt.Sprint("body-", i)), Tags: "tag", Keys: []string{"k1", "k2"},
			Properties: map[string]string{"user": "v"}}
		recs = append(recs, record.Fields{Topic: "t", QueueID: 2, QueueOffset: int64(10 + i), Flag: 7, BornTimestamp: 1700000000000 + int64(i),
			StoreTimestamp: 1700000000500, ReconsumeTimes: 3, Properties: appendProperties(nil, m, ids.next())})
	}
	body := answerOf(t, recs...)
	q := MessageQueue{Topic: "t", BrokerName: "broker-a", QueueID: 2}
	msgs, err := decodeAnswer(body, decodeOptions{brokerName: q.BrokerName, verify: true, pullOffset: 10})
	if err != nil {
		t.Fatal(err)
	}
	views, err := decodeRecords(body, q, 10, decodeOptions{brokerName: q.BrokerName, verify: true, pullOffset: 10})
	if err != nil || len(views) != len(msgs) {
		t.Fatalf("%d records, %v; want %d", len(views), err, len(msgs))
	}
	for i, r := range views {
		m := msgs[i]
		if r.Topic() != m.Topic || r.QueueID() != m.Queue.QueueID || r.QueueOffset() != m.QueueOffset ||
			r.CommitLogOffset() != m.CommitLogOffset || int32(r.StoreSize()) != m.StoreSize || r.Flag() != m.Flag ||
			r.SysFlag() != m.SysFlag || !r.BornTime().Equal(m.BornTime) || !r.StoreTime().Equal(m.StoreTime) ||
			r.BornHost() != m.BornHost || r.StoreHost() != m.StoreHost || r.ReconsumeTimes() != m.ReconsumeTimes ||
			!bytes.Equal(r.Body(), m.Body) || r.Tags() != m.Tags || fmt.Sprint(r.Keys()) != fmt.Sprint(m.Keys) ||
			r.MsgID() != m.MsgID || r.OffsetMsgID() != m.OffsetMsgID || r.Property("user") != m.Property("user") {
			t.Fatalf("record %d: view %v differs from message %v", i, r, m)
		}
		back, err := r.Message(q)
		if err != nil || back.MsgID != m.MsgID || !bytes.Equal(back.Body, m.Body) || back.Queue != q {
			t.Fatalf("record %d: Message() = %v, %v", i, back, err)
		}
	}
}

// TestRecordViewRefusesMisdirected: the view decode holds records to the
// pulled queue as checkDirected does, and refuses a corrupt one.
func TestRecordViewRefusesMisdirected(t *testing.T) {
	q := MessageQueue{Topic: "t", BrokerName: "broker-a", QueueID: 2}
	body := answerOf(t, record.Fields{Topic: "t", QueueID: 2, QueueOffset: 5}, record.Fields{Topic: "t", QueueID: 3, QueueOffset: 6})
	if _, err := decodeRecords(body, q, 5, decodeOptions{verify: true}); !errors.Is(err, ErrMisdirected) {
		t.Fatalf("a record of another queue: %v", err)
	}
	body = answerOf(t, record.Fields{Topic: "t", QueueID: 2, QueueOffset: 5})
	body[len(body)-30] ^= 0xff // a property byte, under the record CRC
	if _, err := decodeRecords(body, q, 5, decodeOptions{verify: true}); !errors.Is(err, ErrCorruptMessage) || errors.Is(err, ErrMisdirected) {
		t.Fatalf("a corrupt record: %v", err)
	}
}

// TestPullRecords: a pull with Records answers the same messages, in the
// same order and filtered by tag the same way, as one without.
func TestPullRecords(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("viewed", 1)
	p := newTestProducer(t, c, nil)
	ctx := context.Background()
	for i := 0; i < 12; i++ {
		tag := []string{"even", "odd"}[i%2]
		if _, err := p.Send(ctx, &Message{Topic: "viewed", Body: []byte(fmt.Sprint(i)), Tags: tag}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitMessages("viewed", 12)
	pc, err := NewPullConsumer(PullConsumerOptions{ClientOptions: c.clientOptions(), Group: "view-group"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	qs, err := pc.Queues(ctx, "viewed")
	if err != nil || len(qs) != 1 {
		t.Fatalf("queues %v %v", qs, err)
	}
	for _, expr := range []string{"*", "odd"} {
		a, err := pc.Pull(ctx, qs[0], 0, PullOptions{MaxMessages: 32, Expression: expr})
		if err != nil {
			t.Fatal(err)
		}
		b, err := pc.Pull(ctx, qs[0], 0, PullOptions{MaxMessages: 32, Expression: expr, Records: true})
		if err != nil {
			t.Fatal(err)
		}
		if b.Messages != nil || len(b.Records) != len(a.Messages) || b.NextOffset != a.NextOffset || len(a.Messages) == 0 {
			t.Fatalf("%q: %d records (messages %v), want %d messages", expr, len(b.Records), b.Messages, len(a.Messages))
		}
		for i, r := range b.Records {
			if string(r.Body()) != string(a.Messages[i].Body) || r.MsgID() != a.Messages[i].MsgID || r.QueueOffset() != a.Messages[i].QueueOffset {
				t.Fatalf("%q: record %d is %v, message %v", expr, i, r, a.Messages[i])
			}
		}
	}
}
