package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newTestProducer(t testing.TB, c *testCluster, mutate func(*ProducerOptions)) *Producer {
	t.Helper()
	o := ProducerOptions{ClientOptions: c.clientOptions()}
	if mutate != nil {
		mutate(&o)
	}
	p, err := NewProducer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestProducerSendSyncSpreadsOverQueues(t *testing.T) {
	c := startCluster(t, 2, nil)
	c.createTopic("orders", 4)
	p := newTestProducer(t, c, nil)
	ctx := context.Background()
	seen := map[MessageQueue]int{}
	for i := 0; i < 40; i++ {
		res, err := p.Send(ctx, &Message{Topic: "orders", Body: []byte(fmt.Sprintf("m%d", i)), Tags: "t", Keys: []string{"k"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != SendOK || len(res.MsgID) != 32 || res.OffsetMsgID == "" {
			t.Fatalf("result %v", res)
		}
		seen[res.Queue]++
	}
	if len(seen) != 8 {
		t.Fatalf("round robin over 2×4 queues reached %d: %v", len(seen), seen)
	}
	c.waitMessages("orders", 40)
}

func TestProducerNoRoute(t *testing.T) {
	c := startCluster(t, 1, nil)
	p := newTestProducer(t, c, nil)
	_, err := p.Send(context.Background(), &Message{Topic: "nope", Body: []byte("x")})
	if !errors.Is(err, ErrNoRoute) {
		t.Fatalf("send to an unknown topic: %v", err)
	}
}

func TestProducerAsyncBatchedAndOneway(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("batched", 4)
	p := newTestProducer(t, c, func(o *ProducerOptions) {
		o.Batch = BatchOptions{MaxMessages: 32, Linger: 2 * time.Millisecond}
	})
	const n = 1000
	var wg sync.WaitGroup
	var mu sync.Mutex
	offsets := map[MessageQueue]map[int64]bool{}
	var firstErr error
	for i := 0; i < n; i++ {
		wg.Add(1)
		p.SendAsync(context.Background(), &Message{Topic: "batched", Body: []byte(fmt.Sprintf("m%d", i))}, func(r *SendResult, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = err
				return
			}
			if offsets[r.Queue] == nil {
				offsets[r.Queue] = map[int64]bool{}
			}
			if offsets[r.Queue][r.QueueOffset] {
				t.Errorf("offset %d of %v given twice", r.QueueOffset, r.Queue)
			}
			offsets[r.Queue][r.QueueOffset] = true
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	total := 0
	for _, m := range offsets {
		total += len(m)
	}
	if total != n {
		t.Fatalf("%d distinct offsets for %d messages", total, n)
	}
	// Explicit batch.
	var msgs []*Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, &Message{Topic: "batched", Body: []byte("b"), ShardingKey: "k"})
	}
	res, err := p.SendBatch(context.Background(), msgs)
	if err != nil || len(res) != 10 || res[9].QueueOffset != res[0].QueueOffset+9 {
		t.Fatalf("SendBatch: %v %v", res, err)
	}
	if err := p.SendOneway(context.Background(), &Message{Topic: "batched", Body: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	c.waitMessages("batched", n+10+1)
}

func TestProducerAutoCreateTopic(t *testing.T) {
	c := startCluster(t, 1, nil)
	p := newTestProducer(t, c, func(o *ProducerOptions) { o.AutoCreateTopic = true; o.AutoCreateQueues = 2 })
	seen := map[int]bool{}
	for i := 0; i < 10; i++ {
		res, err := p.Send(context.Background(), &Message{Topic: "fresh", Body: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		seen[res.Queue.QueueID] = true
	}
	if len(seen) != 2 {
		t.Fatalf("auto-created topic used queues %v, want 2", seen)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.admin.Route(context.Background(), "fresh"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("auto-created topic never routed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProducerRetriesOnAnotherBroker: a broker goes away; sends move to
// the other at once (a retry, then fault avoidance), none fails.
func TestProducerRetriesOnAnotherBroker(t *testing.T) {
	c := startCluster(t, 2, nil)
	c.createTopic("failover", 2)
	p := newTestProducer(t, c, nil)
	ctx := context.Background()
	for i := 0; i < 8; i++ { // warm the route: both brokers in use
		if _, err := p.Send(ctx, &Message{Topic: "failover", Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	c.stopBroker(0) // broker-a
	for i := 0; i < 50; i++ {
		res, err := p.Send(ctx, &Message{Topic: "failover", Body: []byte("y")})
		if err != nil {
			t.Fatalf("send %d after broker-a stopped: %v", i, err)
		}
		if res.Queue.BrokerName != "broker-b" {
			t.Fatalf("send %d went to %s", i, res.Queue.BrokerName)
		}
	}
	if !p.faults.avoided("broker-a") {
		t.Fatal("broker-a not avoided after failing")
	}
}

func TestProducerNameServerFailoverAndChannel(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("ns-failover", 2)
	dead := "127.0.0.1:1" // nothing listens there
	p := newTestProducer(t, c, func(o *ProducerOptions) { o.NameServers = []string{dead, c.ns.Addr()} })
	results := make(chan AsyncResult, 10)
	for i := 0; i < 10; i++ {
		p.SendAsyncChan(context.Background(), &Message{Topic: "ns-failover", Body: []byte("x")}, results)
	}
	for i := 0; i < 10; i++ {
		r := <-results
		if r.Err != nil || r.Result.Status != SendOK || r.Message == nil {
			t.Fatalf("async result %+v", r)
		}
	}
}

func TestOptionsValidateAndString(t *testing.T) {
	o := ProducerOptions{ClientOptions: ClientOptions{NameServers: []string{"nohost"}, InstanceName: "a@b"}, CompressOver: -1}
	o.EnsureDefaults()
	err := o.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, want := range []string{"NameServers", "InstanceName", "CompressOver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	var po PushConsumerOptions
	po.EnsureDefaults()
	if err := po.Validate(); err == nil || !strings.Contains(err.Error(), "Group") {
		t.Fatalf("push options without a group: %v", err)
	}
	po.Group = "g"
	if err := po.Validate(); err != nil {
		t.Fatal(err)
	}
	s := po.String()
	for _, want := range []string{"group=g", "allocate=AVG", "poll-wait=15s", "commit=5s", "rebalance=20s"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q: %s", want, s)
		}
	}
	if _, err := NewPushConsumer(po, nil); err == nil {
		t.Fatal("nil handler accepted")
	}
}

// TestProducerCloseRacesSends: sends racing Close end with a result or
// ErrClosed, never a hang or a panic.
func TestProducerCloseRacesSends(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("closing", 2)
	p := newTestProducer(t, c, func(o *ProducerOptions) { o.Batch = BatchOptions{MaxMessages: 16} })
	var wg sync.WaitGroup
	var calls atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				p.SendAsync(context.Background(), &Message{Topic: "closing", Body: []byte("x")}, func(_ *SendResult, err error) {
					if err != nil && !errors.Is(err, ErrClosed) {
						t.Errorf("send: %v", err)
					}
					calls.Add(1)
				})
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	p.Close()
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 2000 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2000 callbacks", calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
}
