package client

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
)

func newTestPopConsumer(t *testing.T, c *testCluster, group, topic string) *PopConsumer {
	t.Helper()
	pc, err := NewPopConsumer(PopConsumerOptions{ClientOptions: c.clientOptions(), Group: group, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return pc
}

// sendBodies sends "0".."n-1" to topic, waiting for each answer.
func sendBodies(t *testing.T, p *Producer, topic string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := p.Send(context.Background(), &Message{Topic: topic, Body: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
}

// handleTimes reads the pop time and invisible time (ms) of a receipt
// handle.
func handleTimes(t *testing.T, h string) (popTime, invisible int64) {
	t.Helper()
	f := strings.Split(h, " ")
	if len(f) < 3 {
		t.Fatalf("receipt handle %q", h)
	}
	pt, err1 := strconv.ParseInt(f[1], 10, 64)
	inv, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("receipt handle %q", h)
	}
	return pt, inv
}

// 64 POP consumers of one group on a topic of 8 queues: each processes a
// share of the messages (at least 1/128 of them, half an even share), and
// every message is processed.
func TestPop64ConsumersOn8Queues(t *testing.T) {
	c := startCluster(t, 1, nil)
	const topic, group, consumers, n = "pop64", "pop64-group", 64, 6400
	c.createTopic(topic, 8)
	p := newTestProducer(t, c, nil)
	sendBodies(t, p, topic, 0, n)
	c.waitMessages(topic, n)
	var mu sync.Mutex
	done := map[string]bool{}
	counts := make([]int, consumers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range consumers {
		pc := newTestPopConsumer(t, c, group, topic)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); {
				mu.Lock()
				finished := len(done) == n
				mu.Unlock()
				if finished {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				msgs, err := pc.Receive(ctx, 4, time.Minute)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(len(msgs)) * 2 * time.Millisecond) // the work
				if err := pc.AckAll(context.Background(), msgs); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, m := range msgs {
					if !done[string(m.Body)] {
						done[string(m.Body)] = true
						counts[i]++
					}
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(done) != n {
		t.Fatalf("%d of %d messages processed", len(done), n)
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	t.Logf("%d consumers, %d messages: each processed %d to %d (even share %d)", consumers, n, lo, hi, n/consumers)
	for i, k := range counts {
		if k < n/128 {
			t.Errorf("consumer %d processed %d messages, want at least %d (1/128)", i, k, n/128)
		}
	}
}

// A consumer that stops (no ack, no poll: a paused process) holds
// messages; they are handed to another consumer of the group once their
// invisible time passes, their reconsume times raised. The delay past
// the invisible time is logged, not bounded (the machine may be busy).
func TestPopPausedConsumerRedelivered(t *testing.T) {
	c := startCluster(t, 1, nil)
	const topic, group = "pop-paused", "pop-paused-group"
	c.createTopic(topic, 8)
	p := newTestProducer(t, c, nil)
	sendBodies(t, p, topic, 0, 40)
	c.waitMessages(topic, 40)
	a := newTestPopConsumer(t, c, group, topic)
	const invisible = 2 * time.Second
	var held []*PoppedMessage
	for end := time.Now().Add(30 * time.Second); len(held) == 0 && time.Now().Before(end); {
		msgs, err := a.Receive(context.Background(), 8, invisible)
		if err != nil {
			t.Fatal(err)
		}
		held = msgs
	}
	if len(held) == 0 {
		t.Fatal("the first consumer received nothing")
	}
	due := map[string]int64{} // body -> when its invisible time ends (ms)
	for _, m := range held {
		pt, inv := handleTimes(t, m.ReceiptHandle)
		due[string(m.Body)] = pt + inv
	}
	// a stops here: the second consumer gets the rest, then a's messages.
	b := newTestPopConsumer(t, c, group, topic)
	var delays []time.Duration
	acked := map[string]bool{}
	for end := time.Now().Add(time.Minute); len(acked) < 40 && time.Now().Before(end); {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		msgs, err := b.Receive(ctx, 4, time.Minute)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UnixMilli()
		for _, m := range msgs {
			if d, ok := due[string(m.Body)]; ok {
				if m.ReconsumeTimes != 1 {
					t.Errorf("%s handed out again with reconsume times %d, want 1", m.Body, m.ReconsumeTimes)
				}
				if now < d {
					t.Errorf("%s handed out again %d ms before its invisible time ended", m.Body, d-now)
				}
				delays = append(delays, time.Duration(now-d)*time.Millisecond)
			}
			if acked[string(m.Body)] {
				t.Errorf("%s received again after its ack", m.Body)
			}
			acked[string(m.Body)] = true
		}
		if err := b.AckAll(context.Background(), msgs); err != nil {
			t.Fatal(err)
		}
	}
	if len(acked) != 40 || len(delays) != len(held) {
		t.Fatalf("acknowledged %d of 40; %d of the paused consumer's %d messages came back", len(acked), len(delays), len(held))
	}
	slices.Sort(delays)
	t.Logf("the paused consumer's %d messages came back %v to %v after their invisible time (%v)", len(delays), delays[0],
		delays[len(delays)-1], invisible)
}

// churnWorker is one consumer of the churn test.
type churnWorker struct {
	pc     *PopConsumer
	stop   chan struct{}
	paused atomic.Bool
	done   chan struct{}
}

// 200 churn events (a consumer joins, leaves holding its messages, is
// paused or resumed) while messages are sent: every message whose send
// was acknowledged is processed and acknowledged by some consumer in the
// end (none lost); duplicates are counted.
func TestPopChurnLosesNothing(t *testing.T) {
	// a message handed out a third time waits level 3 past its invisible
	// time: short levels keep the run short
	c := startCluster(t, 1, func(c *broker.Config) { c.MessageDelayLevel = "100ms 200ms 300ms 400ms 500ms" })
	const topic, group, n, events = "pop-churn", "pop-churn-group", 2000, 200
	c.createTopic(topic, 8)
	p := newTestProducer(t, c, nil)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var mu sync.Mutex
	acked := map[string]bool{}
	received := 0
	run := func(w *churnWorker) {
		defer close(w.done)
		var held []*PoppedMessage
		for {
			select {
			case <-w.stop:
				return // leaves holding what it has
			default:
			}
			if w.paused.Load() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			for _, m := range held { // resumed: acknowledge what it held, as a continued process would
				if err := w.pc.Ack(context.Background(), m); err == nil {
					mu.Lock()
					acked[string(m.Body)] = true
					mu.Unlock()
				}
			}
			held = nil
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			msgs, err := w.pc.Receive(ctx, 8, time.Second)
			cancel()
			if err != nil {
				continue // the broker answers again on the next round
			}
			mu.Lock()
			received += len(msgs)
			mu.Unlock()
			for i, m := range msgs {
				if w.paused.Load() {
					held = msgs[i:]
					break
				}
				if err := w.pc.Ack(context.Background(), m); err == nil {
					mu.Lock()
					acked[string(m.Body)] = true
					mu.Unlock()
				}
			}
		}
	}
	var workers []*churnWorker
	join := func() {
		pc, err := NewPopConsumer(PopConsumerOptions{ClientOptions: c.clientOptions(), Group: group, Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		w := &churnWorker{pc: pc, stop: make(chan struct{}), done: make(chan struct{})}
		workers = append(workers, w)
		go run(w)
	}
	leave := func(i int) {
		w := workers[i]
		close(w.stop)
		<-w.done
		_ = w.pc.Close()
		workers = slices.Delete(workers, i, i+1)
	}
	defer func() {
		for len(workers) > 0 {
			leave(0)
		}
	}()
	for range 4 {
		join()
	}
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := p.Send(context.Background(), &Message{Topic: topic, Body: []byte(strconv.Itoa(i))}); err != nil {
				sent <- err
				return
			}
			if i%20 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		sent <- nil
	}()
	kinds := map[string]int{}
	for range events {
		time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
		switch k := rng.IntN(4); {
		case k == 0 && len(workers) < 16 || len(workers) < 2:
			join()
			kinds["join"]++
		case k == 1:
			leave(rng.IntN(len(workers)))
			kinds["leave"]++
		case k == 2:
			workers[rng.IntN(len(workers))].paused.Store(true)
			kinds["pause"]++
		default:
			workers[rng.IntN(len(workers))].paused.Store(false)
			kinds["resume"]++
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	for _, w := range workers {
		w.paused.Store(false)
	}
	join()
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		k := len(acked)
		mu.Unlock()
		if k == n {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var lost []string
	for i := range n {
		if !acked[strconv.Itoa(i)] {
			lost = append(lost, strconv.Itoa(i))
		}
	}
	t.Logf("%d churn events %v; %d messages received %d times (%d duplicates)", events, kinds, n, received, received-n)
	if len(lost) > 0 {
		t.Fatalf("%d of %d sent messages never acknowledged by a consumer: %v", len(lost), n, lost[:min(len(lost), 20)])
	}
}

// Four ordered POP consumers share a topic of 2 queues: each queue's
// messages are processed in queue order across all of them (a queue is
// held by the consumer that popped it until its batch is acknowledged),
// every message once.
func TestPopOrderly(t *testing.T) {
	c := startCluster(t, 1, nil)
	const topic, group, n = "pop-order", "pop-order-group", 400
	c.createTopic(topic, 2)
	p := newTestProducer(t, c, nil)
	sendBodies(t, p, topic, 0, n)
	c.waitMessages(topic, n)
	var mu sync.Mutex
	last := map[int]int64{0: -1, 1: -1}
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 4 {
		pc, err := NewPopConsumer(PopConsumerOptions{ClientOptions: c.clientOptions(), Group: group, Topic: topic, Orderly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := time.Now().Add(time.Minute); time.Now().Before(end); {
				mu.Lock()
				finished := len(seen) == n
				mu.Unlock()
				if finished {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				msgs, err := pc.Receive(ctx, 8, time.Minute)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, m := range msgs {
					q := m.Queue.QueueID
					if m.QueueOffset <= last[q] {
						t.Errorf("queue %d: offset %d processed after %d", q, m.QueueOffset, last[q])
					}
					last[q] = m.QueueOffset
					if seen[string(m.Body)] {
						t.Errorf("%s processed twice", m.Body)
					}
					seen[string(m.Body)] = true
				}
				mu.Unlock()
				if err := pc.AckAll(context.Background(), msgs); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d of %d messages processed", len(seen), n)
	}
}
