package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// AsyncResult is the outcome of one asynchronous send, for SendAsyncChan.
type AsyncResult struct {
	Message *Message
	Result  *SendResult
	Err     error
}

// SendAsync sends m and returns before the answer; done is called once
// with the outcome, from another goroutine (or from this one, when m
// cannot be sent at all). It waits while MaxInFlight sends are
// unanswered. ctx bounds the wait for room and the route look-up; the
// send itself is bounded by ctx's deadline (SendTimeout when it has none,
// or when the message is batched), not cancelled with ctx. With Batch
// options, m joins a batch for its queue. A send that fails is retried
// on another broker like Send's. Leave m unchanged until done is called.
func (p *Producer) SendAsync(ctx context.Context, m *Message, done func(*SendResult, error)) {
	if p.closed.Load() {
		done(nil, ErrClosed)
		return
	}
	if err := validateMessage(m, p.opts.MaxBodySize); err != nil {
		done(nil, err)
		return
	}
	select {
	case p.inflight <- struct{}{}:
	case <-ctx.Done():
		done(nil, ctxErr(ctx, "wait for an in-flight slot"))
		return
	}
	p.pending.add()
	finish := func(res *SendResult, err error) {
		<-p.inflight
		done(res, err)
		p.pending.done()
	}
	r, err := p.writeRoute(ctx, m.Topic)
	if err != nil {
		finish(nil, err)
		return
	}
	now := p.opts.Clock()
	s := pendingSend{msg: m, uniq: p.uniqIDAt(m, now), size: m.size(), done: finish}
	if p.acc != nil {
		if p.keyed(m) {
			p.acc.add(p.pick(m, r, ""), s)
		} else {
			p.acc.addSticky(m.Topic, s, func() MessageQueue { return p.pick(m, r, "") })
		}
		return
	}
	// The send keeps ctx's deadline but not its cancellation: callers
	// often cancel as soon as SendAsync returns.
	deadline, ok := ctx.Deadline()
	if !ok {
		if !p.realClock {
			now = time.Now() // deadlines are on the real clock
		}
		deadline = now.Add(p.opts.SendTimeout)
	}
	p.sendOneAsync(deadline, now, r, s, p.pick(m, r, ""), 0, nil, finish)
}

// SendAsyncChan is SendAsync delivering the outcome to results, which
// must have room (or a reader) for every send made through it.
func (p *Producer) SendAsyncChan(ctx context.Context, m *Message, results chan<- AsyncResult) {
	p.SendAsync(ctx, m, func(res *SendResult, err error) { results <- AsyncResult{Message: m, Result: res, Err: err} })
}

// sendOneAsync makes one attempt of s to q and retries on failure.
// The attempts share one deadline (no context: a timed-out request is
// failed by the connection's sweeper).
// start is the attempt's time on the producer's clock: its born
// timestamp, and where its latency for fault avoidance counts from.
func (p *Producer) sendOneAsync(deadline, start time.Time, r *topicRoute, s pendingSend, q MessageQueue, attempt int, errs []error, done func(*SendResult, error)) {
	addr := r.masterAddr(q.BrokerName)
	p.in.rc.InvokeAsyncDeadline(addr, p.request(s.msg, q, s.uniq, start), deadline, func(resp *protocol.Command, err error) {
		p.noteAnswer(addr, err)
		if errors.Is(err, ErrTimeout) {
			p.in.refreshSoon(s.msg.Topic) // as Send: a fail-over may have moved the master
		}
		var res *SendResult
		if err == nil {
			res, err = result(addr, q, s.uniq, resp)
		}
		p.note(q.BrokerName, start, err)
		if err == nil || !retriable(err) || attempt >= p.opts.retries() || !time.Now().Before(deadline) {
			if err != nil && len(errs) > 0 {
				err = fmt.Errorf("%w (after %d failed attempts: %v)", err, len(errs), errs)
			}
			done(res, err)
			return
		}
		errs = append(errs, fmt.Errorf("attempt %d to %s: %w", attempt+1, q.BrokerName, err))
		p.in.refreshSoon(s.msg.Topic)
		nq := q
		if !p.keyed(s.msg) {
			nq = p.pick(s.msg, r, q.BrokerName)
		}
		// A new goroutine: this callback runs on the connection's reader.
		go p.sendOneAsync(deadline, p.opts.Clock(), r, s, nq, attempt+1, errs, done)
	})
}

// flushBatch is the accumulator's: it sends one batch and hands each
// message its result.
func (p *Producer) flushBatch(b *openBatch) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.SendTimeout)
	r, err := p.writeRoute(ctx, b.queue.Topic)
	if err != nil {
		cancel()
		for _, s := range b.sends {
			s.done(nil, err)
		}
		return
	}
	p.sendBatchAsync(ctx, r, b.sends, b.queue, 0, func(res []*SendResult, err error) {
		cancel()
		for i, s := range b.sends {
			if res != nil {
				s.done(res[i], err)
			} else {
				s.done(nil, err)
			}
		}
	})
}

// sendBatchAsync makes one attempt of a batch to q and retries on failure:
// on another broker unless a message in it is keyed.
func (p *Producer) sendBatchAsync(ctx context.Context, r *topicRoute, sends []pendingSend, q MessageQueue, attempt int, done func([]*SendResult, error)) {
	req, err := p.batchRequest(q, sends)
	if err != nil {
		done(nil, err)
		return
	}
	addr := r.masterAddr(q.BrokerName)
	start := p.opts.Clock()
	p.in.rc.InvokeAsync(ctx, addr, req, func(resp *protocol.Command, err error) {
		p.noteAnswer(addr, err)
		if errors.Is(err, ErrTimeout) {
			p.in.refreshSoon(q.Topic)
		}
		var res []*SendResult
		if err == nil {
			res, err = batchResults(addr, q, sends, resp)
		}
		p.note(q.BrokerName, start, err)
		if err == nil || !retriable(err) || attempt >= p.opts.retries() || ctx.Err() != nil {
			done(res, err)
			return
		}
		p.in.refreshSoon(q.Topic)
		nq := q
		keyed := false
		for _, s := range sends {
			keyed = keyed || p.keyed(s.msg)
		}
		if !keyed {
			nq = p.pick(sends[0].msg, r, q.BrokerName)
		}
		go p.sendBatchAsync(ctx, r, sends, nq, attempt+1, done)
	})
}
