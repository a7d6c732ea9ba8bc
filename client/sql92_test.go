package client

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
)

// TestSQL92Selectors: our push consumer with SubscribeSQL92 and our pull
// consumer with PullOptions.SQL92 get exactly the messages whose
// properties and tag the selector picks; the broker filters.
func TestSQL92Selectors(t *testing.T) {
	c := startCluster(t, 1, func(cfg *broker.Config) { cfg.EnablePropertyFilter = true })
	c.createTopic("sql", 2)
	p := newTestProducer(t, c, nil)
	ctx := context.Background()
	const n = 60
	const sel = "n >= 10 AND color IN ('red', 'blue') AND TAGS <> 'skip'"
	matches := func(i int) bool { return i >= 10 && i%3 != 1 && i%5 != 0 }
	want := 0
	for i := 0; i < n; i++ {
		tag := "keep"
		if i%5 == 0 {
			tag = "skip"
		}
		m := &Message{Topic: "sql", Tags: tag, Body: []byte(strconv.Itoa(i)),
			Properties: map[string]string{"n": strconv.Itoa(i), "color": []string{"red", "green", "blue"}[i%3]}}
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
		if matches(i) {
			want++
		}
	}
	c.waitMessages("sql", n)

	var mu sync.Mutex
	got := map[string]int{}
	pc := newTestPushConsumer(t, c, "g-sql", func(_ context.Context, m *MessageExt) error {
		mu.Lock()
		got[string(m.Body)]++
		mu.Unlock()
		return nil
	}, nil)
	if err := pc.SubscribeSQL92("sql", sel); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("push: %d of %d", k, want)
		}
		time.Sleep(5 * time.Millisecond)
	}

	// The pull consumer reads both queues to the end with the same selector.
	pulled := map[string]int{}
	puller, err := NewPullConsumer(PullConsumerOptions{ClientOptions: c.clientOptions(), Group: "g-sql-pull"})
	if err != nil {
		t.Fatal(err)
	}
	defer puller.Close()
	qs, err := puller.Queues(ctx, "sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		for off := int64(0); ; {
			res, err := puller.Pull(ctx, q, off, PullOptions{Expression: sel, SQL92: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Messages {
				pulled[string(m.Body)]++
			}
			if res.Status == PullNoNewMessage {
				break
			}
			off = res.NextOffset
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for name, m := range map[string]map[string]int{"push": got, "pull": pulled} {
		if len(m) != want {
			t.Errorf("%s: %d distinct messages, want %d", name, len(m), want)
		}
		for body, times := range m {
			i, _ := strconv.Atoi(body)
			if !matches(i) || (name == "pull" && times != 1) {
				t.Errorf("%s: message %s %d times: %s", name, body, times, fmt.Sprint(matches(i)))
			}
		}
	}
}

// TestSQL92StartChecks: Start fails, with the broker's reason, when a
// broker runs without enablePropertyFilter or cannot compile the selector.
func TestSQL92StartChecks(t *testing.T) {
	for _, tc := range []struct {
		enabled  bool
		selector string
		want     string
	}{
		{false, "a > 5", "does not support consumer to filter message by SQL92"},
		{true, "a >", "invalid selector"},
	} {
		c := startCluster(t, 1, func(cfg *broker.Config) { cfg.EnablePropertyFilter = tc.enabled })
		c.createTopic("sqlcheck", 1)
		pc := newTestPushConsumer(t, c, "g-check", func(context.Context, *MessageExt) error { return nil }, nil)
		if err := pc.SubscribeSQL92("sqlcheck", tc.selector); err != nil {
			t.Fatal(err)
		}
		err := pc.Start(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("enabled %v, %q: Start: %v", tc.enabled, tc.selector, err)
		}
	}
}
