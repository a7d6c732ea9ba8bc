package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// PopConsumerOptions configure a PopConsumer.
type PopConsumerOptions struct {
	ClientOptions
	// Group is the consumer group whose in-flight messages the brokers
	// track. Required; it must not also consume Topic by push or pull.
	Group string
	// Topic is what Receive reads. Required.
	Topic string
	// Expression selects messages by tag ("*", default, or "A || B"), or
	// with SQL92 set an SQL92 selector (the broker needs
	// enablePropertyFilter).
	Expression string
	SQL92      bool
	// FromEnd makes a group that never popped a queue start at its end
	// (RocketMQ's ConsumeInitMode.MAX) instead of its first message.
	FromEnd bool
	// Orderly pops in order (RocketMQ 5's ordered POP): a queue the group
	// took messages from is held until they are all acknowledged (or
	// their invisible time passes, when what is left comes back first),
	// so each queue's messages are processed one batch after another, in
	// queue order, by whichever consumer of the group holds it.
	Orderly bool
}

// EnsureDefaults fills zero fields with their defaults.
func (o *PopConsumerOptions) EnsureDefaults() {
	o.ClientOptions.EnsureDefaults()
	if o.Expression == "" {
		o.Expression = protocol.SubAll
	}
}

// Validate reports every invalid field at once.
func (o *PopConsumerOptions) Validate() error {
	err := o.ClientOptions.Validate()
	if o.Group == "" {
		err = joinErr(err, errors.New("Group: empty"))
	}
	if o.Topic == "" {
		err = joinErr(err, errors.New("Topic: empty"))
	}
	return err
}

// PopConsumer consumes by RocketMQ 5's POP: each Receive hands out
// messages no other consumer of the group sees until they are
// acknowledged (Ack) or their invisible time passes (then they come back,
// their ReconsumeTimes raised). Any number of PopConsumers of one group
// share a topic, however many queues it has. Safe for concurrent use.
type PopConsumer struct {
	opts PopConsumerOptions
	in   *instance
	rr   atomic.Uint32
}

// PoppedMessage is a received message and its receipt handle.
type PoppedMessage struct {
	*MessageExt
	// ReceiptHandle is RocketMQ's extraInfo (the POP_CK property a Java
	// client keeps): what Ack and ChangeInvisibleTime send back.
	ReceiptHandle string
	addr          string
}

// NewPopConsumer returns a PopConsumer; it connects on the first call.
func NewPopConsumer(opts PopConsumerOptions) (*PopConsumer, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("client: pop consumer options: %w", err)
	}
	c := &PopConsumer{opts: opts, in: newInstance(opts.ClientOptions, nil)}
	c.in.every(opts.RouteRefresh, false, c.in.refreshRoutes)
	return c, nil
}

// popMaxMsgs is the most one POP asks for (the broker refuses more).
const popMaxMsgs = 32

// Receive pops up to n messages (at most 32), invisible to the group's
// other consumers for invisible. With nothing to take, the broker holds
// the request until a message arrives, an invisible time passes, or
// ctx's deadline comes (at most 20 s at a time; without a deadline, 20
// s): then it returns none and a nil error.
func (c *PopConsumer) Receive(ctx context.Context, n int, invisible time.Duration) ([]*PoppedMessage, error) {
	if n < 1 || n > popMaxMsgs {
		return nil, fmt.Errorf("client: pop: %d messages asked for, want 1 to %d", n, popMaxMsgs)
	}
	r, err := c.in.route(ctx, c.opts.Topic)
	if err != nil {
		return nil, err
	}
	var brokers []string
	for _, q := range r.read {
		if !slices.Contains(brokers, q.BrokerName) {
			brokers = append(brokers, q.BrokerName)
		}
	}
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w: %s has no readable queue", ErrNoRoute, c.opts.Topic)
	}
	broker := brokers[int(c.rr.Add(1))%len(brokers)]
	addr := r.masterAddr(broker)
	if addr == "" {
		return nil, fmt.Errorf("client: pop: broker %s has no master (POP is served by masters)", broker)
	}
	poll := 20 * time.Second
	if d, ok := ctx.Deadline(); ok {
		poll = min(poll, time.Until(d)-c.in.opts.RequestTimeout/2)
	}
	poll = max(poll, 0)
	h := protocol.PopMessageRequestHeader{ConsumerGroup: c.opts.Group, Topic: c.opts.Topic, QueueID: -1, MaxMsgNums: int32(n),
		InvisibleTime: invisible.Milliseconds(), PollTime: poll.Milliseconds(), BornTime: time.Now().UnixMilli(),
		ExpType: protocol.ExpressionTag, Exp: c.opts.Expression}
	if c.opts.SQL92 {
		h.ExpType = protocol.ExpressionSQL92
	}
	if c.opts.FromEnd {
		h.InitMode = 1
	}
	h.Order = c.opts.Orderly
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		cctx, cancel = context.WithTimeout(ctx, poll+c.in.opts.RequestTimeout)
	}
	defer cancel()
	resp, err := c.in.rc.Invoke(cctx, addr, protocol.NewRequest(protocol.PopMessage, h.Encode(), nil))
	if err != nil {
		return nil, fmt.Errorf("client: pop %s from %s: %w", c.opts.Topic, broker, err)
	}
	switch resp.Code {
	case protocol.Success:
	case protocol.PollingTimeout, protocol.PullNotFound:
		return nil, nil
	default:
		return nil, fmt.Errorf("client: pop %s: %w", c.opts.Topic, responseError(addr, resp))
	}
	return c.popped(resp, broker, addr)
}

