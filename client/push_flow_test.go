package client

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestPushFlowControl: with a handler stuck, a queue's in-flight messages
// stop at the bound (plus at most one pull), and everything is consumed
// once the handler moves again.
func TestPushFlowControl(t *testing.T) {
	const n, bound, batch = 2000, 50, 16
	c := startCluster(t, 1, nil)
	c.createTopic("slow", 1)
	p := newTestProducer(t, c, nil)
	produce(t, p, "slow", 0, n)
	release := make(chan struct{})
	var handled atomic.Int64
	pc := newTestPushConsumer(t, c, "g-slow", func(ctx context.Context, _ *MessageExt) error {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		handled.Add(1)
		return nil
	}, func(o *PushConsumerOptions) {
		o.MaxInFlight = bound
		o.PullBatchSize = batch
		o.Concurrency = 2
	})
	pc.Subscribe("slow", "*")
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := MessageQueue{Topic: "slow", BrokerName: "broker-a", QueueID: 0}
	var w *queueWorker
	deadline := time.Now().Add(10 * time.Second)
	for {
		pc.mu.Lock()
		w = pc.mu.workers[q]
		pc.mu.Unlock()
		if w != nil {
			if m, _ := w.tr.inFlight(); m >= bound {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the queue never filled to its bound")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Stays paused: no pull beyond the bound.
	for i := 0; i < 20; i++ {
		if m, _ := w.tr.inFlight(); m > bound+batch {
			t.Fatalf("%d in flight, bound %d + one pull of %d", m, bound, batch)
		}
		time.Sleep(5 * time.Millisecond)
	}
	m, b := w.tr.inFlight()
	t.Logf("paused at %d messages (%d bytes) in flight", m, b)
	close(release)
	for handled.Load() < n {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("%d of %d handled after release", handled.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPushStartPositions: a new group starting at the latest offset
// skips what is there; one starting at a time skips what came before.
func TestPushStartPositions(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("positions", 2)
	p := newTestProducer(t, c, nil)
	produce(t, p, "positions", 0, 100)
	c.waitMessages("positions", 100)
	time.Sleep(20 * time.Millisecond) // store timestamps are ms: a clear boundary
	mark := time.Now()
	time.Sleep(20 * time.Millisecond)

	latest := newReceived()
	pl := newTestPushConsumer(t, c, "g-latest", latest.handler("l"), func(o *PushConsumerOptions) { o.Start = StartLatest })
	pl.Subscribe("positions", "*")
	if err := pl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	produce(t, p, "positions", 100, 110)
	latest.waitDistinct(t, 10, 10*time.Second)

	since := newReceived()
	ps := newTestPushConsumer(t, c, "g-since", since.handler("s"), func(o *PushConsumerOptions) {
		o.Start, o.StartTime = StartTimestamp, mark
	})
	ps.Subscribe("positions", "*")
	if err := ps.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	since.waitDistinct(t, 10, 10*time.Second)
	time.Sleep(100 * time.Millisecond)
	for _, r := range []*received{latest, since} {
		r.mu.Lock()
		for body := range r.count {
			if len(body) < 3 { // "0".."99" came before
				t.Errorf("got old message %q", body)
			}
		}
		r.mu.Unlock()
	}
}

// TestJSONHeaders: the whole path works with JSON-encoded headers.
func TestJSONHeaders(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("json", 2)
	p := newTestProducer(t, c, func(o *ProducerOptions) { o.JSONHeaders = true })
	produce(t, p, "json", 0, 50)
	r := newReceived()
	pc := newTestPushConsumer(t, c, "g-json", r.handler("j"), func(o *PushConsumerOptions) { o.JSONHeaders = true })
	pc.Subscribe("json", "*")
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.waitDistinct(t, 50, 10*time.Second)
}
