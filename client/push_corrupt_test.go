package client

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestPushConsumerMovesPastCorruptRecord: a stored body byte is flipped
// while the broker is stopped; the push consumer gets every other message,
// never the corrupt one, and moves past it (PULL_OFFSET_MOVED) while the
// messages before it are still being handled, without committing past
// them: the commit waits for them and then passes the corrupt record.
func TestPushConsumerMovesPastCorruptRecord(t *testing.T) {
	const topic, n, victim = "corrupt", 20, 7
	c := startCluster(t, 1, nil)
	sendAndCorrupt(t, c, topic, n, victim)

	release := make(chan struct{})
	var mu sync.Mutex
	seen := map[int]int{}
	after := make(chan struct{}) // closed when every message after the victim is handled
	handler := func(_ context.Context, m *MessageExt) error {
		i, _ := strconv.Atoi(string(m.Body[2:4]))
		if i < victim {
			<-release // the messages before it stay in flight
		}
		mu.Lock()
		defer mu.Unlock()
		seen[i]++
		k := 0
		for j := victim + 1; j < n; j++ {
			if seen[j] > 0 {
				k++
			}
		}
		if i > victim && k == n-victim-1 && seen[-1] == 0 {
			seen[-1] = 1
			close(after)
		}
		return nil
	}
	pc := newTestPushConsumer(t, c, "g-corrupt", handler, func(o *PushConsumerOptions) { o.Concurrency = 16 })
	pc.Subscribe(topic, "*")
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-after:
	case <-time.After(30 * time.Second):
		t.Fatal("the messages after the corrupt record were not all handled")
	}
	// The move past it was committed on the way, but not past the
	// messages still in flight before it.
	if off := committed(t, c, topic, "g-corrupt"); off >= victim {
		t.Fatalf("committed %d with messages before %d unhandled", off, victim)
	}
	close(release)
	deadline := time.Now().Add(30 * time.Second)
	for committed(t, c, topic, "g-corrupt") != n {
		if time.Now().After(deadline) {
			t.Fatalf("committed offset %d, want %d", committed(t, c, topic, "g-corrupt"), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < n; i++ {
		if got := seen[i]; (i == victim) != (got == 0) {
			t.Errorf("message %d handled %d times", i, got)
		}
	}
}

func committed(t *testing.T, c *testCluster, topic, group string) int64 {
	t.Helper()
	st, err := c.admin.TopicStatus(context.Background(), topic, group)
	if err != nil || len(st) != 1 {
		t.Fatalf("topic status: %v %v", st, err)
	}
	return st[0].Committed
}
