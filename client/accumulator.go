package client

import (
	"sync"
	"time"
)

// accumulator gathers a producer's asynchronous sends into batches, one
// open batch per queue, and hands a batch to flush when it reaches
// maxMsgs messages or maxBytes bytes, or when linger has passed since its
// first message. Keyless messages stick to one queue per topic until that
// queue's batch goes (Kafka's sticky partitioning): batches fill fast
// however many queues there are, and successive batches still spread
// over the queues through the balancer.
//
// flush runs in the goroutine that filled the batch, or in the linger
// timer's. Safe for concurrent use.
type accumulator struct {
	maxMsgs   int
	maxBytes  int
	linger    time.Duration
	afterFunc func(time.Duration, func()) func() bool // time.AfterFunc's, injectable
	flush     func(b *openBatch)

	mu struct {
		sync.Mutex
		open   map[MessageQueue]*openBatch
		sticky map[string]MessageQueue // topic → queue of keyless messages
	}
}

// pendingSend is one message waiting in a batch.
type pendingSend struct {
	msg  *Message
	uniq string
	size int
	done func(*SendResult, error)
}

// openBatch is the messages bound for one queue.
type openBatch struct {
	queue MessageQueue
	sends []pendingSend
	bytes int
	stop  func() bool // the linger timer's
}

func newAccumulator(maxMsgs, maxBytes int, linger time.Duration, flush func(*openBatch)) *accumulator {
	a := &accumulator{maxMsgs: maxMsgs, maxBytes: maxBytes, linger: linger, flush: flush,
		afterFunc: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
	a.mu.open = map[MessageQueue]*openBatch{}
	a.mu.sticky = map[string]MessageQueue{}
	return a
}

// add puts s in q's batch.
func (a *accumulator) add(q MessageQueue, s pendingSend) {
	a.mu.Lock()
	a.addLocked(q, s)
}

// addSticky puts a keyless s in its topic's current queue, choosing one
// with pick when there is none.
func (a *accumulator) addSticky(topic string, s pendingSend, pick func() MessageQueue) {
	a.mu.Lock()
	q, ok := a.mu.sticky[topic]
	if !ok {
		q = pick()
		a.mu.sticky[topic] = q
	}
	a.addLocked(q, s)
}

// addLocked appends and flushes a full batch; it unlocks.
func (a *accumulator) addLocked(q MessageQueue, s pendingSend) {
	b := a.mu.open[q]
	if b != nil && a.maxBytes > 0 && b.bytes+s.size > a.maxBytes && len(b.sends) > 0 {
		// s would overflow the batch: send what is there first.
		a.takeLocked(b)
		a.mu.Unlock()
		a.flush(b)
		a.mu.Lock()
		b = a.mu.open[q]
	}
	if b == nil {
		b = &openBatch{queue: q}
		a.mu.open[q] = b
		if a.linger > 0 {
			b.stop = a.afterFunc(a.linger, func() { a.expire(b) })
		}
	}
	b.sends = append(b.sends, s)
	b.bytes += s.size
	full := a.linger <= 0 || (a.maxMsgs > 0 && len(b.sends) >= a.maxMsgs) || (a.maxBytes > 0 && b.bytes >= a.maxBytes)
	if full {
		a.takeLocked(b)
	}
	a.mu.Unlock()
	if full {
		a.flush(b)
	}
}

// takeLocked closes b: no more messages join it.
func (a *accumulator) takeLocked(b *openBatch) {
	delete(a.mu.open, b.queue)
	if a.mu.sticky[b.queue.Topic] == b.queue {
		delete(a.mu.sticky, b.queue.Topic)
	}
	if b.stop != nil {
		b.stop()
	}
}

// expire is the linger timer's: it flushes b unless it went already.
func (a *accumulator) expire(b *openBatch) {
	a.mu.Lock()
	if a.mu.open[b.queue] != b {
		a.mu.Unlock()
		return
	}
	a.takeLocked(b)
	a.mu.Unlock()
	a.flush(b)
}

// flushAll sends every open batch now (Close, Flush).
func (a *accumulator) flushAll() {
	a.mu.Lock()
	var all []*openBatch
	for _, b := range a.mu.open {
		all = append(all, b)
	}
	for _, b := range all {
		a.takeLocked(b)
	}
	a.mu.Unlock()
	for _, b := range all {
		a.flush(b)
	}
}

// pending returns the messages waiting in open batches.
func (a *accumulator) pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, b := range a.mu.open {
		n += len(b.sends)
	}
	return n
}
