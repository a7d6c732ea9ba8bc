package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// Producer sends messages to the brokers of their topics, which it finds
// through the name servers. Safe for concurrent use; one Producer is
// meant to serve a whole process.
//
// Goroutines: a route refresher (every RouteRefresh) and a heartbeat
// (every HeartbeatInterval) run until Close, besides the connections'.
type Producer struct {
	opts   ProducerOptions
	in     *instance
	ids    *idGen
	faults *brokerFaults
	stalls stalledBrokers // addresses whose last send timed out (stalled.go)
	acc    *accumulator   // nil unless batching

	inflight chan struct{} // a token per unanswered asynchronous message
	pending  waitCount
	closed   atomic.Bool
	// realClock: opts.Clock is time.Now, so one reading serves both the
	// born timestamp and the send's deadline.
	realClock bool
}

// NewProducer checks opts (after EnsureDefaults) and returns a running
// Producer. It connects to nothing until the first send.
func NewProducer(opts ProducerOptions) (*Producer, error) { return newProducer(opts, nil) }

// newProducer is NewProducer with a handler of the brokers' requests
// (a transaction producer's check-backs).
func newProducer(opts ProducerOptions, onRequest func(addr string, req *protocol.Command) *protocol.Command) (*Producer, error) {
	realClock := opts.Clock == nil
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("client: producer options: %w", err)
	}
	p := &Producer{
		opts:      opts,
		in:        newInstance(opts.ClientOptions, onRequest),
		ids:       newIDGen(opts.Clock),
		faults:    newBrokerFaults(opts.Clock),
		inflight:  make(chan struct{}, opts.MaxInFlight),
		realClock: realClock,
	}
	if opts.Batch.Enabled() {
		p.acc = newAccumulator(opts.Batch.MaxMessages, opts.Batch.MaxBytes, opts.Batch.Linger, p.flushBatch)
	}
	p.in.every(opts.RouteRefresh, false, p.in.refreshRoutes)
	p.in.every(opts.HeartbeatInterval, false, p.heartbeat)
	return p, nil
}

// Options returns the producer's settings, defaults filled in.
func (p *Producer) Options() ProducerOptions { return p.opts }

// ClientID returns the id the producer announces to brokers.
func (p *Producer) ClientID() string { return p.in.clientID }

func (p *Producer) heartbeat(ctx context.Context) {
	p.in.heartbeat(ctx, &protocol.HeartbeatData{ProducerDataSet: []protocol.ProducerData{{GroupName: p.opts.Group}}}, true)
}

// sendContext gives ctx the SendTimeout when it has no deadline.
func (p *Producer) sendContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, p.opts.SendTimeout)
}

// writeRoute returns the writable queues of topic.
func (p *Producer) writeRoute(ctx context.Context, topic string) (*topicRoute, error) {
	r, err := p.in.route(ctx, topic)
	if errors.Is(err, ErrNoRoute) && p.opts.AutoCreateTopic {
		r, err = p.in.autoRoute(ctx, topic, p.opts.AutoCreateQueues)
	}
	if err != nil {
		return nil, err
	}
	if len(r.write) == 0 {
		// The cached route emptied (its brokers left the name servers):
		// look again now, so a broker that comes back is used as soon as
		// it registers, not at the next RouteRefresh.
		p.in.refreshSoon(topic)
		return nil, fmt.Errorf("%w: %s has no writable queue", ErrNoRoute, topic)
	}
	return r, nil
}

// keyed reports whether m must keep to its key's queue.
func (p *Producer) keyed(m *Message) bool { return m.ShardingKey != "" && p.opts.Balancer.Keyed() }

// pick chooses m's queue; exclude is the broker of a failed attempt.
func (p *Producer) pick(m *Message, r *topicRoute, exclude string) MessageQueue {
	qs := r.write
	if !p.keyed(m) {
		if !p.opts.DisableFaultAvoidance {
			qs = p.faults.filter(qs, exclude)
		} else if exclude != "" {
			qs = excludeBroker(qs, exclude)
		}
	}
	return qs[p.opts.Balancer.Select(m.ShardingKey, qs)]
}

func excludeBroker(qs []MessageQueue, broker string) []MessageQueue {
	out := make([]MessageQueue, 0, len(qs))
	for _, q := range qs {
		if q.BrokerName != broker {
			out = append(out, q)
		}
	}
	if len(out) == 0 {
		return qs
	}
	return out
}

// note records an attempt's outcome for fault avoidance.
func (p *Producer) note(broker string, start time.Time, err error) {
	if p.opts.DisableFaultAvoidance {
		return
	}
	switch {
	case err == nil || errors.Is(err, ErrFlushDiskTimeout) || errors.Is(err, ErrFlushSlaveTimeout) || errors.Is(err, ErrSlaveNotAvailable):
		p.faults.record(broker, p.opts.Clock().Sub(start))
	case retriable(err) || errors.Is(err, ErrTimeout):
		p.faults.record(broker, FailureLatency)
	}
}

