package broker

import (
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// TestLongPollWakesOnArrival: a held pull is answered because a message
// arrived for its queue (the broker's woken counter), never by its hold
// expiring; no stopwatch, so a loaded machine cannot break it.
func TestLongPollWakesOnArrival(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("lp", 1))
	for round := 0; round < 5; round++ {
		pending := c.start(pullReq("g", "lp", 0, int64(round), 32, 10*time.Second, "*"))
		waitFor(t, func() bool { return b.stats.held.Load() == 1 }, "pull held")
		select {
		case r := <-pending:
			t.Fatalf("answered before any message: %s", r)
		default:
		}
		if r := c.call(sendReq("lp", 0, []byte("wake"), nil)); r.Code != protocol.Success {
			t.Fatal(r)
		}
		// The event, not a stopwatch: the answer must come from the arrival
		// (wokenTotal), never from the 10 s hold expiring (expiredTotal); the
		// deadline below is only there so a broken wake fails instead of hanging.
		select {
		case r := <-pending:
			if r.Code != protocol.Success || len(decodeRecords(t, r.Body)) != 1 {
				t.Fatalf("woken pull: %s", r)
			}
		case <-time.After(8 * time.Second):
			t.Fatal("held pull not woken by the message")
		}
		if w, e := b.stats.wokenTotal.Load(), b.stats.expiredTotal.Load(); w != int64(round+1) || e != 0 {
			t.Fatalf("round %d: woken by arrival %d, by deadline %d; want %d and 0", round, w, e, round+1)
		}
	}
}

// TestLongPollHoldsForRequestedTime: with nothing arriving the pull is
// answered PULL_NOT_FOUND after its suspendTimeoutMillis, not before.
func TestLongPollHoldsForRequestedTime(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("lp2", 2))
	// Traffic on another queue must not wake it.
	c.call(sendReq("lp2", 1, []byte("other"), nil))
	const hold = 400 * time.Millisecond
	start := time.Now()
	pending := c.start(pullReq("g", "lp2", 0, 0, 32, hold, "*"))
	waitFor(t, func() bool { return b.stats.held.Load() == 1 }, "pull held")
	c.call(sendReq("lp2", 1, []byte("other"), nil))
	select {
	case r := <-pending:
		took := time.Since(start)
		if r.Code != protocol.PullNotFound {
			t.Fatalf("expired pull: %s", r)
		}
		// Held its time (a lower bound), and answered by the hold's expiry,
		// not woken by the other queue's message (an event, not a stopwatch).
		if took < hold || b.stats.wokenTotal.Load() != 0 || b.stats.expiredTotal.Load() != 1 {
			t.Fatalf("held %v, asked %v; woken %d, expired %d", took, hold, b.stats.wokenTotal.Load(), b.stats.expiredTotal.Load())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("held pull never answered")
	}
}

// TestLongPollCapAndClose: holds are capped by longPollingMaxHold, and Close
// answers every held pull before the connection goes.
func TestLongPollCapAndClose(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.LongPollingMaxHold = 200 * time.Millisecond })
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("lp3", 1))
	start := time.Now()
	r := c.call(pullReq("g", "lp3", 0, 0, 32, time.Hour, "*"))
	if r.Code != protocol.PullNotFound || time.Since(start) > time.Minute { // uncapped it would hold an hour
		t.Fatalf("capped hold: %s after %v", r, time.Since(start))
	}
	b2 := startBroker(t, "", nil)
	c2 := dialRaw(t, b2.Addr())
	c2.call(createTopicReq("lp4", 1))
	pending := c2.start(pullReq("g", "lp4", 0, 0, 32, time.Minute, "*"))
	waitFor(t, func() bool { return b2.stats.held.Load() == 1 }, "pull held")
	closed := make(chan error)
	go func() { closed <- b2.Close() }()
	select {
	case r := <-pending:
		if r.Code != protocol.PullNotFound {
			t.Fatalf("held pull at close: %s", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close left a held pull unanswered")
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	b.Close()
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // generous: a loaded machine under -race
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestShortPolling: with longPollingEnable=false a suspending pull waits
// shortPollingTimeMills, not woken by arrivals, then finds what came.
func TestShortPolling(t *testing.T) {
	b := startBroker(t, "", func(c *Config) {
		_ = c.Set("longPollingEnable", "false")
		c.ShortPollingTime = 300 * time.Millisecond
	})
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("sp", 1))
	start := time.Now()
	pending := c.start(pullReq("g", "sp", 0, 0, 32, 10*time.Second, "*"))
	waitFor(t, func() bool { return b.stats.held.Load() == 1 }, "pull held")
	c.call(sendReq("sp", 0, []byte("m"), nil))
	select {
	case r := <-pending:
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Fatalf("short poll answered after %v", took)
		}
		if r.Code != protocol.Success {
			t.Fatalf("short poll: %s", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("short poll never answered")
	}
}
