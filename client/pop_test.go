package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// Three PopConsumers of one group on a one-queue topic: every message is
// received exactly once when all acknowledge; an unacknowledged one comes
// back after its invisible time; an extended one does not; a stale
// handle is refused.
func TestPopConsumer(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("popped", 1)
	p := newTestProducer(t, c, nil)
	ctx := context.Background()
	const n = 30
	for i := range n {
		if _, err := p.Send(ctx, &Message{Topic: "popped", Body: []byte(fmt.Sprint(i)), Tags: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitMessages("popped", n)
	newPC := func() *PopConsumer {
		pc, err := NewPopConsumer(PopConsumerOptions{ClientOptions: c.clientOptions(), Group: "pop-group", Topic: "popped"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		return pc
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 3 {
		pc := newPC()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := time.Now().Add(60 * time.Second); time.Now().Before(end); {
				mu.Lock()
				done := len(seen) == n
				mu.Unlock()
				if done {
					return
				}
				rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				msgs, err := pc.Receive(rctx, 4, time.Minute)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				for _, m := range msgs {
					mu.Lock()
					seen[string(m.Body)]++
					mu.Unlock()
					if err := pc.Ack(ctx, m); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if seen[fmt.Sprint(i)] != 1 {
			t.Errorf("message %d received %d times, want once", i, seen[fmt.Sprint(i)])
		}
	}

	pc := newPC()
	if _, err := p.Send(ctx, &Message{Topic: "popped", Body: []byte("late"), Tags: "t"}); err != nil {
		t.Fatal(err)
	}
	var first []*PoppedMessage
	for end := time.Now().Add(30 * time.Second); len(first) == 0 && time.Now().Before(end); {
		var err error
		if first, err = pc.Receive(ctx, 1, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if len(first) != 1 || string(first[0].Body) != "late" || first[0].ReconsumeTimes != 0 {
		t.Fatalf("received %v", first)
	}
	stale := *first[0]
	// Not acknowledged: back after its second, its reconsume times raised
	// (the broker's long poll wakes when the invisible time passes).
	var again []*PoppedMessage
	for end := time.Now().Add(30 * time.Second); len(again) == 0 && time.Now().Before(end); {
		var err error
		if again, err = pc.Receive(ctx, 1, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if len(again) != 1 || string(again[0].Body) != "late" || again[0].ReconsumeTimes != 1 {
		t.Fatalf("redelivered %v", again)
	}
	var re *ResponseError
	if err := pc.Ack(ctx, &stale); !errors.As(err, &re) || re.Code != protocol.NoMessage {
		t.Fatalf("ack with a stale handle: %v, want NO_MESSAGE", err)
	}
	if err := pc.Nack(ctx, again[0]); err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(again[0].ReceiptHandle); f[2] != "30000" {
		t.Fatalf("a nack at reconsume times 1 made the handle %q, want invisible 30 s", again[0].ReceiptHandle)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if got, err := pc.Receive(rctx, 1, time.Second); err != nil || len(got) != 0 {
		t.Fatalf("inside a nack's delay: %v %v", got, err)
	}
	cancel()
	if err := pc.ChangeInvisibleTime(ctx, again[0], 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := pc.Ack(ctx, again[0]); err != nil {
		t.Fatalf("ack after a change: %v", err)
	}
}
