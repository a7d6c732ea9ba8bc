package client

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestBrokerRestartDuringConsumption: while two members consume, one of
// two brokers stops (the producer moves to the other) and comes back
// with its data; every message sent is handled.
func TestBrokerRestartDuringConsumption(t *testing.T) {
	const total = 20000
	c := startCluster(t, 2, nil)
	c.createTopic("restart", 4)
	h := &handlings{seen: map[int][]handling{}}
	for _, name := range []string{"a", "b"} {
		pc := newTestPushConsumer(t, c, "g-restart", h.handler(name), func(o *PushConsumerOptions) {
			o.InstanceName = name
			o.RouteRefresh = 300 * time.Millisecond
			o.PullRetryDelay = 100 * time.Millisecond
			o.RebalanceInterval = 500 * time.Millisecond
		})
		pc.Subscribe("restart", "*")
		if err := pc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	p := newTestProducer(t, c, func(o *ProducerOptions) { o.RouteRefresh = 300 * time.Millisecond })
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[int]bool{}
	for i := 0; i < total; i++ {
		switch i {
		case total / 3:
			wg.Wait() // what was sent is stored
			c.stopBroker(1)
			t.Logf("broker-b stopped after %d messages", i)
		case 2 * total / 3:
			wg.Wait()
			c.restartBroker(1)
			t.Logf("broker-b restarted after %d messages", i)
		}
		wg.Add(1)
		i := i
		p.SendAsync(context.Background(), &Message{Topic: "restart", Body: []byte(strconv.Itoa(i))}, func(_ *SendResult, err error) {
			defer wg.Done()
			if err == nil {
				mu.Lock()
				acked[i] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d sends acknowledged", len(acked), total)
	deadline := time.Now().Add(60 * time.Second)
	for {
		h.mu.Lock()
		missing := 0
		for i := range acked {
			if len(h.seen[i]) == 0 {
				missing++
			}
		}
		h.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acknowledged messages never handled", missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(acked) < total*9/10 {
		t.Fatalf("only %d of %d sends acknowledged with one broker up", len(acked), total)
	}
	dups := 0
	h.mu.Lock()
	for _, hs := range h.seen {
		dups += len(hs) - 1
	}
	h.mu.Unlock()
	t.Logf("all acknowledged messages handled; %d duplicates", dups)
}
