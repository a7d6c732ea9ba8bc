package client

import (
	"sync"
	"testing"
	"time"
)

// fakeTimers runs linger timers by hand.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	f       func()
	stopped bool
	fired   bool
}

func (ft *fakeTimers) afterFunc(_ time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{f: f}
	ft.timers = append(ft.timers, t)
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !t.stopped && !t.fired
		t.stopped = true
		return was
	}
}

// fireAll fires every live timer.
func (ft *fakeTimers) fireAll() {
	ft.mu.Lock()
	var live []*fakeTimer
	for _, t := range ft.timers {
		if !t.stopped && !t.fired {
			t.fired = true
			live = append(live, t)
		}
	}
	ft.mu.Unlock()
	for _, t := range live {
		t.f()
	}
}

type flushLog struct {
	mu      sync.Mutex
	batches []*openBatch
}

func (l *flushLog) flush(b *openBatch) {
	l.mu.Lock()
	l.batches = append(l.batches, b)
	l.mu.Unlock()
}

func send(n int) pendingSend {
	return pendingSend{msg: &Message{Topic: "t", Body: []byte("x")}, size: n}
}

func TestAccumulatorCountAndBytes(t *testing.T) {
	var ft fakeTimers
	var log flushLog
	a := newAccumulator(3, 100, time.Second, log.flush)
	a.afterFunc = ft.afterFunc
	q := MessageQueue{"t", "b", 0}
	for i := 0; i < 7; i++ {
		a.add(q, send(10))
	}
	if len(log.batches) != 2 || len(log.batches[0].sends) != 3 || len(log.batches[1].sends) != 3 {
		t.Fatalf("after 7 of max 3: %d batches", len(log.batches))
	}
	if a.pending() != 1 {
		t.Fatalf("%d pending", a.pending())
	}
	// Bytes: a message that would overflow sends the open batch first.
	a.add(q, send(95))
	if len(log.batches) != 3 || len(log.batches[2].sends) != 1 || log.batches[2].bytes != 10 {
		t.Fatalf("overflow did not flush the open batch first: %d batches", len(log.batches))
	}
	// Linger: the timer sends the rest.
	ft.fireAll()
	if len(log.batches) != 4 || log.batches[3].sends[0].size != 95 || a.pending() != 0 {
		t.Fatalf("linger: %d batches, %d pending", len(log.batches), a.pending())
	}
	// A flushed batch's timer firing late does nothing.
	ft.fireAll()
	if len(log.batches) != 4 {
		t.Fatal("a stale timer flushed again")
	}
}

func TestAccumulatorSticky(t *testing.T) {
	var ft fakeTimers
	var log flushLog
	a := newAccumulator(2, 0, time.Second, log.flush)
	a.afterFunc = ft.afterFunc
	qs := testQueues("t", 1, 3)
	var rr RoundRobin
	picks := 0
	pick := func() MessageQueue { picks++; return qs[rr.Select("", qs)] }
	for i := 0; i < 6; i++ {
		a.addSticky("t", send(1), pick)
	}
	if picks != 3 || len(log.batches) != 3 {
		t.Fatalf("%d picks, %d batches; want 3 and 3", picks, len(log.batches))
	}
	for i, b := range log.batches {
		if b.queue != qs[i] || len(b.sends) != 2 {
			t.Fatalf("batch %d to %v with %d messages", i, b.queue, len(b.sends))
		}
	}
	a.addSticky("t", send(1), pick)
	a.flushAll()
	if len(log.batches) != 4 || a.pending() != 0 {
		t.Fatalf("flushAll: %d batches", len(log.batches))
	}
}

func TestAccumulatorNoLinger(t *testing.T) {
	var log flushLog
	a := newAccumulator(10, 0, 0, log.flush)
	a.add(MessageQueue{"t", "b", 0}, send(1))
	if len(log.batches) != 1 {
		t.Fatal("without linger a message waits")
	}
}

func TestAccumulatorRealTimer(t *testing.T) {
	done := make(chan *openBatch, 1)
	a := newAccumulator(100, 0, 5*time.Millisecond, func(b *openBatch) { done <- b })
	a.add(MessageQueue{"t", "b", 0}, send(1))
	select {
	case b := <-done:
		if len(b.sends) != 1 {
			t.Fatal(len(b.sends))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("linger never fired")
	}
}
