package pop

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Peek shows what the next pop would hand out and changes nothing.
func TestPeek(t *testing.T) {
	r := newRig(t, 2)
	r.send(0, "a", "x0", "x1")
	r.send(1, "a", "y0")
	q := r.req(8, 10*time.Second)
	res, err := r.svc.Peek(q)
	if err != nil {
		t.Fatal(err)
	}
	if got := bodies(decode(t, q, &res)); !slices.Equal(got, []string{"x0", "x1", "y0"}) {
		t.Fatalf("peek %v", got)
	}
	if r.svc.Uses(group, topic) {
		t.Fatal("a peek made the group a POP consumer of the topic")
	}
	q1 := r.req(2, 10*time.Second)
	q1.QueueID = 0
	if got := r.pop(q1); !slices.Equal(bodies(got), []string{"x0", "x1"}) {
		t.Fatalf("pop after the peek %v", bodies(got))
	}
	if res, err = r.svc.Peek(q); err != nil {
		t.Fatal(err)
	}
	if got := bodies(decode(t, q, &res)); !slices.Equal(got, []string{"y0"}) {
		t.Fatalf("peek with x0 and x1 invisible: %v", got)
	}
	r.clock.Add(10 * time.Second)
	if res, err = r.svc.Peek(q); err != nil {
		t.Fatal(err)
	}
	if got := bodies(decode(t, q, &res)); !slices.Equal(got, []string{"x0", "x1", "y0"}) {
		t.Fatalf("peek after the invisible time %v", got)
	}
	if got := r.pop(q1); len(got) != 2 || got[0].times != 1 {
		t.Fatalf("the peek changed what a pop hands out: %+v", got)
	}
}

// Notify answers at once when there is something to pop, else waits for
// an arrival; PollingInfo counts it while it waits.
func TestNotifyAndPollingInfo(t *testing.T) {
	r := newRig(t, 1)
	q := r.req(1, 10*time.Second)
	if has, err := r.svc.Notify(context.Background(), q); err != nil || has {
		t.Fatalf("an empty topic: %v %v", has, err)
	}
	q.Poll = 20 * time.Second
	done := make(chan bool, 1)
	go func() {
		has, err := r.svc.Notify(context.Background(), q)
		if err != nil {
			t.Error(err)
		}
		done <- has
	}()
	for end := time.Now().Add(30 * time.Second); r.svc.PollingInfo(group, topic, 0) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the notification never waited")
		}
	}
	if n := r.svc.PollingInfo(group, "other", 0); n != 0 {
		t.Fatalf("polling info of another topic: %d", n)
	}
	r.send(0, "a", "x")
	select {
	case has := <-done:
		if !has {
			t.Fatal("woken without a message")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the arrival did not wake the notification")
	}
	if n := r.svc.PollingInfo(group, topic, -1); n != 0 {
		t.Fatalf("polling info after the answer: %d", n)
	}
}