// uniqID returns m's UNIQ_KEY: the caller's, if set, else a new one.
func (p *Producer) uniqID(m *Message) string { return p.uniqIDAt(m, p.opts.Clock()) }

// uniqIDAt is uniqID with the clock read at now.
func (p *Producer) uniqIDAt(m *Message, now time.Time) string {
	if id := m.Properties[PropertyUniqKey]; id != "" {
		return id
	}
	return p.ids.nextAt(now)
}

// sendRequest makes a send request of code whose header (the one-letter
// form) is encoded typed, without an ext-field map.
func (p *Producer) sendRequest(code int32, topic string, q MessageQueue, sysFlag int32, flag int32, props string, batch bool, body []byte, born time.Time) *protocol.Command {
	h := &protocol.SendMessageRequestHeaderV2{SendMessageRequestHeader: protocol.SendMessageRequestHeader{
		ProducerGroup: p.opts.Group, Topic: topic, DefaultTopic: AutoCreateTopicKey, DefaultTopicQueueNums: int32(p.opts.AutoCreateQueues),
		QueueID: int32(q.QueueID), SysFlag: sysFlag, BornTimestamp: born.UnixMilli(), Flag: flag,
		Properties: props, Batch: batch, BrokerName: q.BrokerName,
	}}
	req := protocol.NewRequest(code, nil, body)
	req.Header = h
	return req
}

// request builds m's SEND_MESSAGE_V2 request to q, born at born.
func (p *Producer) request(m *Message, q MessageQueue, uniq string, born time.Time) *protocol.Command {
	var scratch [192]byte // most properties fit: one allocation, the string
	props := appendProperties(scratch[:0], m, uniq)
	body, sysFlag := m.Body, int32(0)
	if p.opts.CompressOver > 0 && len(body) >= p.opts.CompressOver {
		body, sysFlag = deflate(body), record.FlagCompressed
	}
	return p.sendRequest(protocol.SendMessageV2, m.Topic, q, sysFlag, m.Flag, string(props), false, body, born)
}

// result reads a send's answer.
func result(addr string, q MessageQueue, uniq string, resp *protocol.Command) (*SendResult, error) {
	var status SendStatus
	var err error
	switch resp.Code {
	case protocol.Success:
		status = SendOK
	case protocol.FlushDiskTimeout:
		status, err = SendFlushDiskTimeout, responseError(addr, resp)
	case protocol.FlushSlaveTimeout:
		status, err = SendFlushSlaveTimeout, responseError(addr, resp)
	case protocol.SlaveNotAvailable:
		status, err = SendSlaveNotAvailable, responseError(addr, resp)
	default:
		return nil, responseError(addr, resp)
	}
	var h protocol.SendMessageResponseHeader
	if th, ok := resp.Header.(*protocol.SendMessageResponseHeader); ok {
		h = *th // decoded without a map (remoting's DecodeSendResponseFrame)
	} else if derr := h.Decode(resp.ExtFields); derr != nil {
		return nil, fmt.Errorf("client: send answer from %s: %w", addr, derr)
	}
	res := &SendResult{Status: status, MsgID: uniq, OffsetMsgID: h.MsgID, QueueOffset: h.QueueOffset, TransactionID: h.TransactionID,
		Queue: MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: int(h.QueueID)}}
	return res, err
}

// Send sends m and waits for the broker's answer, trying other brokers
// (Retries) when one fails. ctx bounds all attempts (SendTimeout when it
// has no deadline). With a flush or replication timeout (ErrFlushDiskTimeout,
// ...) the message is stored: both the result and the error are returned.
func (p *Producer) Send(ctx context.Context, m *Message) (*SendResult, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if err := validateMessage(m, p.opts.MaxBodySize); err != nil {
		return nil, err
	}
	ctx, cancel := p.sendContext(ctx)
	defer cancel()
	r, err := p.writeRoute(ctx, m.Topic)
	if err != nil {
		return nil, err
	}
	uniq := p.uniqID(m)
	keyed := p.keyed(m)
	var errs []error
	var q MessageQueue
	exclude := ""
	for attempt := 0; attempt <= p.opts.retries(); attempt++ {
		if attempt == 0 || !keyed {
			q = p.pick(m, r, exclude)
		}
		addr, nr, err := p.sendTarget(ctx, m.Topic, r, q)
		if err != nil {
			return nil, errors.Join(append(errs, err)...)
		}
		r = nr
		start := p.opts.Clock()
		resp, err := p.in.rc.Invoke(ctx, addr, p.request(m, q, uniq, start))
		p.noteAnswer(addr, err)
		var res *SendResult
		if err == nil {
			res, err = result(addr, q, uniq, resp)
		}
		p.note(q.BrokerName, start, err)
		if err == nil || !retriable(err) {
			if errors.Is(err, ErrTimeout) {
				// No answer in time: the outcome is unknown, so no retry,
				// but the broker may be gone or paused and replaced (a
				// fail-over): look the route up now, not at the next
				// RouteRefresh (30 s).
				p.in.refreshSoon(m.Topic)
			}
			if err != nil && len(errs) > 0 {
				err = fmt.Errorf("%w (after %d failed attempts: %w)", err, len(errs), errors.Join(errs...))
			}
			return res, err
		}
		errs = append(errs, fmt.Errorf("attempt %d to %s: %w", attempt+1, q.BrokerName, err))
		exclude = q.BrokerName
		p.in.refreshSoon(m.Topic)
		if ctx.Err() != nil {
			break
		}
		if nr, err := p.writeRoute(ctx, m.Topic); err == nil {
			r = nr
		}
	}
	return nil, fmt.Errorf("client: send to %s failed: %w", m.Topic, errors.Join(errs...))
}

