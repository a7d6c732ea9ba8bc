package pop

import (
	"context"
	"slices"
	"testing"
	"time"
)

// An ordered pop holds a queue until what it took is acknowledged or its
// invisible time passes; then what is left comes back, in order, before
// anything newer, and the header counts the attempts as RocketMQ's does.
func TestOrderedPop(t *testing.T) {
	r := newRig(t, 1)
	r.send(0, "a", msgs(6)...)
	q := r.req(3, 10*time.Second)
	q.Order = true
	got := r.pop(q)
	if !slices.Equal(bodies(got), []string{"m0", "m1", "m2"}) {
		t.Fatalf("first ordered pop %v", bodies(got))
	}
	if again := r.pop(q); len(again) != 0 {
		t.Fatalf("a held queue handed out %v", bodies(again))
	}
	for _, p := range got[:2] {
		if err := r.svc.Ack(&p.handle); err != nil {
			t.Fatal(err)
		}
	}
	if again := r.pop(q); len(again) != 0 {
		t.Fatalf("with m2 in flight the queue handed out %v", bodies(again))
	}
	r.clock.Add(10 * time.Second)
	res, err := r.svc.Pop(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	got = decode(t, q, &res)
	if !slices.Equal(bodies(got), []string{"m2"}) || got[0].times != 1 {
		t.Fatalf("after the invisible time %+v, want m2 alone, once more", got)
	}
	if res.OrderCountInfo != "0 qo0%2 1;0 0 1" {
		t.Fatalf("orderCountInfo %q", res.OrderCountInfo)
	}
	if err := r.svc.Ack(&got[0].handle); err != nil {
		t.Fatal(err)
	}
	res, err = r.svc.Pop(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if got = decode(t, q, &res); !slices.Equal(bodies(got), []string{"m3", "m4", "m5"}) || res.OrderCountInfo != "0 0 0" {
		t.Fatalf("after the ack %v (orderCountInfo %q), want m3 to m5", bodies(got), res.OrderCountInfo)
	}
}

// A long-polling ordered pop on a held queue wakes when the batch holding
// it is acknowledged.
func TestOrderedPopWokenByAck(t *testing.T) {
	r := newRig(t, 1)
	r.send(0, "a", msgs(4)...)
	q := r.req(2, time.Hour)
	q.Order = true
	got := r.pop(q)
	if len(got) != 2 {
		t.Fatalf("%v", bodies(got))
	}
	waiting := *q
	waiting.Poll = 20 * time.Second
	done := make(chan []popped, 1)
	go func() {
		res, err := r.svc.Pop(context.Background(), &waiting)
		if err != nil {
			t.Error(err)
		}
		done <- decode(t, &waiting, &res)
	}()
	for _, p := range got {
		if err := r.svc.Ack(&p.handle); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case next := <-done:
		if !slices.Equal(bodies(next), []string{"m2", "m3"}) {
			t.Fatalf("woken with %v", bodies(next))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the held pop was not woken by the acks")
	}
}
