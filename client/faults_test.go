package client

import (
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestBrokerFaults(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	f := newBrokerFaults(clk.now)
	qs := testQueues("t", 3, 2)
	if got := f.filter(qs, ""); len(got) != 6 {
		t.Fatalf("nothing avoided, %d queues", len(got))
	}
	f.record("broker-a", FailureLatency)
	f.record("broker-b", 20*time.Millisecond) // fast: not avoided
	got := f.filter(qs, "")
	if len(got) != 4 || got[0].BrokerName != "broker-b" {
		t.Fatalf("after broker-a failed: %v", got)
	}
	// A retry excludes the failed attempt's broker too.
	if got := f.filter(qs, "broker-b"); len(got) != 2 || got[0].BrokerName != "broker-c" {
		t.Fatalf("retry after broker-b: %v", got)
	}
	// Slow answers avoid for less.
	f.record("broker-c", 600*time.Millisecond) // 2 s
	clk.advance(2 * time.Second)
	if f.avoided("broker-c") {
		t.Fatal("broker-c still avoided after 2 s")
	}
	if !f.avoided("broker-a") {
		t.Fatal("broker-a no longer avoided after 2 s of 10")
	}
	clk.advance(8 * time.Second)
	if f.avoided("broker-a") {
		t.Fatal("broker-a avoided after 10 s")
	}
	// Every broker avoided: use them all rather than none.
	for _, b := range []string{"broker-a", "broker-b", "broker-c"} {
		f.record(b, FailureLatency)
	}
	if got := f.filter(qs, ""); len(got) != 6 {
		t.Fatalf("all avoided: %d queues", len(got))
	}
	// A fast answer clears the mark.
	f.record("broker-a", time.Millisecond)
	if f.avoided("broker-a") {
		t.Fatal("broker-a avoided after a fast answer")
	}
}
