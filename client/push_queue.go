package client

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// queueWorker consumes one owned queue: a puller goroutine long-polls the
// broker and feeds a channel; handler goroutines (one in orderly mode,
// which keeps the order) take messages from it. The tracker holds what is
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
		work: make(chan workItem, max(c.opts.PullBatchSize, min(c.opts.MaxInFlight, 1024))), done: make(chan struct{})}
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

// pullLoop is the queue's puller goroutine.
func (w *queueWorker) pullLoop() {
	c := w.c
	opts := PullOptions{MaxMessages: c.opts.PullBatchSize, Expression: w.sub.expr, Wait: c.opts.PollWait}
	for w.ctx.Err() == nil {
		for w.tr.over() {
			select {
			case <-w.tr.resume:
			case <-w.ctx.Done():
				return
			}
		}
		res, err := c.in.pull(w.ctx, c.opts.Group, w.q, w.tr.nextOffset(), opts, w.sub.filter, -1)
		if err != nil {
			if w.ctx.Err() != nil {
				return
			}
			c.opts.Logger.Debug("client: pull failed", "queue", w.q, "err", err)
			w.sleep(c.opts.PullRetryDelay)
			continue
		}
		switch res.Status {
		case PullFound:
			if len(res.Messages) == 0 {
				w.tr.advance(res.NextOffset)
				continue
			}
			offsets := make([]int64, len(res.Messages))
			sizes := make([]int64, len(res.Messages))
			for i, m := range res.Messages {
				offsets[i], sizes[i] = m.QueueOffset, int64(m.StoreSize)
				if w.sub.retry {
					if t := m.Properties[PropertyRetryTopic]; t != "" {
						m.Topic = t
					}
				}
			}
			seq := w.tr.add(offsets, sizes, res.NextOffset)
			for i, m := range res.Messages {
				select {
				case w.work <- workItem{m: m, seq: seq + uint64(i)}:
				case <-w.ctx.Done():
					return
				}
			}
		case PullNoNewMessage, PullNoMatchedMessage:
			w.tr.advance(res.NextOffset)
		case PullOffsetIllegal:
			c.opts.Logger.Warn("client: offset illegal, moved", "queue", w.q, "to", res.NextOffset)
			w.tr.reset(res.NextOffset)
			c.commit(w.ctx, []*queueWorker{w})
		}
	}
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
