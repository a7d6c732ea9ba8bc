package storage

import (
	"testing"
	"time"
)

// TestFlushLatencyKeepsStalledFlushes: a flush longer than the latency
// histogram's top is recorded at the top, not dropped.
func TestFlushLatencyKeepsStalledFlushes(t *testing.T) {
	var m metrics
	m.init()
	m.recordFlush(3 * time.Millisecond)
	m.recordFlush(2 * time.Minute)
	if n := m.mu.hist.TotalCount(); n != 2 {
		t.Fatalf("histogram holds %d of 2 flushes", n)
	}
	if got := m.mu.hist.Max(); got < flushHistMaxUs*99/100 {
		t.Fatalf("a 2-minute flush recorded as %d µs", got)
	}
}
