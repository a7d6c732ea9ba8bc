package client

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// handlings records every handling of every message, with its time and
// consumer, for the churn test.
type handlings struct {
	mu   sync.Mutex
	seen map[int][]handling
}

type handling struct {
	by string
	at time.Time
}

func (h *handlings) handler(name string) Handler {
	return func(_ context.Context, m *MessageExt) error {
		i, err := strconv.Atoi(string(m.Body))
		if err != nil {
			return err
		}
		h.mu.Lock()
		h.seen[i] = append(h.seen[i], handling{by: name, at: time.Now()})
		h.mu.Unlock()
		return nil
	}
}

func (h *handlings) distinct() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// TestGroupChurnAtLeastOnce: three members of a group consume 100,000
// messages while one leaves and another joins. Every message is handled,
// and a message handled twice was handled again soon after a membership
// change (the queues that moved restart from their last commit).
func TestGroupChurnAtLeastOnce(t *testing.T) {
	const total = 100000
	c := startCluster(t, 2, nil)
	c.createTopic("churn", 8)
	h := &handlings{seen: map[int][]handling{}}
	group := "g-churn"
	start := func(name string) *PushConsumer {
		pc := newTestPushConsumer(t, c, group, h.handler(name), func(o *PushConsumerOptions) {
			o.InstanceName = name
			o.DrainTimeout = time.Second
		})
		if err := pc.Subscribe("churn", "*"); err != nil {
			t.Fatal(err)
		}
		if err := pc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return pc
	}
	a, b, cc := start("a"), start("b"), start("c")
	// Joining is a membership change too: send once the three have
	// split the queues (2 brokers x 8), so that every duplicate after
	// this follows one of the changes below.
	waitGroupSplit(t, "churn", 16, a, b, cc)
	p := newTestProducer(t, c, func(o *ProducerOptions) {
		o.Batch = BatchOptions{MaxMessages: 64, Linger: time.Millisecond}
	})
	var events []time.Time
	var evMu sync.Mutex
	event := func() {
		evMu.Lock()
		events = append(events, time.Now())
		evMu.Unlock()
	}
	var sendErr atomic.Value
	var wg sync.WaitGroup
	begin := time.Now()
	var d *PushConsumer
	for i := 0; i < total; i++ {
		switch i {
		case total * 3 / 10:
			event()
			b.Close() // leaves: its queues go to a and c
			t.Logf("b left after %d messages sent", i)
		case total * 6 / 10:
			event()
			d = start("d") // joins: takes a share
			t.Logf("d joined after %d messages sent", i)
		}
		wg.Add(1)
		p.SendAsync(context.Background(), &Message{Topic: "churn", Body: []byte(strconv.Itoa(i))}, func(_ *SendResult, err error) {
			if err != nil {
				sendErr.Store(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := sendErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	sent := time.Since(begin)
	deadline := time.Now().Add(60 * time.Second)
	for h.distinct() < total {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages handled", h.distinct(), total)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("sent %d in %v, all handled after %v", total, sent, time.Since(begin))
	for _, pc := range []*PushConsumer{a, cc, d} {
		t.Logf("member %s: %d handled, owns %d queues of churn", pc.opts.InstanceName, pc.Stats().Handled, countTopic(pc.Queues(), "churn"))
	}
	// d must have got a share.
	if n := countTopic(d.Queues(), "churn"); n == 0 {
		t.Fatal("the member that joined owns no queue")
	}
	// Duplicates: counted, and only after a membership change.
	const window = 15 * time.Second
	h.mu.Lock()
	defer h.mu.Unlock()
	dups, outside := 0, 0
	for i := 0; i < total; i++ {
		hs := h.seen[i]
		if len(hs) == 0 {
			t.Fatalf("message %d lost", i)
		}
		for _, x := range hs[1:] {
			dups++
			near := false
			for _, e := range events {
				if x.at.After(e) && x.at.Sub(e) < window {
					near = true
				}
			}
			if !near {
				outside++
				if outside < 5 {
					t.Errorf("message %d handled again at %v by %s, away from any membership change %v", i, x.at.Sub(begin), x.by, events)
				}
			}
		}
	}
	t.Logf("duplicates: %d of %d messages handled more than once (%.2f%%), %d away from a rebalance", dups, total, 100*float64(dups)/total, outside)
	if outside > 0 {
		t.Fatalf("%d duplicates away from a rebalance", outside)
	}
	_ = fmt.Sprint()
}

// TestRebalanceOnNotify: with the periodic rebalance out of the way, a
// member joining and leaving moves queues at once, through the brokers'
// NOTIFY_CONSUMER_IDS_CHANGED.
func TestRebalanceOnNotify(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("notify", 8)
	noop := func(context.Context, *MessageExt) error { return nil }
	start := func(name string) *PushConsumer {
		pc := newTestPushConsumer(t, c, "g-notify", noop, func(o *PushConsumerOptions) {
			o.InstanceName = name
			o.RebalanceInterval = time.Hour
		})
		pc.Subscribe("notify", "*")
		if err := pc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return pc
	}
	waitQueues := func(pc *PushConsumer, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for countTopic(pc.Queues(), "notify") != n {
			if time.Now().After(deadline) {
				t.Fatalf("%s owns %d queues, want %d", pc.opts.InstanceName, countTopic(pc.Queues(), "notify"), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	a := start("a")
	waitQueues(a, 8)
	b := start("b")
	waitQueues(a, 4)
	waitQueues(b, 4)
	b.Close()
	waitQueues(a, 8)
}
