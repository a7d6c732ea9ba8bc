package pop

import (
	"context"
	"testing"
	"time"
)

// With a back-off, a message not acknowledged comes back its invisible
// time plus the back-off of the attempt after it ends, and goes to the
// DLQ past the group's max on the same schedule; a deadline set by
// ChangeInvisible is kept as set.
func TestBackoff(t *testing.T) {
	r := newRig(t, 1)
	r.backoff = func(times int32) time.Duration { return time.Duration(times-1) * time.Minute }
	r.reopen()
	r.send(0, "a", "x", "y")
	q := r.req(1, 10*time.Second)
	if got := r.pop(q); len(got) != 1 || got[0].body != "x" {
		t.Fatalf("first pop %+v", got)
	}
	r.clock.Add(10 * time.Second) // the first attempt again waits no back-off
	got := r.pop(q)
	if len(got) != 1 || got[0].body != "x" || got[0].times != 1 {
		t.Fatalf("after the invisible time %+v, want x again", got)
	}
	r.clock.Add(10 * time.Second)
	if got := r.pop(q); len(got) != 1 || got[0].body != "y" {
		t.Fatalf("inside x's back-off %+v, want y", got)
	}
	// y: handed out at the same time, changed to 5 s from now
	yres := r.pop(r.req(1, 10*time.Second))
	if len(yres) != 0 {
		t.Fatalf("%+v", yres)
	}
	r.clock.Add(59 * time.Second)
	if got := r.pop(r.req(1, 10*time.Second)); len(got) != 1 || got[0].body != "y" || got[0].times != 1 {
		t.Fatalf("%+v, want y again (its invisible time ended, no back-off for its first attempt again)", got)
	} else if _, err := r.svc.ChangeInvisible(&got[0].handle, 5000); err != nil {
		t.Fatal(err)
	}
	r.clock.Add(time.Second)
	got = r.pop(q)
	if len(got) != 1 || got[0].body != "x" || got[0].times != 2 {
		t.Fatalf("after the invisible time and a minute's back-off %+v, want x a third time", got)
	}
	r.clock.Add(4 * time.Second)
	if got := r.pop(r.req(1, 10*time.Second)); len(got) != 1 || got[0].body != "y" || got[0].times != 2 {
		t.Fatalf("%+v, want y when the time ChangeInvisible set ends, without back-off", got)
	} else if err := r.svc.Ack(&got[0].handle); err != nil {
		t.Fatal(err)
	}
	// x past max (2): it goes to the DLQ once its back-off (2 minutes) ends
	r.clock.Add(10*time.Second + time.Minute)
	if got := r.pop(q); len(got) != 0 {
		t.Fatalf("%+v inside the back-off", got)
	}
	r.clock.Add(time.Minute)
	if got := r.pop(q); len(got) != 0 {
		t.Fatalf("%+v past the max", got)
	}
	var dl int64
	for _, st := range r.svc.Stats() {
		dl += st.DeadLetters
	}
	if dl != 1 {
		t.Fatalf("%d dead letters, want x", dl)
	}
}

// A pop waiting on an empty queue wakes when a message's back-off ends.
func TestBackoffWakesLongPoll(t *testing.T) {
	r := newRig(t, 1)
	svc, err := New(Config{Store: r.st, FS: r.fs, Dir: "/s/pop-real", BrokerName: broker, Logger: quietLogger(),
		DLQ:     func(g string) (string, error) { return "%DLQ%" + g, nil },
		Backoff: func(times int32) time.Duration { return time.Duration(times-1) * 100 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Close() }()
	r.send(0, "a", "x")
	q := r.req(1, 100*time.Millisecond)
	q.Poll = 20 * time.Second
	for want := int32(0); want <= 2; want++ {
		res, err := svc.Pop(context.Background(), q) // real time: the wait is on timers
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, q, &res)
		if len(got) != 1 || got[0].times != want {
			t.Fatalf("attempt %d: %+v", want, got)
		}
	}
}
