package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// PullStatus is what a pull found (RocketMQ's PullStatus).
type PullStatus int

const (
	// PullFound: messages (possibly none left after tag filtering).
	PullFound PullStatus = iota
	// PullNoNewMessage: nothing at or after the offset (yet).
	PullNoNewMessage
	// PullNoMatchedMessage: messages there, none matching the expression;
	// continue from NextOffset.
	PullNoMatchedMessage
	// PullOffsetIllegal: the offset is outside the queue; continue from
	// NextOffset (the broker's correction).
	PullOffsetIllegal
)

func (s PullStatus) String() string {
	switch s {
	case PullFound:
		return "FOUND"
	case PullNoNewMessage:
		return "NO_NEW_MSG"
	case PullNoMatchedMessage:
		return "NO_MATCHED_MSG"
	case PullOffsetIllegal:
		return "OFFSET_ILLEGAL"
	}
	return fmt.Sprintf("PullStatus(%d)", int(s))
}

// PullResult is one pull's answer.
type PullResult struct {
	Status PullStatus
	// NextOffset is where the next pull of the queue starts.
	NextOffset int64
	// MinOffset and MaxOffset bound the queue as the broker holds it.
	MinOffset, MaxOffset int64
	// Messages are the messages found that match the expression, in
	// queue order (nil with PullOptions.Records).
	Messages []*MessageExt
	// Records are the same messages read in place, with
	// PullOptions.Records (nil otherwise).
	Records []Record
	// Bytes is the size of the stored records received (before tag
	// filtering), for flow control.
	Bytes int
	// Remark is the broker's word on an answer other than FOUND, e.g.
	// which corrupt record an OFFSET_ILLEGAL moved the queue past.
	Remark string
	// Refused, when set, is a corrupt record the client refused in the
	// broker's first answer (sent from its files, unchecked): this result
	// is the answer to the same pull asked again with the broker's check
	// (the records before it, or the queue moved past it). The record
	// itself is never delivered.
	Refused *CorruptMessageError
}

// PullOptions shape one pull.
type PullOptions struct {
	// MaxMessages is the most messages returned (default 32, RocketMQ's
	// pullBatchSize; the broker caps it).
	MaxMessages int
	// Expression selects messages by tag: "*" (default) or "TagA || TagB";
	// with SQL92, an SQL92 selector the broker evaluates against each
	// message's properties ("a > 5 AND TAGS IN ('x')"; the broker needs
	// enablePropertyFilter).
	Expression string
	// SQL92 makes Expression an SQL92 selector (RocketMQ's
	// ExpressionType SQL92). Default false: a tag expression.
	SQL92 bool
	// Wait is how long the broker may hold a pull that finds nothing,
	// answering as soon as a message arrives (long polling). 0: answer at
	// once.
	Wait time.Duration
	// BrokerAddr, if set, sends the pull to this broker address rather
	// than to the one the route and the last answer's suggestion pick:
	// a slave, say, to read its copy of the queue while its master runs
	// or is gone. The answer's suggestion is then ignored, and no commit
	// rides on the pull.
	BrokerAddr string
	// Records answers with PullResult.Records, views of the stored
	// records decoded field by field when read, instead of Messages: no
	// per-message allocation (see Record).
	Records bool
}

// pull reads q from offset for group.
func (in *instance) pull(ctx context.Context, group string, q MessageQueue, offset int64, o PullOptions, f tagFilter, commit int64) (*PullResult, error) {
	type result struct {
		res *PullResult
		err error
	}
	ch := make(chan result, 1)
	in.pullAsync(ctx, group, q, offset, o, f, commit, func(res *PullResult, err error) { ch <- result{res, err} })
	r := <-ch
	return r.res, r.err
}

