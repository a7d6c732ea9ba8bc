package broker

import (
	"sync"
	"sync/atomic"
	"time"
)

// longPoll drives the holder: pulls are held under mu, woken from the
// store's dispatch callback (never by polling) and expired by one timer
// goroutine (run). answer is called for every pull that leaves the holder;
// expired tells a deadline from an arrival. A pull woken by an arrival is
// answered right there, on the store's dispatcher goroutine (answer must
// not block): no goroutine to start and schedule between the record being
// indexed and its answer being queued for the writer, which under load
// waited behind the request goroutines (trace: p99 1 ms, p99.9 9 ms).
// Expired and closing pulls are answered on goroutines of their own.
type longPoll struct {
	clock  func() time.Time
	max    int // pulls held at once (maxHeldPulls); hold refuses past it
	answer func(p *heldPull, expired bool)
	stats  *stats
	// count mirrors h.len() so the dispatch callback skips the lock when
	// nothing is held (the common case under produce-only load).
	count atomic.Int64
	kick  chan struct{} // a new earliest deadline; run re-arms its timer
	mu    struct {
		sync.Mutex
		h      *holder
		closed bool
	}
}

func newLongPoll(clock func() time.Time, maxHeld int, st *stats, answer func(p *heldPull, expired bool)) *longPoll {
	l := &longPoll{clock: clock, max: maxHeld, answer: answer, stats: st, kick: make(chan struct{}, 1)}
	l.mu.h = newHolder()
	return l
}

// hold suspends p. It returns false when the long poll is closed or
// already holds max pulls (the caller answers at once).
func (l *longPoll) hold(p *heldPull) bool {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return false
	}
	if l.max > 0 && l.count.Load() >= int64(l.max) {
		l.mu.Unlock()
		l.stats.heldRefused.Add(1)
		return false
	}
	earliest := l.mu.h.hold(p)
	l.count.Add(1)
	l.mu.Unlock()
	l.stats.held.Add(1)
	l.stats.heldTotal.Add(1)
	if earliest {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return true
}

// recheck answers p at once if it is still held and maxOffset shows its
// message arrived: it closes the race between a pull finding nothing and
// its hold being registered, during which a dispatch finds no one to wake.
//
// p's fields are read under mu and only while p is held: once an arrival
// has taken it out, its answer may be changing it (an SQL92 pull held
// again past what it read, reholdSQL) on the dispatcher's goroutine.
func (l *longPoll) recheck(p *heldPull, maxOffset int64) {
	l.mu.Lock()
	ok := p.idx >= 0 && maxOffset > p.offset && l.mu.h.remove(p)
	if ok {
		l.count.Add(-1)
	}
	l.mu.Unlock()
	if ok {
		l.release(p, false)
	}
}

// onDispatch is the store's dispatch callback: a record at queueOffset of
// (topic, queueID) is readable. It never blocks: ready pulls are answered
// in place (answer does not block).
func (l *longPoll) onDispatch(topic string, queueID int32, queueOffset int64) {
	if l.count.Load() == 0 {
		return
	}
	l.mu.Lock()
	ready := l.mu.h.arrived(QueueKey{topic, queueID}, queueOffset+1)
	l.count.Add(-int64(len(ready)))
	l.mu.Unlock()
	for _, p := range ready {
		l.release(p, false)
	}
}

func (l *longPoll) release(p *heldPull, expired bool) {
	l.stats.held.Add(-1)
	if expired {
		l.stats.expiredTotal.Add(1)
	} else {
		l.stats.wokenTotal.Add(1)
	}
	l.answer(p, expired)
}

// run is the timer goroutine: it sleeps until the earliest deadline (or a
// kick for a new earlier one) and answers what expired. It owns nothing
// but its timer and returns when stop closes, after answering every pull
// still held.
func (l *longPoll) run(stop <-chan struct{}) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		l.mu.Lock()
		exp := l.mu.h.expired(l.clock())
		l.count.Add(-int64(len(exp)))
		next, ok := l.mu.h.next()
		l.mu.Unlock()
		for _, p := range exp {
			go l.release(p, true)
		}
		wait := time.Hour
		if ok {
			wait = max(next.Sub(l.clock()), time.Millisecond)
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-l.kick: // Reset above (Go 1.23 timers) drops any stale tick
		case <-stop:
			l.close()
			return
		}
	}
}

// close stops new holds and answers every pull held, as expired.
func (l *longPoll) close() {
	l.mu.Lock()
	l.mu.closed = true
	all := l.mu.h.drain()
	l.count.Store(0)
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.release(p, true)
		}()
	}
	wg.Wait()
}
