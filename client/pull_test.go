package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
)

func TestPullConsumer(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("pulled", 2)
	p := newTestProducer(t, c, nil)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		tag := "even"
		if i%2 == 1 {
			tag = "odd"
		}
		if _, err := p.Send(ctx, &Message{Topic: "pulled", Body: []byte(fmt.Sprint(i)), Tags: tag, ShardingKey: "same"}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitMessages("pulled", 20)
	pc, err := NewPullConsumer(PullConsumerOptions{ClientOptions: c.clientOptions(), Group: "pull-group"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	qs, err := pc.Queues(ctx, "pulled")
	if err != nil || len(qs) != 2 {
		t.Fatalf("queues %v %v", qs, err)
	}
	total, odd := 0, 0
	for _, q := range qs {
		off := int64(0)
		for {
			res, err := pc.Pull(ctx, q, off, PullOptions{MaxMessages: 4})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status == PullNoNewMessage {
				break
			}
			total += len(res.Messages)
			off = res.NextOffset
		}
		res, err := pc.Pull(ctx, q, 0, PullOptions{Expression: "odd", MaxMessages: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			if m.Tags != "odd" {
				t.Fatalf("filter let %q through", m.Tags)
			}
		}
		odd += len(res.Messages)
		if err := pc.Commit(ctx, map[MessageQueue]int64{q: off}); err != nil {
			t.Fatal(err)
		}
		if got, err := pc.Committed(ctx, q); err != nil || got != off {
			t.Fatalf("committed %d %v, want %d", got, err, off)
		}
	}
	if total != 20 || odd != 10 {
		t.Fatalf("pulled %d messages, %d odd", total, odd)
	}
	// Long poll: a waiting pull returns when a message arrives.
	q := qs[0]
	max, _ := pc.MaxOffset(ctx, q)
	done := make(chan *PullResult, 1)
	go func() {
		res, err := pc.Pull(ctx, q, max, PullOptions{Wait: 60 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	for i := 0; i < 2; i++ { // one of the two lands in q
		p.Send(ctx, &Message{Topic: "pulled", Body: []byte("late")})
	}
	// The event, not a stopwatch: the pull holds for 60 s, so an answer
	// carrying the message can only come from its arrival (an expired hold
	// answers with no messages).
	select {
	case res := <-done:
		if res == nil || len(res.Messages) != 1 {
			t.Fatalf("long poll: %+v after %v", res, time.Since(start))
		}
	case <-time.After(90 * time.Second):
		t.Fatal("long poll never answered")
	}
	if _, err := pc.Committed(ctx, MessageQueue{"pulled", "broker-a", 7}); !errors.Is(err, ErrNoOffset) && err == nil {
		t.Fatalf("uncommitted queue: %v", err)
	}
}

// BenchmarkDecode decodes a pull answer of 64 loadgen-like records (1 KiB
// body, UNIQ_KEY and WAIT properties), with the client's CRC check and
// without, as MessageExts and as Records (PullOptions.Records): ns/msg
// and B/msg are per message (the target: at most 150 ns and 64 B).
func BenchmarkDecode(b *testing.B) {
	const n = 64
	var body []byte
	ids := newIDGen(time.Now)
	store := netip.MustParseAddrPort("127.0.0.1:10911")
	for i := range n {
		m := &Message{Topic: "loadgen-0", Body: bytes.Repeat([]byte("a"), 1024), Properties: map[string]string{PropertyWaitStoreMsgOK: "true"}}
		f := record.Fields{QueueID: 3, QueueOffset: int64(i), PhysOffset: int64(len(body)), BornTimestamp: 1700000000000,
			StoreTimestamp: 1700000000001, StoreHost: store, BornHost: netip.MustParseAddrPort("127.0.0.1:5555"),
			Topic: m.Topic, Body: m.Body, Properties: appendProperties(nil, m, ids.next())}
		sz, err := f.Size()
		if err != nil {
			b.Fatal(err)
		}
		r := make([]byte, sz)
		if _, err := record.Encode(r, &f); err != nil {
			b.Fatal(err)
		}
		body = append(body, r...)
	}
	for _, verify := range []bool{true, false} {
		b.Run(fmt.Sprintf("records/crc=%v", verify), func(b *testing.B) {
			// PullOptions.Records: views of the answer's records.
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			q := MessageQueue{Topic: "loadgen-0", BrokerName: "broker-a", QueueID: 3}
			for b.Loop() {
				recs, err := decodeRecords(body, q, 0, decodeOptions{brokerName: "broker-a", verify: verify})
				if err != nil || len(recs) != n {
					b.Fatal(len(recs), err)
				}
			}
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
			b.ReportMetric(float64(ms.TotalAlloc-before)/float64(b.N*n), "B/msg")
		})
		b.Run(fmt.Sprintf("crc=%v", verify), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			for b.Loop() {
				msgs, err := decodeAnswer(body, decodeOptions{brokerName: "broker-a", verify: verify})
				if err != nil || len(msgs) != n {
					b.Fatal(len(msgs), err)
				}
			}
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
			b.ReportMetric(float64(ms.TotalAlloc-before)/float64(b.N*n), "B/msg")
		})
	}
}
