package killloop

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestPollerStopWaitsForTheLastTick: ticks come until Stop, none after it.
func TestPollerStopWaitsForTheLastTick(t *testing.T) {
	var n atomic.Int64
	ticked := make(chan struct{}, 1)
	p := StartPoller(time.Millisecond, func(time.Time) {
		if n.Add(1) == 3 {
			ticked <- struct{}{}
		}
	})
	select {
	case <-ticked:
	case <-time.After(30 * time.Second):
		t.Fatal("no third tick within 30s")
	}
	p.Stop()
	after := n.Load()
	time.Sleep(20 * time.Millisecond) // a tick now would be one after Stop
	if got := n.Load(); got != after {
		t.Fatalf("%d ticks after Stop", got-after)
	}
}
