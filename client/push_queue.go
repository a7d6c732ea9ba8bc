package client

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// queueWorker consumes one owned queue: a puller long-polls the broker and
// feeds a channel (each answer handled on the connection's reader
// goroutine, which also sends the next pull; the puller goroutine steps in
// to wait or block); handler goroutines (one in orderly mode, which keeps
// the order) take messages from it. The tracker holds what is
// in flight: the puller pauses at the flow bounds, the committer reads the
// lowest unhandled offset.
type queueWorker struct {
	c    *PushConsumer
	q    MessageQueue
	sub  *subscription
	tr   *tracker
	ctx  context.Context
	stop context.CancelFunc
	work chan workItem
	done chan struct{} // closed when the puller and the handlers have ended
	// back (cap 1) carries a pull's answer from its callback to the
	// puller goroutine when the callback cannot finish it (pullOutcome).
	back     chan pullOutcome
	pullOpts PullOptions

	mu struct {
		sync.Mutex
		lastCommit int64 // -1: nothing committed yet
	}
}

type workItem struct {
	m   *MessageExt
	seq uint64
}

func newQueueWorker(c *PushConsumer, q MessageQueue, s *subscription, offset int64) *queueWorker {
	l := flowLimits{msgs: c.opts.MaxInFlight, bytes: c.opts.MaxInFlightBytes, span: c.opts.MaxSpan}
	if c.opts.Orderly {
		l.span = 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &queueWorker{c: c, q: q, sub: s, tr: newTracker(offset, l), ctx: ctx, stop: cancel,
		work: make(chan workItem, max(c.opts.PullBatchSize, min(c.opts.MaxInFlight, 1024))), done: make(chan struct{}),
		back:     make(chan pullOutcome, 1),
		pullOpts: PullOptions{MaxMessages: c.opts.PullBatchSize, Expression: s.expr, SQL92: s.sql, Wait: c.opts.PollWait}}
	w.mu.lastCommit = -1
	return w
}

// start runs the puller and the handlers.
func (w *queueWorker) start() {
	n := w.c.opts.Concurrency
	if w.c.opts.Orderly {
		n = 1
	}
	var wg sync.WaitGroup
	wg.Add(1 + n)
	go func() {
		defer wg.Done()
		defer close(w.work)
		w.pullLoop()
	}()
	for i := 0; i < n; i++ {
		go func() {
			defer wg.Done()
			for it := range w.work {
				if w.ctx.Err() == nil {
					w.handle(it)
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(w.done)
	}()
}

// wait waits up to d for the worker to end.
func (w *queueWorker) wait(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-w.done:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
		return true
	case <-t.C:
		return false
	}
}

// uncommitted returns the offset to commit, if it moved since the last.
func (w *queueWorker) uncommitted() (int64, bool) {
	off := w.tr.commitOffset()
	w.mu.Lock()
	defer w.mu.Unlock()
	return off, off != w.mu.lastCommit
}

func (w *queueWorker) committed(off int64) {
	w.mu.Lock()
	w.mu.lastCommit = off
	w.mu.Unlock()
}

// sleep waits d unless the worker stops first.
func (w *queueWorker) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// pullOutcome is a pull's answer handed back to the puller goroutine, for
// what the reader goroutine must not do: wait (flow control, a full work
// queue, a retry pause) or make a blocking call. When tracked, res's
// messages are in the tracker from sequence number seq, and the first
// sent of them are queued; res nil and err nil mean all is done.
type pullOutcome struct {
	res     *PullResult
	err     error
	tracked bool
	seq     uint64
	sent    int
}

// pullLoop is the queue's puller goroutine. It issues a pull; the answer
// is handled on the connection's reader goroutine (onPull), which queues
// the messages and issues the next pull itself, so a steady stream costs
// no hand-off to this goroutine per pull. It takes over (through back)
// only to wait or to block. One pull is in flight at a time; the loop
// returns, closing the work channel, only once none is.
func (w *queueWorker) pullLoop() {
	for {
		for w.tr.over() {
			select {
			case <-w.tr.resume:
			case <-w.ctx.Done():
				return
			}
		}
		if w.ctx.Err() != nil {
			return
		}
		w.issuePull()
		// No ctx.Done case: the pull in flight answers whatever happens
		// (its context is w.ctx's), and its callback may still queue work.
		if !w.finish(<-w.back) {
			return
		}
	}
}

// issuePull sends the queue's next pull; onPull gets the answer.
func (w *queueWorker) issuePull() {
	c := w.c
	c.in.pullAsync(w.ctx, c.opts.Group, w.q, w.tr.nextOffset(), w.pullOpts, w.sub.filter, -1, w.onPull)
}

// onPull handles a pull's answer, on the reader goroutine (or, for an
// error, wherever it was raised): it must never block. A found batch is
// tracked and queued for the handlers and, unless flow control says stop,
// the next pull goes out from here; anything else goes back to pullLoop.
func (w *queueWorker) onPull(res *PullResult, err error) {
	o := pullOutcome{res: res, err: err}
	if err == nil && w.ctx.Err() == nil {
		switch res.Status {
		case PullFound:
			if len(res.Messages) == 0 {
				w.tr.advance(res.NextOffset)
				break
			}
			o.seq, o.tracked = w.track(res), true
			for o.sent < len(res.Messages) {
				select {
				case w.work <- workItem{m: res.Messages[o.sent], seq: o.seq + uint64(o.sent)}:
					o.sent++
					continue
				default:
				}
				break
			}
			if o.sent < len(res.Messages) {
				w.back <- o // the work queue is full: pullLoop waits for room
				return
			}
		case PullNoNewMessage, PullNoMatchedMessage:
			w.tr.advance(res.NextOffset)
		default:
			w.back <- o
			return
		}
		if !w.tr.over() && w.ctx.Err() == nil {
			w.issuePull()
			return
		}
		o = pullOutcome{}
	}
	w.back <- o
}

// track adds a found batch to the tracker and returns its first sequence
// number.
func (w *queueWorker) track(res *PullResult) uint64 {
	offsets := make([]int64, len(res.Messages))
	sizes := make([]int64, len(res.Messages))
	for i, m := range res.Messages {
		offsets[i], sizes[i] = m.QueueOffset, int64(m.StoreSize)
		if w.sub.retry {
			if t := m.Property(PropertyRetryTopic); t != "" {
				m.Topic = t
			}
		}
	}
	return w.tr.add(offsets, sizes, res.NextOffset)
}

// finish does, on the puller goroutine, what onPull handed back; false
// means the worker is stopping.
func (w *queueWorker) finish(o pullOutcome) bool {
	c := w.c
	if o.err != nil {
		if w.ctx.Err() != nil {
			return false
		}
		c.opts.Logger.Debug("client: pull failed", "queue", w.q, "err", o.err)
		w.sleep(c.opts.PullRetryDelay)
		return true
	}
	res := o.res
	if res == nil {
		return true
	}
	switch res.Status {
	case PullFound:
		if !o.tracked {
			if len(res.Messages) == 0 {
				w.tr.advance(res.NextOffset)
				return true
			}
			o.seq = w.track(res)
		}
		for i := o.sent; i < len(res.Messages); i++ {
			select {
			case w.work <- workItem{m: res.Messages[i], seq: o.seq + uint64(i)}:
			case <-w.ctx.Done():
				return false
			}
		}
	case PullNoNewMessage, PullNoMatchedMessage:
		w.tr.advance(res.NextOffset)
	case PullOffsetIllegal:
		from := w.tr.nextOffset() // the pull's offset: only this goroutine moves it
		c.opts.Logger.Warn("client: offset illegal, moved", "queue", w.q, "from", from, "to", res.NextOffset, "broker", res.Remark)
		if res.NextOffset >= from {
			// Forward: the broker skips what it cannot serve (a corrupt
			// record, messages retention removed). The messages in flight
			// lie before it and were delivered: the commit still waits
			// for them, as for any pull.
			w.tr.advance(res.NextOffset)
		} else {
			w.tr.reset(res.NextOffset)
		}
		_ = c.commit(w.ctx, []*queueWorker{w}) // logged; retried by the periodic commit
	}
	return true
}

// handle runs the handler on one message until it is consumed, handed
// back to the broker for a later retry, or given up.
func (w *queueWorker) handle(it workItem) {
	c := w.c
	m := it.m
	redeliverLocally := c.opts.Broadcast || c.opts.Orderly
	for attempt := 0; ; attempt++ {
		err := w.call(m)
		if err == nil {
			c.handled.Add(1)
			w.tr.done(it.seq)
			return
		}
		c.failed.Add(1)
		if w.ctx.Err() != nil {
			return // given up: the next owner gets it again
		}
		exhausted := int(m.ReconsumeTimes)+1 >= c.opts.MaxReconsumeTimes
		if !redeliverLocally || (exhausted && !c.opts.Broadcast) {
			if berr := w.sendBack(m); berr == nil {
				w.tr.done(it.seq)
				return
			} else {
				c.opts.Logger.Debug("client: send back failed, retrying locally", "msg", m.MsgID, "err", berr)
			}
		} else if exhausted {
			c.opts.Logger.Warn("client: message dropped after retries", "msg", m.MsgID, "queue", w.q, "times", m.ReconsumeTimes+1, "err", err)
			w.tr.done(it.seq)
			return
		}
		if !w.sleep(c.opts.RetryDelay) {
			return
		}
		m.ReconsumeTimes++
	}
}

// call runs the handler, turning a panic into an error.
func (w *queueWorker) call(m *MessageExt) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("client: handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return w.c.handler(w.ctx, m)
}

// sendBack hands m to the broker's retry path (CONSUMER_SEND_MSG_BACK).
func (w *queueWorker) sendBack(m *MessageExt) error {
	c := w.c
	ctx, cancel := c.in.ctxTimeout(w.ctx)
	defer cancel()
	addr, err := c.in.queueAddr(ctx, w.q, false)
	if err != nil {
		return err
	}
	h := protocol.ConsumerSendMsgBackRequestHeader{Offset: m.CommitLogOffset, Group: c.opts.Group, DelayLevel: 0,
		OriginMsgID: m.MsgID, OriginTopic: m.Topic, MaxReconsumeTimes: int32(c.opts.MaxReconsumeTimes),
		HasMaxReconsumeTimes: true, BrokerName: w.q.BrokerName}
	_, err = c.in.invoke(ctx, addr, protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil))
	return err
}
