package backlog

import (
	"context"
	"runtime/pprof"
	"testing"
	"time"
)

// TestCPUSplit: CPU burnt on a goroutine labelled broker is counted on the
// broker's side of the split, and none on the client's.
func TestCPUSplit(t *testing.T) {
	c := startCPUSplit()
	if !c.running {
		t.Skip("a CPU profile is already running")
	}
	done := make(chan struct{})
	go pprof.Do(context.Background(), pprof.Labels(sideLabel, "broker"), func(context.Context) {
		defer close(done)
		// Burn until the process has used 300 ms more CPU (an event, with
		// a generous bound), about 30 of the profile's samples.
		start, deadline := processCPU(), time.Now().Add(time.Minute)
		x := uint64(1)
		for processCPU()-start < 0.3 && time.Now().Before(deadline) {
			for i := 0; i < 1_000_000; i++ {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}
		_ = x
	})
	<-done
	sides := c.stop()
	if sides["broker"] <= 0 {
		t.Fatalf("no CPU on the broker's side: %v", sides)
	}
	if sides["client"] != 0 {
		t.Fatalf("CPU on the client's side, where nothing ran: %v", sides)
	}
}