// SendOneway sends m without waiting for an answer: fastest, and the
// message may be lost unseen. It returns once the request is queued on
// the connection.
func (p *Producer) SendOneway(ctx context.Context, m *Message) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if err := validateMessage(m, p.opts.MaxBodySize); err != nil {
		return err
	}
	ctx, cancel := p.sendContext(ctx)
	defer cancel()
	r, err := p.writeRoute(ctx, m.Topic)
	if err != nil {
		return err
	}
	q := p.pick(m, r, "")
	return p.in.rc.InvokeOneway(ctx, r.masterAddr(q.BrokerName), p.request(m, q, p.uniqID(m), p.opts.Clock()))
}

// batchRequest builds one SEND_BATCH_MESSAGE request to q.
func (p *Producer) batchRequest(q MessageQueue, sends []pendingSend) (*protocol.Command, error) {
	body, _, err := encodeBatchEntries(sends)
	if err != nil {
		return nil, err
	}
	return p.sendRequest(protocol.SendBatchMessage, q.Topic, q, 0, 0, "", true, body, p.opts.Clock()), nil
}

// batchResults splits a batch's answer into one result per message.
func batchResults(addr string, q MessageQueue, sends []pendingSend, resp *protocol.Command) ([]*SendResult, error) {
	first, err := result(addr, q, "", resp)
	if first == nil {
		return nil, err
	}
	ids := strings.Split(first.OffsetMsgID, ",")
	out := make([]*SendResult, len(sends))
	for i, s := range sends {
		r := *first
		r.MsgID = s.uniq
		r.QueueOffset = first.QueueOffset + int64(i)
		if len(ids) == len(sends) {
			r.OffsetMsgID = ids[i]
		}
		out[i] = &r
	}
	return out, err
}

// SendBatch sends msgs, all of one topic, to one queue in SEND_BATCH_MESSAGE
// requests and returns a result per message. The queue is chosen for the
// first message's ShardingKey. Retries as Send does.
//
// A batch larger than MaxBodySize (the broker refuses a batch body over
// its maxMessageSize, 4 MiB by default) or of more than MaxBatchMessages
// messages is split into several requests, sent one after another to the
// same queue (splitBatch). Each request is stored whole or not at all, but
// the batch as a whole is not atomic: when a later request fails, the
// messages of the earlier ones are stored, and the error says which
// messages were not sent (their results are nil). The order of the
// messages in the queue is the order of msgs as long as no request is
// retried on another queue (a keyed batch never is).
func (p *Producer) SendBatch(ctx context.Context, msgs []*Message) ([]*SendResult, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrMessageIllegal)
	}
	sends := make([]pendingSend, len(msgs))
	for i, m := range msgs {
		if err := validateMessage(m, p.opts.MaxBodySize); err != nil {
			return nil, fmt.Errorf("batch message %d: %w", i, err)
		}
		if m.Topic != msgs[0].Topic {
			return nil, fmt.Errorf("%w: batch mixes topics %s and %s", ErrMessageIllegal, msgs[0].Topic, m.Topic)
		}
		if m.DelayLevel > 0 {
			return nil, fmt.Errorf("%w: batch message %d has a delay level", ErrMessageIllegal, i)
		}
		sends[i] = pendingSend{msg: m, uniq: p.uniqID(m), size: m.size()}
	}
	body, ends, err := encodeBatchEntries(sends)
	if err != nil {
		return nil, err
	}
	ctx, cancel := p.sendContext(ctx)
	defer cancel()
	r, err := p.writeRoute(ctx, msgs[0].Topic)
	if err != nil {
		return nil, err
	}
	bs := batchSender{p: p, r: r, first: msgs[0], keyed: p.keyed(msgs[0])}
	bs.q = p.pick(msgs[0], r, "")
	out := make([]*SendResult, len(msgs))
	from := 0
	for _, to := range splitBatch(ends, p.opts.MaxBodySize, MaxBatchMessages) {
		start := 0
		if from > 0 {
			start = ends[from-1]
		}
		res, err := bs.send(ctx, sends[from:to], body[start:ends[to-1]])
		if err != nil {
			if from > 0 {
				err = fmt.Errorf("messages %d to %d of %d not sent, the %d before them were: %w", from, len(msgs)-1, len(msgs), from, err)
			}
			return out, err
		}
		copy(out[from:], res)
		from = to
	}
	return out, nil
}