// pullAsync is pull with a callback: done runs exactly once, on the
// connection's reader goroutine when the answer arrives (so it must not
// block), or on another goroutine (possibly this one, before pullAsync
// returns) with an error. The push consumer chains its next pull from
// done, saving a goroutine hand-off per pull.
func (in *instance) pullAsync(ctx context.Context, group string, q MessageQueue, offset int64, o PullOptions, f tagFilter, commit int64,
	done func(*PullResult, error)) {
	if o.MaxMessages <= 0 {
		o.MaxMessages = 32
	}
	if o.Expression == "" {
		o.Expression = protocol.SubAll
	}
	addr, slave, err := o.BrokerAddr, true, error(nil)
	if addr == "" {
		addr, slave, err = in.pullAddr(ctx, q)
	}
	if err != nil {
		done(nil, err)
		return
	}
	h := protocol.PullMessageRequestHeader{
		ConsumerGroup: group, Topic: q.Topic, QueueID: int32(q.QueueID), QueueOffset: offset,
		// A slave ignores a pull's commit (RocketMQ's clients clear the flag for one).
		MaxMsgNums: int32(o.MaxMessages), SysFlag: protocol.BuildPullSysFlag(commit >= 0 && !slave, o.Wait > 0, true, false),
		CommitOffset: max(commit, 0), SuspendTimeoutMillis: o.Wait.Milliseconds(), Subscription: o.Expression,
		SubVersion: 0, ExpressionType: protocol.ExpressionTag, BrokerName: q.BrokerName,
		ClientChecksCRC: !in.opts.SkipCRCCheck,
	}
	if o.SQL92 {
		h.ExpressionType, f = protocol.ExpressionSQL92, tagFilter{all: true}
	}
	verify := !in.opts.SkipCRCCheck
	var try func(h protocol.PullMessageRequestHeader, refused *CorruptMessageError)
	try = func(h protocol.PullMessageRequestHeader, refused *CorruptMessageError) {
		ctx, cancel := ctx, context.CancelFunc(func() {})
		if _, ok := ctx.Deadline(); !ok {
			ctx, cancel = context.WithTimeout(ctx, o.Wait+in.opts.RequestTimeout)
		}
		in.rc.InvokeAsync(ctx, addr, protocol.NewRequest(protocol.PullMessage, h.Encode(), nil), func(resp *protocol.Command, err error) {
			cancel()
			if err != nil {
				done(nil, fmt.Errorf("client: pull %v@%d: %w", q, offset, err))
				return
			}
			res, suggest, err := pullResult(resp, addr, q, offset, f, verify, o.Records)
			if ce := (*CorruptMessageError)(nil); refused == nil && h.ClientChecksCRC && errors.As(err, &ce) {
				// Sent from the files, unread: ask again with the broker's
				// check, which quarantines the record, repairs it from a
				// peer replica or moves the queue past it, as for any
				// client that does not check.
				in.opts.Logger.Warn("client: refused a corrupt message; pulling again with the broker's check", "err", ce)
				h.ClientChecksCRC, h.AskBrokerCheck = false, true
				try(h, ce)
				return
			}
			if res != nil {
				res.Refused = refused
			}
			if err == nil && o.BrokerAddr == "" {
				in.notePullFrom(q, suggest)
			}
			done(res, err)
		})
	}
	try(h, nil)
}

// pullResult reads a PULL_MESSAGE answer; suggest is the broker id it
// says the queue's next pull should go to.
func pullResult(resp *protocol.Command, addr string, q MessageQueue, offset int64, f tagFilter, verify, records bool) (res *PullResult, suggest int64, err error) {
	var status PullStatus
	switch resp.Code {
	case protocol.Success:
		status = PullFound
	case protocol.PullNotFound:
		status = PullNoNewMessage
	case protocol.PullRetryImmediately:
		status = PullNoMatchedMessage
	case protocol.PullOffsetMoved:
		status = PullOffsetIllegal
	default:
		return nil, 0, fmt.Errorf("client: pull %v@%d: %w", q, offset, responseError(addr, resp))
	}
	var rh protocol.PullMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return nil, 0, fmt.Errorf("client: pull answer from %s: %w", addr, err)
	}
	res = &PullResult{Status: status, NextOffset: rh.NextBeginOffset, MinOffset: rh.MinOffset, MaxOffset: rh.MaxOffset}
	if status != PullFound {
		res.Remark = resp.Remark
		return res, rh.SuggestWhichBrokerID, nil
	}
	res.Bytes = len(resp.Body)
	if records {
		recs, err := decodeRecords(resp.Body, q, offset, decodeOptions{brokerName: q.BrokerName, verify: verify, pullOffset: offset})
		if err != nil {
			return nil, 0, err
		}
		res.Records = recs[:0]
		for _, r := range recs {
			if f.all || f.match(r.Tags()) {
				res.Records = append(res.Records, r)
			}
		}
		return res, rh.SuggestWhichBrokerID, nil
	}
	msgs, err := decodeAnswer(resp.Body, decodeOptions{brokerName: q.BrokerName, verify: verify, pullOffset: offset})
	if ce := (*CorruptMessageError)(nil); errors.As(err, &ce) {
		ce.Topic, ce.QueueID = q.Topic, q.QueueID // what was asked for: the record's own fields may be what is corrupt
	}
	if err != nil {
		return nil, 0, err
	}
	if err := checkDirected(msgs, q, offset); err != nil {
		return nil, 0, err
	}
	res.Messages = msgs[:0]
	for _, m := range msgs {
		if f.match(m.Tags) {
			m.Queue = q
			res.Messages = append(res.Messages, m)
		}
	}
	return res, rh.SuggestWhichBrokerID, nil
}

// ErrMisdirected is matched by a *CorruptMessageError for a record that
// does not belong where its answer put it: another topic or queue, or an
// offset before the pull's or out of order.
var ErrMisdirected = errors.New("client: record does not belong to the pulled queue")

