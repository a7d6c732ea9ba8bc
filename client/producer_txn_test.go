package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
)

func newTestTxnProducer(t testing.TB, c *testCluster, txo TransactionOptions) *TransactionProducer {
	t.Helper()
	p, err := NewTransactionProducer(ProducerOptions{ClientOptions: c.clientOptions(), Group: "txn-pg"}, txo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// topicTotal is the messages topic's queues hold.
func (c *testCluster) topicTotal(topic string) int64 {
	st, _ := c.admin.TopicStatus(context.Background(), topic, "")
	n := int64(0)
	for _, s := range st {
		n += s.MaxOffset
	}
	return n
}

// TestTransactionSeveralMessagesAllOrNothing: one transaction's messages
// to two topics are invisible until the commit, then all there; a rolled
// back one leaves nothing; an unknown one is checked back and ends as the
// checker says, for all its messages alike.
func TestTransactionSeveralMessagesAllOrNothing(t *testing.T) {
	c := startCluster(t, 1, func(cfg *broker.Config) {
		cfg.TransactionCheckInterval = 50 * time.Millisecond
		cfg.TransactionTimeout = 200 * time.Millisecond
	})
	c.createTopic("txa", 4)
	c.createTopic("txb", 2)
	var asked atomic.Int64
	var mu sync.Mutex
	checked := map[string]TransactionState{}
	p := newTestTxnProducer(t, c, TransactionOptions{ConfirmEnd: true, Checker: func(_ context.Context, id string, m *MessageExt) TransactionState {
		asked.Add(1)
		mu.Lock()
		defer mu.Unlock()
		return checked[id]
	}})
	ctx := context.Background()
	msgs := func(tag string) []*Message {
		return []*Message{{Topic: "txa", Body: []byte(tag + "-1")}, {Topic: "txb", Body: []byte(tag + "-2")}, {Topic: "txa", Body: []byte(tag + "-3")}}
	}
	res, s, err := p.SendInTransaction(ctx, func(ctx context.Context, tx *Transaction) (TransactionState, error) {
		if n := c.topicTotal("txa") + c.topicTotal("txb"); n != 0 {
			return TransactionRollback, fmt.Errorf("%d messages visible before the commit", n)
		}
		return TransactionCommit, nil
	}, msgs("commit")...)
	if err != nil || s != TransactionCommit || len(res) != 3 {
		t.Fatalf("commit: %v %v %v", res, s, err)
	}
	c.waitMessages("txa", 2)
	c.waitMessages("txb", 1)

	if _, s, err := p.SendInTransaction(ctx, func(context.Context, *Transaction) (TransactionState, error) {
		return TransactionRollback, nil
	}, msgs("rollback")...); err != nil || s != TransactionRollback {
		t.Fatal(s, err)
	}
	// Two left unknown: the checker commits one, rolls the other back.
	for _, want := range []TransactionState{TransactionCommit, TransactionRollback} {
		_, _, err := p.SendInTransaction(ctx, func(_ context.Context, tx *Transaction) (TransactionState, error) {
			mu.Lock()
			checked[tx.ID()] = want
			mu.Unlock()
			return TransactionUnknown, nil
		}, msgs("unknown-"+want.String())...)
		if err != nil {
			t.Fatal(err)
		}
	}
	c.waitMessages("txa", 4)
	c.waitMessages("txb", 2)
	deadline := time.Now().Add(10 * time.Second)
	for asked.Load() < 6 && time.Now().Before(deadline) { // every half checked once at least
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a few more check rounds: nothing more arrives
	if a, b := c.topicTotal("txa"), c.topicTotal("txb"); a != 4 || b != 2 || asked.Load() < 6 {
		t.Fatalf("txa %d (want 4), txb %d (want 2), %d check-backs", a, b, asked.Load())
	}
	got := map[string]int{}
	pc := newTestPullConsumerAll(t, c, "txa", "txb")
	for _, m := range pc {
		got[string(m.Body)]++
	}
	for _, body := range []string{"commit-1", "commit-2", "commit-3", "unknown-COMMIT-1", "unknown-COMMIT-2", "unknown-COMMIT-3"} {
		if got[body] != 1 {
			t.Fatalf("%s delivered %d times: %v", body, got[body], got)
		}
	}
}

// newTestPullConsumerAll pulls every message of topics from offset 0.
func newTestPullConsumerAll(t *testing.T, c *testCluster, topics ...string) []*MessageExt {
	t.Helper()
	ctx := context.Background()
	pc, err := NewPullConsumer(PullConsumerOptions{ClientOptions: c.clientOptions(), Group: "txn-pull"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var out []*MessageExt
	for _, topic := range topics {
		qs, err := pc.Queues(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			for off := int64(0); ; {
				res, err := pc.Pull(ctx, q, off, PullOptions{MaxMessages: 32})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != PullFound {
					break
				}
				out = append(out, res.Messages...)
				off = res.NextOffset
			}
		}
	}
	return out
}

// BenchmarkTransactionVsSend measures, in one run against one embedded
// broker (async flush), 256-byte messages sent as plain synchronous sends
// and in committed transactions — of one message (a half message, then
// END_TRANSACTION: two requests and three records a message), with the
// end confirmed (two-way) or one-way as RocketMQ's clients send it, and
// of four messages (one end for four) — 16 senders each, alternating in
// rounds so that a machine busy with something else slows all alike. It
// reports each rate in msgs/s and its ratio to the plain sends:
//
//	go test -run '^$' -bench TransactionVsSend -benchtime 20000x ./client
func BenchmarkTransactionVsSend(b *testing.B) {
	c := startCluster(b, 1, nil)
	topic := benchTopic(b, c)
	body := make([]byte, benchBody)
	oneway := newTestTxnProducer(b, c, TransactionOptions{})
	confirmed := newTestTxnProducer(b, c, TransactionOptions{ConfirmEnd: true})
	ctx := context.Background()
	if _, err := oneway.Send(ctx, &Message{Topic: topic, Body: body}); err != nil { // route, connection
		b.Fatal(err)
	}
	commit := func(context.Context, *Transaction) (TransactionState, error) { return TransactionCommit, nil }
	txn := func(p *TransactionProducer, n int) func() error {
		return func() error {
			msgs := make([]*Message, n)
			for i := range msgs {
				msgs[i] = &Message{Topic: topic, Body: body}
			}
			_, _, err := p.SendInTransaction(ctx, commit, msgs...)
			return err
		}
	}
	variants := []struct {
		name string
		per  int // messages an operation
		op   func() error
	}{
		{"send", 1, func() error {
			_, err := oneway.Send(ctx, &Message{Topic: topic, Body: body})
			return err
		}},
		{"txn1-confirmed", 1, txn(confirmed, 1)},
		{"txn1-oneway", 1, txn(oneway, 1)},
		{"txn4-oneway", 4, txn(oneway, 4)},
	}
	run := func(n int, op func() error) time.Duration {
		const senders = 16
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for s := 0; s < senders; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					if err := op(); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	b.ResetTimer()
	const rounds = 10
	took := make([]time.Duration, len(variants))
	for r := 0; r < rounds; r++ {
		for i, v := range variants {
			took[i] += run(b.N/rounds/v.per, v.op)
		}
	}
	b.StopTimer()
	rate := func(i int) float64 {
		return float64(b.N/rounds/variants[i].per*variants[i].per*rounds) / took[i].Seconds()
	}
	for i, v := range variants {
		b.ReportMetric(rate(i), v.name+"-msgs/s")
		if i > 0 {
			b.ReportMetric(rate(i)/rate(0), v.name+"/send")
		}
	}
	b.ReportMetric(0, "ns/op")
}