// popped decodes a POP answer and builds each message's handle as
// RocketMQ's client does (ExtraInfoUtil.buildExtraInfo).
func (c *PopConsumer) popped(resp *protocol.Command, broker, addr string) ([]*PoppedMessage, error) {
	var rh protocol.PopMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return nil, fmt.Errorf("client: pop answer from %s: %w", addr, err)
	}
	start := map[int]int64{}
	for _, s := range strings.Split(rh.StartOffsetInfo, ";") {
		f := strings.Split(s, " ")
		if len(f) != 3 {
			continue
		}
		q, err1 := strconv.Atoi(f[1])
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			start[q] = off
		}
	}
	msgs, err := decodeAnswer(resp.Body, decodeOptions{brokerName: broker, verify: !c.in.opts.SkipCRCCheck, pullOffset: -1})
	if err != nil {
		return nil, err
	}
	f := parseTagFilter(c.opts.Expression)
	out := make([]*PoppedMessage, 0, len(msgs))
	var hb []byte
	for _, m := range msgs {
		m.Queue = MessageQueue{Topic: c.opts.Topic, BrokerName: broker, QueueID: m.Queue.QueueID}
		// "ckQueueOffset popTime invisibleTime reviveQid 0 broker queueId queueOffset"
		hb = strconv.AppendInt(hb[:0], start[m.Queue.QueueID], 10)
		for _, v := range []int64{rh.PopTime, rh.InvisibleTime, int64(rh.ReviveQid)} {
			hb = strconv.AppendInt(append(hb, ' '), v, 10)
		}
		hb = append(append(append(hb, " 0 "...), broker...), ' ')
		hb = strconv.AppendInt(hb, int64(m.Queue.QueueID), 10)
		hb = strconv.AppendInt(append(hb, ' '), m.QueueOffset, 10)
		p := &PoppedMessage{MessageExt: m, ReceiptHandle: string(hb), addr: addr}
		if !c.opts.SQL92 && !f.match(m.Tags) {
			// the broker filters by tag hash: a colliding tag is acknowledged here, never delivered
			_ = c.Ack(context.Background(), p)
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// Ack acknowledges m: no consumer of the group receives it again. A
// handle that is no longer current (m's invisible time passed and it was
// handed out again, or it was acknowledged already) is refused with a
// ResponseError of code NO_MESSAGE.
func (c *PopConsumer) Ack(ctx context.Context, m *PoppedMessage) error {
	h := protocol.AckMessageRequestHeader{ConsumerGroup: c.opts.Group, Topic: c.opts.Topic, QueueID: int32(m.Queue.QueueID),
		ExtraInfo: m.ReceiptHandle, Offset: m.QueueOffset, BrokerName: m.Queue.BrokerName}
	resp, err := c.in.rc.Invoke(ctx, m.addr, protocol.NewRequest(protocol.AckMessage, h.Encode(), nil))
	if err != nil {
		return fmt.Errorf("client: ack: %w", err)
	}
	if resp.Code != protocol.Success {
		return fmt.Errorf("client: ack %v@%d: %w", m.Queue, m.QueueOffset, responseError(m.addr, resp))
	}
	return nil
}

// ChangeInvisibleTime makes m invisible for d from now (to extend the
// time a slow consumer has, or to have it back sooner); m's handle is
// updated to the one the broker now expects.
func (c *PopConsumer) ChangeInvisibleTime(ctx context.Context, m *PoppedMessage, d time.Duration) error {
	h := protocol.ChangeInvisibleTimeRequestHeader{ConsumerGroup: c.opts.Group, Topic: c.opts.Topic, QueueID: int32(m.Queue.QueueID),
		ExtraInfo: m.ReceiptHandle, Offset: m.QueueOffset, InvisibleTime: d.Milliseconds(), BrokerName: m.Queue.BrokerName}
	resp, err := c.in.rc.Invoke(ctx, m.addr, protocol.NewRequest(protocol.ChangeMessageInvisibleTime, h.Encode(), nil))
	if err != nil {
		return fmt.Errorf("client: change invisible time: %w", err)
	}
	if resp.Code != protocol.Success {
		return fmt.Errorf("client: change invisible time %v@%d: %w", m.Queue, m.QueueOffset, responseError(m.addr, resp))
	}
	var rh protocol.ChangeInvisibleTimeResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return fmt.Errorf("client: change invisible time answer: %w", err)
	}
	f := strings.Split(m.ReceiptHandle, " ")
	if len(f) < 3 {
		return fmt.Errorf("client: malformed receipt handle %q", m.ReceiptHandle)
	}
	f[1], f[2] = strconv.FormatInt(rh.PopTime, 10), strconv.FormatInt(rh.InvisibleTime, 10)
	m.ReceiptHandle = strings.Join(f, " ")
	return nil
}

// Close closes the connections.
func (c *PopConsumer) Close() error {
	c.in.close()
	return nil
}