// checkDirected checks that every record of a pull answer for q from
// offset belongs there: q's topic and queue, offsets from offset up,
// strictly rising. A record that does not is refused like a corrupt one
// (a broker bug or a damaged header whose CRC still holds must not hand
// the application another queue's message under this queue's offsets).
func checkDirected(msgs []*MessageExt, q MessageQueue, offset int64) error {
	next := offset
	for _, m := range msgs {
		if err := misdirected(q, offset, next, m.Topic, m.Queue.QueueID, m.QueueOffset); err != nil {
			return err
		}
		next = m.QueueOffset + 1
	}
	return nil
}

// misdirected says whether a record of topic, queue and queue offset
// qoff may come next (at next or later) in an answer to a pull of q from
// offset: nil, or the CorruptMessageError that refuses it.
func misdirected(q MessageQueue, offset, next int64, topic string, queue int, qoff int64) error {
	if topic == q.Topic && queue == q.QueueID && qoff >= next {
		return nil
	}
	return &CorruptMessageError{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID,
		QueueOffset: qoff, PullOffset: offset,
		Err: fmt.Errorf("%w: topic %s queue %d offset %d, expected queue %d at offset %d or later",
			ErrMisdirected, topic, queue, qoff, q.QueueID, next)}
}

// PullConsumerOptions configure a PullConsumer.
type PullConsumerOptions struct {
	ClientOptions
	// Group is the consumer group offsets are kept for. Required.
	Group string
	// OffsetStore keeps committed offsets (default: on the brokers).
	OffsetStore OffsetStore
}

// EnsureDefaults fills zero fields with their defaults.
func (o *PullConsumerOptions) EnsureDefaults() { o.ClientOptions.EnsureDefaults() }

// Validate reports every invalid field at once.
func (o *PullConsumerOptions) Validate() error {
	err := o.ClientOptions.Validate()
	if o.Group == "" {
		err = joinErr(err, fmt.Errorf("Group: empty"))
	}
	return err
}

// String renders the settings stably.
func (o PullConsumerOptions) String() string {
	return fmt.Sprintf("%s group=%s offset-store=%T", o.ClientOptions.String(), o.Group, o.OffsetStore)
}

// PullConsumer reads queues at offsets the caller chooses: the building
// block for custom consumption. Safe for concurrent use (pulls of
// different queues may run at once).
type PullConsumer struct {
	opts  PullConsumerOptions
	in    *instance
	store OffsetStore
}

// NewPullConsumer returns a PullConsumer; it connects on the first call.
func NewPullConsumer(opts PullConsumerOptions) (*PullConsumer, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("client: pull consumer options: %w", err)
	}
	c := &PullConsumer{opts: opts, in: newInstance(opts.ClientOptions, nil)}
	c.store = opts.OffsetStore
	if c.store == nil {
		c.store = &brokerOffsetStore{in: c.in, group: opts.Group}
	}
	c.in.every(opts.RouteRefresh, false, c.in.refreshRoutes)
	return c, nil
}

// Queues returns topic's readable queues, sorted.
func (c *PullConsumer) Queues(ctx context.Context, topic string) ([]MessageQueue, error) {
	r, err := c.in.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	if len(r.read) == 0 {
		return nil, fmt.Errorf("%w: %s has no readable queue", ErrNoRoute, topic)
	}
	return append([]MessageQueue(nil), r.read...), nil
}

// Pull reads q from offset. Messages not matching o.Expression are
// dropped from the result (the broker filters by tag hash; this checks
// the tag itself).
func (c *PullConsumer) Pull(ctx context.Context, q MessageQueue, offset int64, o PullOptions) (*PullResult, error) {
	return c.in.pull(ctx, c.opts.Group, q, offset, o, parseTagFilter(o.Expression), -1)
}

// MinOffset returns q's first offset still stored.
func (c *PullConsumer) MinOffset(ctx context.Context, q MessageQueue) (int64, error) {
	return c.in.minOffset(ctx, q)
}

// MaxOffset returns the offset after q's last message.
func (c *PullConsumer) MaxOffset(ctx context.Context, q MessageQueue) (int64, error) {
	return c.in.maxOffset(ctx, q)
}

// OffsetAt returns q's first offset stored at or after t.
func (c *PullConsumer) OffsetAt(ctx context.Context, q MessageQueue, t time.Time) (int64, error) {
	return c.in.searchOffset(ctx, q, t)
}

// Committed returns the group's committed offset of q (ErrNoOffset if none).
func (c *PullConsumer) Committed(ctx context.Context, q MessageQueue) (int64, error) {
	return c.store.Read(ctx, q)
}

// Commit stores the group's offsets (the next offset to read per queue).
func (c *PullConsumer) Commit(ctx context.Context, offsets map[MessageQueue]int64) error {
	return c.store.Commit(ctx, offsets)
}

// Close closes the connections.
func (c *PullConsumer) Close() error {
	c.in.close()
	return nil
}

func joinErr(a, b error) error {
	if a == nil {
		return b
	}
	return fmt.Errorf("%w\n%w", a, b)
}
