package client

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBroadcastingEveryMemberGetsAll: two members of a broadcasting group
// each receive every message; their offsets live in their own files, so a
// member restarted reads nothing again.
func TestBroadcastingEveryMemberGetsAll(t *testing.T) {
	const n = 2000
	c := startCluster(t, 2, nil)
	c.createTopic("news", 4)
	dir := t.TempDir()
	start := func(name string, r *received) *PushConsumer {
		pc := newTestPushConsumer(t, c, "g-bcast", r.handler(name), func(o *PushConsumerOptions) {
			o.Broadcast = true
			o.InstanceName = name
			o.OffsetFile = filepath.Join(dir, name+".json")
		})
		pc.Subscribe("news", "*")
		if err := pc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return pc
	}
	ra, rb := newReceived(), newReceived()
	a, b := start("a", ra), start("b", rb)
	p := newTestProducer(t, c, nil)
	produce(t, p, "news", 0, n)
	ra.waitDistinct(t, n, 20*time.Second)
	rb.waitDistinct(t, n, 20*time.Second)
	if qa, qb := countTopic(a.Queues(), "news"), countTopic(b.Queues(), "news"); qa != 8 || qb != 8 {
		t.Fatalf("broadcasting members own %d and %d of 8 queues", qa, qb)
	}
	a.Close()
	b.Close()
	// a again, from its file: only what is new.
	ra2 := newReceived()
	a2 := start("a", ra2)
	produce(t, p, "news", n, n+10)
	ra2.waitDistinct(t, 10, 20*time.Second)
	a2.Close()
	if got := ra2.total.Load(); got != 10 {
		t.Fatalf("restarted broadcasting member got %d messages, want the 10 new", got)
	}
}

// TestOrderedPerKey: messages with the same sharding key, sent in order,
// are handled in that order, all by one member.
func TestOrderedPerKey(t *testing.T) {
	const keys, perKey = 20, 100
	c := startCluster(t, 2, nil)
	c.createTopic("ordered", 4)
	type arrival struct {
		by  string
		seq int
	}
	var mu sync.Mutex
	got := map[string][]arrival{}
	total := 0
	handler := func(name string) Handler {
		return func(_ context.Context, m *MessageExt) error {
			parts := strings.SplitN(string(m.Body), "/", 2)
			seq, _ := strconv.Atoi(parts[1])
			mu.Lock()
			got[parts[0]] = append(got[parts[0]], arrival{name, seq})
			total++
			mu.Unlock()
			return nil
		}
	}
	var pcs []*PushConsumer
	for _, name := range []string{"a", "b"} {
		pc := newTestPushConsumer(t, c, "g-ordered", handler(name), func(o *PushConsumerOptions) {
			o.Orderly = true
			o.InstanceName = name
		})
		pc.Subscribe("ordered", "*")
		if err := pc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		pcs = append(pcs, pc)
	}
	// A key stays with one member only while the group's membership
	// holds: wait for the split that has both (each member's share, none
	// held twice) before sending, or a message handled by a, the only
	// member at first, and the next by b after the rebalance would count
	// as a key handled by two.
	waitGroupSplit(t, "ordered", 8, pcs...) // 2 brokers x 4
	p := newTestProducer(t, c, func(o *ProducerOptions) { o.Balancer = &ConsistentHash{} })
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for s := 0; s < perKey; s++ {
				for k := w; k < keys; k += 4 {
					key := fmt.Sprintf("key%d", k)
					if _, err := p.Send(context.Background(), &Message{Topic: "ordered", ShardingKey: key, Body: []byte(fmt.Sprintf("%s/%d", key, s))}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := total
		mu.Unlock()
		if n >= keys*perKey {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d handled", n, keys*perKey)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	members := map[string]bool{}
	for key, as := range got {
		for i, a := range as {
			if a.seq != i {
				t.Fatalf("%s: arrival %d is message %d (%v...)", key, i, a.seq, as[:min(len(as), i+2)])
			}
			if a.by != as[0].by {
				t.Fatalf("%s handled by %s and %s", key, as[0].by, a.by)
			}
		}
		members[as[0].by] = true
	}
	t.Logf("%d keys in order over %d members", len(got), len(members))
}
