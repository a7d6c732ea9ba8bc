package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// rebalanceLoop is the rebalancer goroutine: it divides the queues again
// every RebalanceInterval and whenever a broker reports a membership
// change. It owns the starting and stopping of queue workers after Start;
// Close stops it (rebalanceStop) and waits for it before its own cleanup.
func (c *PushConsumer) rebalanceLoop() {
	defer close(c.rebalanceDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t := time.NewTicker(c.opts.RebalanceInterval)
	defer t.Stop()
	for {
		select {
		case <-c.rebalanceStop:
			return
		case <-t.C:
		case <-c.rebalanceNow:
		}
		c.rebalance(ctx)
	}
}

// members returns the group's client ids, sorted, from a broker of r.
func (c *PushConsumer) members(ctx context.Context, r *topicRoute) ([]string, error) {
	names := make([]string, 0, len(r.brokers))
	for n := range r.brokers {
		names = append(names, n)
	}
	sort.Strings(names)
	h := protocol.GetConsumerListByGroupRequestHeader{ConsumerGroup: c.opts.Group}
	var errs []error
	for _, n := range names {
		addr := r.readAddr(n)
		if addr == "" {
			continue
		}
		mctx, cancel := c.in.ctxTimeout(ctx)
		resp, err := c.in.invoke(mctx, addr, protocol.NewRequest(protocol.GetConsumerListByGroup, h.Encode(), nil))
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var body protocol.GetConsumerListByGroupResponseBody
		if err := protocol.UnmarshalBody(resp.Body, &body); err != nil {
			errs = append(errs, err)
			continue
		}
		ids := slices.Clone(body.ConsumerIDList)
		sort.Strings(ids)
		return ids, nil
	}
	return nil, fmt.Errorf("client: members of group %s: %w", c.opts.Group, errors.Join(errs...))
}

// rebalance works out the queues this member should own and starts and
// stops workers to match. A topic whose route or membership cannot be
// read keeps the queues it has.
func (c *PushConsumer) rebalance(ctx context.Context) {
	if c.closed.Load() {
		return
	}
	want := map[MessageQueue]*subscription{}
	keep := map[string]bool{} // topics to leave as they are
	for _, s := range c.subscriptions() {
		r, err := c.in.route(ctx, s.topic)
		if err != nil {
			keep[s.topic] = true
			if !s.retry || !errors.Is(err, ErrNoRoute) {
				c.opts.Logger.Debug("client: rebalance: no route", "topic", s.topic, "err", err)
			}
			continue
		}
		mine := r.read
		if !c.opts.Broadcast && len(mine) > 0 {
			ids, err := c.members(ctx, r)
			if err != nil || !slices.Contains(ids, c.in.clientID) {
				keep[s.topic] = true
				c.opts.Logger.Debug("client: rebalance: membership unknown", "topic", s.topic, "err", err, "members", ids)
				if err == nil {
					c.heartbeat(ctx) // the brokers have not heard of us (yet)
				}
				continue
			}
			mine = c.opts.Allocate.Allocate(c.in.clientID, ids, r.read)
		}
		for _, q := range mine {
			want[q] = s
		}
	}
	c.mu.Lock()
	var drop []*queueWorker
	for q, w := range c.mu.workers {
		if _, ok := want[q]; !ok && !keep[q.Topic] {
			drop = append(drop, w)
			delete(c.mu.workers, q)
		}
	}
	var add []MessageQueue
	for q := range want {
		if _, ok := c.mu.workers[q]; !ok {
			add = append(add, q)
		}
	}
	c.mu.Unlock()
	if len(drop) > 0 {
		c.stopWorkers(drop)
		_ = c.commit(ctx, drop) // logged; the new owner resumes from the last commit
		c.unlock(ctx, drop)
		c.opts.Logger.Info("client: rebalance gave up queues", "group", c.opts.Group, "client", c.in.clientID, "queues", len(drop))
	}
	if c.opts.Orderly && !c.opts.Broadcast {
		add = c.relock(ctx, add)
	}
	SortQueues(add)
	started := 0
	for _, q := range add {
		off, err := c.startOffset(ctx, q, want[q])
		if err != nil {
			c.opts.Logger.Warn("client: rebalance: no start offset", "queue", q, "err", err)
			continue
		}
		w := newQueueWorker(c, q, want[q], off)
		c.mu.Lock()
		if c.closed.Load() {
			c.mu.Unlock()
			return
		}
		if c.mu.workers[q] != nil {
			c.mu.Unlock()
			continue
		}
		c.mu.workers[q] = w
		c.mu.Unlock()
		w.start()
		started++
	}
	if started > 0 {
		c.opts.Logger.Info("client: rebalance took queues", "group", c.opts.Group, "client", c.in.clientID, "queues", started)
	}
}

// startOffset is where a newly owned queue is read from: the committed
// offset, or the start position when there is none. Other errors are
// errors: guessing would skip or repeat messages.
func (c *PushConsumer) startOffset(ctx context.Context, q MessageQueue, s *subscription) (int64, error) {
	ctx, cancel := c.in.ctxTimeout(ctx)
	defer cancel()
	off, err := c.store.Read(ctx, q)
	if err == nil {
		return off, nil
	}
	if !errors.Is(err, ErrNoOffset) {
		return 0, err
	}
	switch {
	case s.retry || c.opts.Start == StartEarliest:
		return c.in.minOffset(ctx, q)
	case c.opts.Start == StartTimestamp:
		return c.in.searchOffset(ctx, q, c.opts.StartTime)
	default:
		return c.in.maxOffset(ctx, q)
	}
}

// stopWorkers stops ws and waits, up to DrainTimeout in all, for their
// handlers in flight.
func (c *PushConsumer) stopWorkers(ws []*queueWorker) {
	for _, w := range ws {
		w.stop()
	}
	deadline := time.Now().Add(c.opts.DrainTimeout)
	for _, w := range ws {
		if !w.wait(time.Until(deadline)) {
			c.opts.Logger.Warn("client: handlers still running after the drain timeout", "queue", w.q)
		}
	}
}

// lockBody is the LOCK_BATCH_MQ / UNLOCK_BATCH_MQ body for qs.
func (c *PushConsumer) lockBody(qs []MessageQueue) ([]byte, error) {
	b := protocol.LockBatchRequestBody{ConsumerGroup: c.opts.Group, ClientID: c.in.clientID}
	for _, q := range qs {
		b.MQSet = append(b.MQSet, protocol.MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: int32(q.QueueID)})
	}
	return protocol.MarshalBody(b)
}

