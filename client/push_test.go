package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
)

// received records what consumers got, by message body.
type received struct {
	mu    sync.Mutex
	count map[string]int
	by    map[string]map[string]bool // consumer → bodies
	total atomic.Int64
}

func newReceived() *received {
	return &received{count: map[string]int{}, by: map[string]map[string]bool{}}
}

func (r *received) handler(name string) Handler {
	return func(_ context.Context, m *MessageExt) error {
		r.mu.Lock()
		r.count[string(m.Body)]++
		if r.by[name] == nil {
			r.by[name] = map[string]bool{}
		}
		r.by[name][string(m.Body)] = true
		r.mu.Unlock()
		r.total.Add(1)
		return nil
	}
}

// waitDistinct polls until n distinct bodies arrived.
func (r *received) waitDistinct(t testing.TB, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		r.mu.Lock()
		got := len(r.count)
		r.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d distinct messages after %v", got, n, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *received) duplicates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := 0
	for _, n := range r.count {
		d += n - 1
	}
	return d
}

func newTestPushConsumer(t testing.TB, c *testCluster, group string, h Handler, mutate func(*PushConsumerOptions)) *PushConsumer {
	t.Helper()
	o := PushConsumerOptions{ClientOptions: c.clientOptions(), Group: group, Start: StartEarliest,
		PollWait: 2 * time.Second, CommitInterval: 200 * time.Millisecond, RebalanceInterval: 2 * time.Second}
	if mutate != nil {
		mutate(&o)
	}
	pc, err := NewPushConsumer(o, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

func produce(t testing.TB, p *Producer, topic string, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	for i := from; i < to; i++ {
		wg.Add(1)
		p.SendAsync(context.Background(), &Message{Topic: topic, Body: []byte(strconv.Itoa(i))}, func(_ *SendResult, err error) {
			if err != nil {
				failed.Store(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
}

func TestPushConsumerReceivesAll(t *testing.T) {
	c := startCluster(t, 2, nil)
	c.createTopic("push", 4)
	p := newTestProducer(t, c, nil)
	produce(t, p, "push", 0, 500)
	r := newReceived()
	pc := newTestPushConsumer(t, c, "g-push", r.handler("a"), nil)
	if err := pc.Subscribe("push", "*"); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	produce(t, p, "push", 500, 1000)
	r.waitDistinct(t, 1000, 20*time.Second)
	if n := countTopic(pc.Queues(), "push"); n != 8 {
		t.Fatalf("a lone member owns %d of 8 queues", n)
	}
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	// The offsets were committed: the group's lag is nothing.
	st, err := c.admin.TopicStatus(context.Background(), "push", "g-push")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Lag != 0 {
			t.Fatalf("lag after close: %+v", s)
		}
	}
	if d := r.duplicates(); d != 0 {
		t.Fatalf("%d duplicates with one member and no failure", d)
	}
}

// TestPushConsumerRetriesFailures: a failed message comes back through
// the group's retry topic with its topic restored, after the broker's
// back-off (delay level 3 for a first retry; 500 ms in this table).
func TestPushConsumerRetriesFailures(t *testing.T) {
	c := startCluster(t, 1, func(cfg *broker.Config) { cfg.MessageDelayLevel = "10ms 20ms 500ms" })
	c.createTopic("flaky", 2)
	p := newTestProducer(t, c, nil)
	produce(t, p, "flaky", 0, 20)
	var mu sync.Mutex
	attempts := map[string]int{}
	failed := map[string]time.Time{}
	done := make(chan string, 100)
	pc := newTestPushConsumer(t, c, "g-flaky", func(_ context.Context, m *MessageExt) error {
		mu.Lock()
		attempts[string(m.Body)]++
		n := attempts[string(m.Body)]
		if n == 1 && m.Body[0]%2 == 0 {
			failed[string(m.Body)] = time.Now()
		}
		at, wasFailed := failed[string(m.Body)]
		mu.Unlock()
		if n == 1 && m.Body[0]%2 == 0 {
			return errors.New("first attempt fails")
		}
		if wasFailed && time.Since(at) < 490*time.Millisecond {
			t.Errorf("%s retried %v after its failure, before the 500 ms back-off", m.Body, time.Since(at))
		}
		if m.Topic != "flaky" {
			return fmt.Errorf("retried message has topic %q", m.Topic)
		}
		done <- string(m.Body)
		return nil
	}, nil)
	pc.Subscribe("flaky", "*")
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	timeout := time.After(30 * time.Second)
	for len(got) < 20 {
		select {
		case b := <-done:
			got[b] = true
		case <-timeout:
			t.Fatalf("%d of 20 consumed; attempts %v", len(got), attempts)
		}
	}
}

// waitGroupSplit waits (with a deadline) until each member owns exactly
// the share of topic's total queues its allocation strategy gives it for
// the whole group: the group's rebalances after its members joined are
// done. A test that sends before then sees queues move between members,
// and messages handled again, that no membership change it made
// explains. Disjoint, non-empty shares are not enough: members that read
// the member list from a broker not yet told of every heartbeat compute
// shares from different lists, which can happen to be disjoint and move
// again at the next rebalance.
func waitGroupSplit(t *testing.T, topic string, total int, members ...*PushConsumer) {
	t.Helper()
	ids := make([]string, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.ClientID())
	}
	sort.Strings(ids)
	deadline := time.Now().Add(30 * time.Second)
	for {
		owned := map[*PushConsumer][]MessageQueue{}
		var all []MessageQueue
		for _, m := range members {
			for _, q := range m.Queues() {
				if q.Topic == topic {
					owned[m] = append(owned[m], q)
					all = append(all, q)
				}
			}
		}
		SortQueues(all)
		ok := len(all) == total && len(slices.Compact(slices.Clone(all))) == total
		for _, m := range members {
			if !ok {
				break
			}
			want := m.Options().Allocate.Allocate(m.ClientID(), ids, all)
			got := owned[m]
			SortQueues(want)
			SortQueues(got)
			ok = len(got) > 0 && slices.Equal(got, want)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group never split %s's %d queues between its %d members as allocated (%d owned)", topic, total, len(members), len(all))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countTopic(qs []MessageQueue, topic string) int {
	n := 0
	for _, q := range qs {
		if q.Topic == topic {
			n++
		}
	}
	return n
}

func TestPushConsumerTagFilter(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("tagged", 2)
	p := newTestProducer(t, c, nil)
	for i := 0; i < 30; i++ {
		tag := []string{"red", "green", "blue"}[i%3]
		if _, err := p.Send(context.Background(), &Message{Topic: "tagged", Tags: tag, Body: []byte(tag + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	tags := map[string]int{}
	pc := newTestPushConsumer(t, c, "g-tags", func(_ context.Context, m *MessageExt) error {
		mu.Lock()
		tags[m.Tags]++
		mu.Unlock()
		return nil
	}, nil)
	pc.Subscribe("tagged", "red || blue")
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := tags["red"] + tags["blue"]
		mu.Unlock()
		if n == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %v", tags)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if tags["green"] != 0 || tags["red"] != 10 || tags["blue"] != 10 {
		t.Fatalf("filter red || blue delivered %v", tags)
	}
}