// MaxBatchMessages is the most messages SendBatch puts in one request:
// the broker's answer carries a 33-byte msgId per message and must fit a
// frame (the broker refuses a batch whose answer would not).
const MaxBatchMessages = 64 << 10

// encodeBatchEntries encodes every message of a batch body back to back;
// ends[i] is where message i ends.
func encodeBatchEntries(sends []pendingSend) (body []byte, ends []int, err error) {
	size := 0
	for _, s := range sends {
		size += len(s.msg.Body) + s.size + 64
	}
	body = make([]byte, 0, size)
	ends = make([]int, len(sends))
	for i, s := range sends {
		if body, err = appendBatchEntry(body, s.msg, s.uniq); err != nil {
			return nil, nil, fmt.Errorf("batch message %d: %w", i, err)
		}
		ends[i] = len(body)
	}
	return body, ends, nil
}

// splitBatch cuts a batch whose messages end at ends into requests of at
// most maxBytes (maxBytes <= 0: no limit) and maxMsgs messages; it returns
// where each request ends (exclusive message indexes). A message larger
// than maxBytes travels alone (and the broker refuses it).
func splitBatch(ends []int, maxBytes, maxMsgs int) []int {
	var cuts []int
	from, start := 0, 0
	for i, end := range ends {
		if i > from && (maxBytes > 0 && end-start > maxBytes || i-from >= maxMsgs) {
			cuts = append(cuts, i)
			from, start = i, ends[i-1]
		}
	}
	return append(cuts, len(ends))
}

// batchSender sends the requests of one SendBatch, keeping the queue of
// the last success for the next request.
type batchSender struct {
	p       *Producer
	r       *topicRoute
	first   *Message
	keyed   bool
	q       MessageQueue
	exclude string
}

// send sends one request of a batch (body: the encoded sends), retrying
// as Send does.
func (bs *batchSender) send(ctx context.Context, sends []pendingSend, body []byte) ([]*SendResult, error) {
	p := bs.p
	var errs []error
	for attempt := 0; attempt <= p.opts.retries(); attempt++ {
		if attempt > 0 && !bs.keyed {
			bs.q = p.pick(bs.first, bs.r, bs.exclude)
		}
		req := p.sendRequest(protocol.SendBatchMessage, bs.q.Topic, bs.q, 0, 0, "", true, body, p.opts.Clock())
		addr, nr, err := p.sendTarget(ctx, bs.first.Topic, bs.r, bs.q)
		if err != nil {
			return nil, errors.Join(append(errs, err)...)
		}
		bs.r = nr
		start := p.opts.Clock()
		resp, err := p.in.rc.Invoke(ctx, addr, req)
		p.noteAnswer(addr, err)
		var res []*SendResult
		if err == nil {
			res, err = batchResults(addr, bs.q, sends, resp)
		}
		p.note(bs.q.BrokerName, start, err)
		if err == nil || !retriable(err) {
			if errors.Is(err, ErrTimeout) {
				p.in.refreshSoon(bs.first.Topic) // as Send: a fail-over may have moved the master
			}
			return res, err
		}
		errs = append(errs, fmt.Errorf("attempt %d to %s: %w", attempt+1, bs.q.BrokerName, err))
		bs.exclude = bs.q.BrokerName
		p.in.refreshSoon(bs.first.Topic)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("client: batch send to %s failed: %w", bs.first.Topic, errors.Join(errs...))
}

// Flush sends every batched message now and waits until every
// asynchronous send has been answered, or ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	if p.acc != nil {
		p.acc.flushAll()
	}
	select {
	case <-p.pending.idle():
		return nil
	case <-ctx.Done():
		return ctxErr(ctx, "flush")
	}
}

// Close flushes (waiting up to SendTimeout for the answers of
// asynchronous sends), tells the brokers the producer is gone and closes
// the connections. Sends after Close fail with ErrClosed.
func (p *Producer) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.SendTimeout)
	defer cancel()
	err := p.Flush(ctx)
	p.in.unregister(ctx, p.opts.Group, "")
	p.in.close()
	return err
}