// byBroker groups queues by broker name.
func byBroker(qs []MessageQueue) map[string][]MessageQueue {
	m := map[string][]MessageQueue{}
	for _, q := range qs {
		m[q.BrokerName] = append(m[q.BrokerName], q)
	}
	return m
}

// relock renews the broker locks of the ordered queues owned and takes
// those of add; it returns the queues of add it locked, and stops owned
// queues whose lock another member holds now.
func (c *PushConsumer) relock(ctx context.Context, add []MessageQueue) []MessageQueue {
	c.mu.Lock()
	all := slices.Clone(add)
	for q := range c.mu.workers {
		all = append(all, q)
	}
	c.mu.Unlock()
	locked := map[MessageQueue]bool{}
	for broker, qs := range byBroker(all) {
		addr := c.in.brokerAddr(broker, false)
		body, err := c.lockBody(qs)
		if addr == "" || err != nil {
			continue
		}
		lctx, cancel := c.in.ctxTimeout(ctx)
		resp, err := c.in.invoke(lctx, addr, protocol.NewRequest(protocol.LockBatchMQ, nil, body))
		cancel()
		if err != nil {
			c.opts.Logger.Warn("client: lock queues failed", "broker", broker, "err", err)
			for _, q := range qs {
				locked[q] = !slices.Contains(add, q) // keep what we hold till the lock can be checked
			}
			continue
		}
		var rb protocol.LockBatchResponseBody
		if err := protocol.UnmarshalBody(resp.Body, &rb); err != nil {
			continue
		}
		for _, q := range rb.LockOKMQSet {
			locked[MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: int(q.QueueID)}] = true
		}
	}
	c.mu.Lock()
	var lost []*queueWorker
	for q, w := range c.mu.workers {
		if !locked[q] {
			lost = append(lost, w)
			delete(c.mu.workers, q)
		}
	}
	c.mu.Unlock()
	if len(lost) > 0 {
		c.stopWorkers(lost)
		_ = c.commit(ctx, lost) // logged; the new owner resumes from the last commit
	}
	var out []MessageQueue
	for _, q := range add {
		if locked[q] {
			out = append(out, q)
		}
	}
	return out
}

// unlock releases the broker locks of ordered queues given up.
func (c *PushConsumer) unlock(ctx context.Context, ws []*queueWorker) {
	if !c.opts.Orderly || c.opts.Broadcast || len(ws) == 0 {
		return
	}
	qs := make([]MessageQueue, len(ws))
	for i, w := range ws {
		qs[i] = w.q
	}
	for broker, qs := range byBroker(qs) {
		addr := c.in.brokerAddr(broker, false)
		body, err := c.lockBody(qs)
		if addr == "" || err != nil {
			continue
		}
		uctx, cancel := c.in.ctxTimeout(ctx)
		if _, err := c.in.invoke(uctx, addr, protocol.NewRequest(protocol.UnlockBatchMQ, nil, body)); err != nil {
			c.opts.Logger.Debug("client: unlock queues failed", "broker", broker, "err", err)
		}
		cancel()
	}
}
