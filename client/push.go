package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// RetryTopicPrefix and DLQTopicPrefix name a group's retry and
// dead-letter topics (RocketMQ's %RETRY%group and %DLQ%group).
const (
	RetryTopicPrefix = "%RETRY%"
	DLQTopicPrefix   = "%DLQ%"
)

// PushConsumer delivers the messages of its subscriptions to a Handler,
// pulling with long polls. At least once: a queue's committed offset never
// passes a message whose handler has not returned, so after a crash or a
// rebalance a message may come again, never be skipped.
//
// In clustering mode (the default) the group's members divide each
// topic's queues (Allocate) and divide them again when a member joins or
// leaves; in broadcasting mode every member reads every queue.
//
// Goroutines: per owned queue a puller and its handlers; a rebalancer
// (every RebalanceInterval, and when the broker reports a membership
// change), a committer (every CommitInterval), a heartbeat and a route
// refresher. Close stops them all. Methods are safe for concurrent use.
type PushConsumer struct {
	opts    PushConsumerOptions
	handler Handler
	in      *instance
	store   OffsetStore
	started atomic.Bool
	closed  atomic.Bool

	rebalanceNow  chan struct{} // cap 1: a membership change was reported
	rebalanceStop chan struct{} // closed by Close: the rebalancer ends
	rebalanceDone chan struct{} // closed by the rebalancer when it ends

	mu struct {
		sync.Mutex
		subs    map[string]*subscription
		workers map[MessageQueue]*queueWorker
	}
	// stats
	handled, failed atomic.Int64
}

// subscription is one subscribed topic.
type subscription struct {
	topic  string
	expr   string
	filter tagFilter
	retry  bool // the group's retry topic, subscribed on the group's behalf
	sql    bool // expr is an SQL92 selector (SubscribeSQL92)
}

// NewPushConsumer returns a consumer that will hand messages to h once
// started. Subscribe to topics, then Start.
func NewPushConsumer(opts PushConsumerOptions, h Handler) (*PushConsumer, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("client: push consumer options: %w", err)
	}
	if h == nil {
		return nil, errors.New("client: push consumer: nil handler")
	}
	c := &PushConsumer{opts: opts, handler: h, rebalanceNow: make(chan struct{}, 1),
		rebalanceStop: make(chan struct{}), rebalanceDone: make(chan struct{})}
	c.mu.subs = map[string]*subscription{}
	c.mu.workers = map[MessageQueue]*queueWorker{}
	c.in = newInstance(opts.ClientOptions, c.serve)
	switch {
	case opts.OffsetStore != nil:
		c.store = opts.OffsetStore
	case opts.Broadcast:
		c.store = NewFileOffsetStore(opts.OffsetFile)
	default:
		c.store = &brokerOffsetStore{in: c.in, group: opts.Group}
	}
	if !opts.Broadcast {
		c.mu.subs[RetryTopicPrefix+opts.Group] = &subscription{topic: RetryTopicPrefix + opts.Group, expr: "*", filter: parseTagFilter("*"), retry: true}
	}
	return c, nil
}

// Options returns the consumer's settings, defaults filled in.
func (c *PushConsumer) Options() PushConsumerOptions { return c.opts }

// ClientID returns the id the consumer is known by in its group.
func (c *PushConsumer) ClientID() string { return c.in.clientID }

// Subscribe adds topic with a tag expression ("*", "TagA || TagB").
// Call it before Start.
func (c *PushConsumer) Subscribe(topic, expression string) error {
	if c.started.Load() {
		return errors.New("client: Subscribe after Start")
	}
	if topic == "" {
		return fmt.Errorf("%w: empty topic", ErrMessageIllegal)
	}
	if expression == "" {
		expression = "*"
	}
	c.mu.Lock()
	c.mu.subs[topic] = &subscription{topic: topic, expr: expression, filter: parseTagFilter(expression)}
	c.mu.Unlock()
	return nil
}

// SubscribeSQL92 adds topic with an SQL92 selector over message
// properties ("a > 5 AND TAGS IN ('x', 'y')", RocketMQ's grammar), which
// the broker evaluates: it must run with enablePropertyFilter. Start asks
// each broker of the topic first (CHECK_CLIENT_CONFIG) and fails when
// one refuses the selector. Call it before Start.
func (c *PushConsumer) SubscribeSQL92(topic, expression string) error {
	if c.started.Load() {
		return errors.New("client: Subscribe after Start")
	}
	if topic == "" || strings.TrimSpace(expression) == "" {
		return fmt.Errorf("%w: empty topic or SQL92 selector", ErrMessageIllegal)
	}
	c.mu.Lock()
	c.mu.subs[topic] = &subscription{topic: topic, expr: expression, filter: tagFilter{all: true}, sql: true}
	c.mu.Unlock()
	return nil
}

// Start looks the subscribed topics up, announces the consumer to their
// brokers, takes its queues and starts consuming. A subscribed topic with
// no route is an error (ErrNoRoute).
func (c *PushConsumer) Start(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.started.Swap(true) {
		return errors.New("client: push consumer already started")
	}
	subs := c.subscriptions()
	if len(subs) == 0 || (len(subs) == 1 && subs[0].retry) {
		return errors.New("client: push consumer has no subscription")
	}
	for _, s := range subs {
		r, err := c.in.route(ctx, s.topic)
		if err == nil && s.sql {
			err = c.checkSQL92(ctx, s, r)
		}
		if err != nil && !s.retry {
			c.started.Store(false) // nothing runs yet: Close need not wait, Start may be called again
			return err
		}
	}
	c.heartbeat(ctx)
	c.rebalance(ctx)
	c.in.every(c.opts.RouteRefresh, false, c.in.refreshRoutes)
	c.in.every(c.opts.HeartbeatInterval, false, c.heartbeat)
	c.in.every(c.opts.CommitInterval, false, func(ctx context.Context) { _ = c.commit(ctx, nil) }) // logged; retried next round
	go c.rebalanceLoop()
	return nil
}

