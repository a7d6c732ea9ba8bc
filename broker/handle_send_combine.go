package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/samsamq/samsa/storage"
)

// appendCombiner turns concurrent appends into store batches (flat
// combining). A caller queues its entries (one send, or a connection's
// run of pipelined sends, conn_inline.go); when no round is being written,
// it leads one: it takes the entries at the head of the queue (up to
// maxCombineMsgs / maxBytes), writes them with one Store.AppendBatch (one
// lock, one copy, one backend write), gives each its result, and makes the
// new head of the queue, if any, the next leader. The owner of that head
// is waiting for it (entries finish in queue order), so no round is ever
// left unwritten. Under load the store lock is taken once per batch
// instead of once per message, and messages no longer queue on it one
// goroutine hand-off at a time.
//
// Each message still gets its own record, queue offset and answer; nothing
// is held back for a timer: a lone send is written at once as a batch of
// one. Used only when the store's policy is not FlushSync (there a batch's
// durability wait would hold up the next leader; the store's own group
// commit does the gathering). Safe for concurrent use.
type appendCombiner struct {
	store    *storage.Store
	maxBytes int // a batch stops growing past this many (estimated) record bytes

	pool sync.Pool // *combineEntry

	mu struct {
		sync.Mutex
		leading bool            // a leader is writing a batch
		queue   []*combineEntry // waiting for the next leader, oldest first
	}
}

// maxCombineMsgs bounds one combined batch.
const maxCombineMsgs = 256

// combineEntry is one message waiting to be appended.
type combineEntry struct {
	m    *storage.Message
	res  storage.AppendResult
	err  error
	lead bool          // set instead of a result: this entry leads the next batch
	done chan struct{} // cap 1: the result (or the lead) is there
}

// recordOverhead is a generous estimate of a record's bytes beyond body,
// properties and topic (the fixed fields).
const recordOverhead = 128

func newAppendCombiner(st *storage.Store, segmentSize int64) *appendCombiner {
	maxBytes := 1 << 20
	if q := int(segmentSize / 4); q < maxBytes {
		maxBytes = max(q, 1)
	}
	c := &appendCombiner{store: st, maxBytes: maxBytes}
	c.pool.New = func() any { return &combineEntry{done: make(chan struct{}, 1)} }
	return c
}

// append stores m, combined with whatever other sends are appending now,
// and returns its result as Store.Append would.
func (c *appendCombiner) append(m *storage.Message) (storage.AppendResult, error) {
	e := c.get(m)
	c.run([]*combineEntry{e})
	return c.finish(e)
}

// appendAll appends msgs in this order among the concurrent sends (a
// transaction's settlement; txn.Config.Append). The combiner may split
// them over store batches, so each message has its own error: errs is nil
// when all were appended, else each one's; err is the first.
func (c *appendCombiner) appendAll(msgs []*storage.Message) (res []storage.AppendResult, errs []error, err error) {
	es := make([]*combineEntry, len(msgs))
	for i, m := range msgs {
		es[i] = c.get(m)
	}
	c.run(es)
	res = make([]storage.AppendResult, len(msgs))
	for i, e := range es {
		r, e := c.finish(e)
		res[i] = r
		if e != nil && err == nil {
			err = e
			errs = make([]error, len(msgs))
		}
		if errs != nil {
			errs[i] = e
		}
	}
	return res, errs, err
}

// get returns a pooled entry for m.
func (c *appendCombiner) get(m *storage.Message) *combineEntry {
	e := c.pool.Get().(*combineEntry)
	e.m = m
	return e
}

// run appends the entries (a connection's run of sends, or one) and
// returns when each has its result. They join the queue together; when
// no leader is writing, or when one of them is made the next leader, the
// caller leads a round itself.
func (c *appendCombiner) run(es []*combineEntry) {
	c.mu.Lock()
	c.mu.queue = append(c.mu.queue, es...)
	lead := !c.mu.leading // the queue was empty: es[0] is its head
	c.mu.leading = true
	c.mu.Unlock()
	// The entries finish in queue order, so the head of the queue, when
	// it is one of ours, is the first of ours not finished.
	for _, e := range es {
		for {
			if lead {
				lead = false
				c.round()
			}
			<-e.done
			if !e.lead {
				break
			}
			e.lead = false
			lead = true
		}
	}
}

// round is a leader's: write the batch at the head of the queue, then
// make the new head the next leader, or end the leading.
func (c *appendCombiner) round() {
	c.mu.Lock()
	batch := c.takeLocked()
	c.mu.Unlock()
	c.write(batch)
	c.mu.Lock()
	if len(c.mu.queue) > 0 {
		next := c.mu.queue[0]
		next.lead = true
		next.done <- struct{}{}
	} else {
		c.mu.leading = false
	}
	c.mu.Unlock()
}

// finish takes e's result and returns e to the pool.
func (c *appendCombiner) finish(e *combineEntry) (storage.AppendResult, error) {
	res, err := e.res, e.err
	*e = combineEntry{done: e.done}
	c.pool.Put(e)
	return res, err
}

// takeLocked removes the next batch from the head of the queue.
func (c *appendCombiner) takeLocked() []*combineEntry {
	q := c.mu.queue
	n, bytes := 0, 0
	for n < len(q) && n < maxCombineMsgs {
		bytes += recordOverhead + len(q[n].m.Body) + len(q[n].m.Properties) + len(q[n].m.Topic)
		if n > 0 && bytes > c.maxBytes {
			break
		}
		n++
	}
	batch := make([]*combineEntry, n)
	copy(batch, q[:n])
	rest := copy(q, q[n:])
	clear(q[rest:])
	c.mu.queue = q[:rest]
	return batch
}

// write appends batch and hands each entry its result.
func (c *appendCombiner) write(batch []*combineEntry) {
	var one [1]*storage.Message
	msgs := one[:0]
	if len(batch) > 1 {
		msgs = make([]*storage.Message, 0, len(batch))
	}
	for _, e := range batch {
		msgs = append(msgs, e.m)
	}
	res, err := c.appendBatch(msgs)
	switch {
	case len(batch) > 1 && res == nil && perMessage(err):
		// One message spoils the batch (too large, not encodable): give
		// each its own answer.
		for _, e := range batch {
			e.res, e.err = c.store.Append(context.Background(), e.m)
		}
	default:
		for i, e := range batch {
			if res != nil {
				e.res = res[i]
			}
			e.err = err
		}
	}
	for _, e := range batch {
		e.done <- struct{}{}
	}
}

// appendBatch is Store.AppendBatch, a panic in it made an error: every
// entry of a round must get an answer, or the queue behind it would wait
// for ever.
func (c *appendCombiner) appendBatch(msgs []*storage.Message) (res []storage.AppendResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("broker: append panicked: %v", r)
		}
	}()
	return c.store.AppendBatch(context.Background(), msgs)
}

// perMessage reports whether a batch's error may belong to one message
// only.
func perMessage(err error) bool {
	return errors.Is(err, storage.ErrMessageTooLarge) || errors.Is(err, storage.ErrInvalidMessage)
}
