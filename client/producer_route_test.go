package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestProducerSendsAgainAfterItsOnlyBrokerReturns: the only broker of a
// topic stops (the name server forgets it, the producer's route empties)
// and comes back. Sends must work again as soon as the broker has
// registered, not at the next periodic route refresh (an hour here; 30 s
// by default). The kill loop (loadgen/durability) found it: a restart
// took a route-refresh interval to be seen.
func TestProducerSendsAgainAfterItsOnlyBrokerReturns(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("comeback", 2)
	p := newTestProducer(t, c, func(o *ProducerOptions) {
		o.RouteRefresh = time.Hour
		o.Retries = -1
	})
	ctx := context.Background()
	if _, err := p.Send(ctx, &Message{Topic: "comeback", Body: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	c.stopBroker(0)
	// Send until the producer has seen the route go: the answer is then
	// ErrNoRoute, from its empty cached route.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := p.Send(ctx, &Message{Topic: "comeback", Body: []byte("while down")})
		if errors.Is(err, ErrNoRoute) {
			break
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("send with the broker stopped: %v, want ErrNoRoute by now", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.restartBroker(0) // registered with the name server when it returns
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, err := p.Send(ctx, &Message{Topic: "comeback", Body: []byte("after")})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sends still failing 10 s after the broker came back: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