func (c *PushConsumer) subscriptions() []*subscription {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*subscription, 0, len(c.mu.subs))
	for _, s := range c.mu.subs {
		out = append(out, s)
	}
	return out
}

// serve answers the brokers' requests: a membership change triggers a
// rebalance.
func (c *PushConsumer) serve(addr string, req *protocol.Command) *protocol.Command {
	switch req.Code {
	case protocol.NotifyConsumerIdsChanged:
		c.triggerRebalance()
		return nil
	}
	return nil
}

func (c *PushConsumer) triggerRebalance() {
	select {
	case c.rebalanceNow <- struct{}{}:
	default:
	}
}

func (c *PushConsumer) consumerData() protocol.ConsumerData {
	d := protocol.ConsumerData{GroupName: c.opts.Group, ConsumeType: protocol.ConsumePassively,
		MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset}
	if c.opts.Broadcast {
		d.MessageModel = protocol.MessageModelBroadcasting
	}
	switch c.opts.Start {
	case StartEarliest:
		d.ConsumeFromWhere = protocol.ConsumeFromFirstOffset
	case StartTimestamp:
		d.ConsumeFromWhere = protocol.ConsumeFromTimestamp
	}
	for _, s := range c.subscriptions() {
		sd := protocol.SubscriptionData{Topic: s.topic, SubString: s.expr, ExpressionType: protocol.ExpressionTag}
		if s.sql {
			sd.ExpressionType = protocol.ExpressionSQL92
			d.SubscriptionDataSet = append(d.SubscriptionDataSet, sd)
			continue
		}
		codes := s.filter.codes()
		for i, t := range s.filter.tags {
			sd.TagsSet = append(sd.TagsSet, t)
			sd.CodeSet = append(sd.CodeSet, int32(codes[i]))
		}
		if s.filter.all {
			sd.SubString = protocol.SubAll
		}
		d.SubscriptionDataSet = append(d.SubscriptionDataSet, sd)
	}
	return d
}

func (c *PushConsumer) heartbeat(ctx context.Context) {
	c.in.heartbeat(ctx, &protocol.HeartbeatData{ConsumerDataSet: []protocol.ConsumerData{c.consumerData()}}, false)
}

// commit stores the offset of every owned queue that moved since its last
// commit (only only's, when only is not nil).
func (c *PushConsumer) commit(ctx context.Context, only []*queueWorker) error {
	ws := only
	if ws == nil {
		c.mu.Lock()
		for _, w := range c.mu.workers {
			ws = append(ws, w)
		}
		c.mu.Unlock()
	}
	offsets := map[MessageQueue]int64{}
	for _, w := range ws {
		if off, ok := w.uncommitted(); ok {
			offsets[w.q] = off
		}
	}
	if len(offsets) == 0 {
		return nil
	}
	cctx, cancel := c.in.ctxTimeout(ctx)
	defer cancel()
	if err := c.store.Commit(cctx, offsets); err != nil {
		c.opts.Logger.Warn("client: commit offsets failed", "group", c.opts.Group, "err", err)
		return err
	}
	for _, w := range ws {
		if off, ok := offsets[w.q]; ok {
			w.committed(off)
		}
	}
	return nil
}

// Stats are a consumer's counters.
type ConsumerStats struct {
	Handled, Failed int64 // handler calls that returned nil / an error
	Queues          int   // queues owned now
}

// Stats returns the consumer's counters.
func (c *PushConsumer) Stats() ConsumerStats {
	c.mu.Lock()
	n := len(c.mu.workers)
	c.mu.Unlock()
	return ConsumerStats{Handled: c.handled.Load(), Failed: c.failed.Load(), Queues: n}
}

// Queues returns the queues the consumer owns now, sorted.
func (c *PushConsumer) Queues() []MessageQueue {
	c.mu.Lock()
	out := make([]MessageQueue, 0, len(c.mu.workers))
	for q := range c.mu.workers {
		out = append(out, q)
	}
	c.mu.Unlock()
	SortQueues(out)
	return out
}

// Close stops pulling, waits (up to DrainTimeout) for the handlers in
// flight, commits the offsets, leaves the group (the others take its
// queues at once) and closes the connections.
func (c *PushConsumer) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if !c.started.Load() {
		c.in.close()
		return nil
	}
	// First the rebalancer, so no queue starts or stops behind our back.
	close(c.rebalanceStop)
	select {
	case <-c.rebalanceDone:
	case <-time.After(c.opts.DrainTimeout + c.opts.RequestTimeout):
		c.opts.Logger.Warn("client: rebalancer slow to stop", "group", c.opts.Group)
	}
	c.mu.Lock()
	ws := make([]*queueWorker, 0, len(c.mu.workers))
	for q, w := range c.mu.workers {
		ws = append(ws, w)
		delete(c.mu.workers, q)
	}
	c.mu.Unlock()
	c.stopWorkers(ws)
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.RequestTimeout)
	defer cancel()
	err := c.commit(ctx, ws)
	c.unlock(ctx, ws)
	c.in.unregister(ctx, "", c.opts.Group)
	c.in.close()
	return err
}
