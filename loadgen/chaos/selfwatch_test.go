package chaos

import (
	"testing"
	"time"
)

func TestSelfWatchMaxLate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := &selfWatch{}
	w.mu.lates = []late{{at(0), 30 * time.Millisecond}, {at(100), 500 * time.Millisecond}, {at(900), 40 * time.Millisecond}}
	for _, c := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 1000, 500 * time.Millisecond},
		{101, 1000, 40 * time.Millisecond},
		{0, 99, 30 * time.Millisecond},
		{901, 2000, 0},
	} {
		if got := w.maxLate(at(c.from), at(c.to)); got != c.want {
			t.Errorf("maxLate(%d, %d) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if gcCPU() < 0 {
		t.Fatal("negative GC CPU time")
	}
}
