package delay

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestRun: the loops on the real clock. A dispatch into a level's queue
// or the timer topic wakes its loop and the copies arrive; once stop
// closes Run returns, and Close saves the progress.
func TestRun(t *testing.T) {
	var delivered atomic.Int64
	r := &rig{t: t, fs: vfs.NewMem(), clock: newClock(), now: time.Now, mut: func(c *Config) {
		c.Levels = "50ms 100ms"
		c.Delivered = func(topic string, bodyBytes int) { delivered.Add(int64(bodyBytes)) }
	}}
	r.open()
	defer r.st.Close()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		r.svc.Run(stop)
		close(done)
	}()
	r.send("t", "level", map[string]string{"DELAY": "2"})
	r.send("t", "timer", map[string]string{"TIMER_DELAY_MS": "100"})
	for end := time.Now().Add(30 * time.Second); len(r.records("t", 0)) < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("delivered %v", bodies(r.records("t", 0)))
		}
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after stop")
	}
	if err := r.svc.Close(); err != nil {
		t.Fatal(err)
	}
	b, _, err := offsetsFile(&r.svc.cfg).Read()
	if f, derr := DecodeOffsets(b); err != nil || derr != nil || f.OffsetTable[2] != 1 {
		t.Fatalf("delayOffset.json after Close: %s %v %v", b, err, derr)
	}
	if got := bodies(r.records("t", 0)); got["level"] != 1 || got["timer"] != 1 || delivered.Load() != 10 {
		t.Fatalf("delivered %v, counted %d body bytes", got, delivered.Load())
	}
}
