package broker

import (
	"errors"
	"fmt"
	"time"

	"github.com/samsamq/samsa/internal/sql92"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// Pull limits: a pull returns at most maxPullMsgs records and, past the
// first record, at most maxPullBytes bytes.
const (
	maxPullMsgs  = 1024
	maxPullBytes = 1 << 20
)

// pullCtx is what a held pull keeps to be answered later.
type pullCtx struct {
	c      *conn
	req    *protocol.Command
	h      *protocol.PullMessageRequestHeader
	filter *tagFilter
	sql    *sql92.Expr // an SQL92 subscription's filter (filter_sql.go)
}

// handlePull answers PULL_MESSAGE (11) with RocketMQ's
// PullMessageProcessor semantics. The body of a SUCCESS is the stored
// records concatenated as they lie in the CommitLog (written with writev,
// never copied together). A pull that finds nothing and carries the suspend
// flag is held (long-poll) until a message for its queue is dispatched or
// its hold ends. The answer suggests where the queue's next pull should go
// (pull_route.go); a slave serves pulls from its own store.
func (b *Broker) handlePull(c *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.PullMessageRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	tc, ok := b.topics.get(h.Topic)
	if !ok {
		return protocol.NewResponse(req, protocol.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", h.Topic))
	}
	if tc.Perm&PermRead == 0 {
		return protocol.NewResponse(req, protocol.NoPermission, fmt.Sprintf("the topic[%s] pulling message is forbidden", h.Topic))
	}
	if h.QueueID < 0 || int(h.QueueID) >= tc.ReadQueueNums {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.QueueID, h.Topic, tc.ReadQueueNums, c.addr))
	}
	if b.popRefusesPull(h.ConsumerGroup, h.Topic) {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf(
			"group %s consumes %s by POP; one group cannot also pull it (use another group)", h.ConsumerGroup, h.Topic))
	}
	var filter *tagFilter
	var sub Subscription
	if h.HasFlag(protocol.PullFlagSubscription) {
		sub = Subscription{Topic: h.Topic, SubString: h.Subscription, ExpType: h.ExpressionType}
		f, err := parseSubscription(h.ExpressionType, h.Subscription)
		if errors.Is(err, ErrUnsupportedFilter) && !isSQL92(h.ExpressionType) {
			return protocol.NewResponse(req, protocol.SystemError, "The broker does not support consumer to filter message by "+h.ExpressionType)
		}
		filter = f
	} else {
		var ok bool
		sub, ok = b.clients.subscription(h.ConsumerGroup, h.Topic)
		if !ok {
			return protocol.NewResponse(req, protocol.SubscriptionNotExist,
				fmt.Sprintf("the consumer's subscription not exist: group %s has sent no heartbeat subscribing to %s", h.ConsumerGroup, h.Topic))
		}
		if sub.SubVersion < h.SubVersion {
			return protocol.NewResponse(req, protocol.SubscriptionNotLatest, "the consumer's subscription not latest")
		}
		if sub.ExpType != "" && sub.ExpType != ExpTag && !isSQL92(sub.ExpType) {
			return protocol.NewResponse(req, protocol.SystemError, "The broker does not support consumer to filter message by "+sub.ExpType)
		}
		filter = sub.Tags
	}
	sql, refuse := b.sqlFilterOf(req, sub, h.HasFlag(protocol.PullFlagSubscription))
	if refuse != nil {
		return refuse
	}
	pc := &pullCtx{c: c, req: req, h: h, filter: filter, sql: sql}
	if h.HasFlag(protocol.PullFlagCommitOffset) && !b.repl.isSlave() {
		// A slave ignores the flag (RocketMQ's PullMessageProcessor): a
		// pull's commit is a by-product, UPDATE_CONSUMER_OFFSET the
		// commit a slave keeps for its master.
		code, remark := b.offReq.checkOffsetCommit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
		if code == protocol.Success {
			if err := b.offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset); err != nil {
				code, remark = protocol.SystemError, err.Error()
			}
		}
		if code != protocol.Success { // the pull is answered; only its by-product commit is dropped
			b.log.Warn("broker: a pull's offset commit refused", "group", h.ConsumerGroup, "topic", h.Topic,
				"queue", h.QueueID, "offset", h.CommitOffset, "reason", remark)
		}
	}
	suspend := h.HasFlag(protocol.PullFlagSuspend)
	f, notFound := b.pullOnce(pc, suspend)
	if notFound && suspend && b.holdPull(pc) {
		return held
	}
	if notFound && suspend { // the long poll is closed: answer at once
		f, _ = b.pullOnce(pc, false)
	}
	b.metrics.req.result(req.Code, f.cmd.Code)
	c.send(f)
	return nil
}

// holdPull suspends pc; false when the long poll is closed.
func (b *Broker) holdPull(pc *pullCtx) bool {
	hold := time.Duration(pc.h.SuspendTimeoutMillis) * time.Millisecond
	short := !b.cfg.LongPollingEnable
	if short {
		// RocketMQ's short polling: hold shortPollingTimeMills, woken by
		// nothing but the timer.
		hold = b.cfg.ShortPollingTime
	}
	// A slave's pull below what it holds (slaveOutOfRange) waits out its
	// hold: arrivals would wake it at once, and nothing there will match.
	timerOnly := short || b.repl.isSlave() && pc.h.QueueOffset < b.store.MinQueueOffset(pc.h.Topic, pc.h.QueueID)
	hold = min(max(hold, 0), b.cfg.LongPollingMaxHold)
	p := &heldPull{key: QueueKey{pc.h.Topic, pc.h.QueueID}, offset: pc.h.QueueOffset,
		deadline: b.cfg.Clock().Add(hold), timerOnly: timerOnly, req: pc}
	if !b.poll.hold(p) {
		return false
	}
	if !timerOnly {
		b.poll.recheck(p, b.store.MaxQueueOffset(pc.h.Topic, pc.h.QueueID))
	}
	return true
}

// answerHeld answers a pull leaving the long poll: it pulls again (once,
// without suspending) and queues whatever that finds for the writer. It
// never blocks (the long poll calls it on the store's dispatcher): when the
// connection's write queue is full, a goroutine waits for room.
func (b *Broker) answerHeld(p *heldPull, expired bool) {
	pc := p.req.(*pullCtx)
	select {
	case <-pc.c.closed:
		pc.c.reqDone()
		return // the client went away while its pull was held
	default:
	}
	if !expired && pc.sql != nil && b.reholdSQL(p) {
		return
	}
	f, _ := b.pullOnce(pc, false)
	b.metrics.req.result(pc.req.Code, f.cmd.Code)
	if pc.c.trySend(f) {
		pc.c.reqDone()
		return
	}
	go func() {
		defer pc.c.reqDone()
		pc.c.send(f)
	}()
}

// pullOnce reads from the store and builds the answer; notFound reports a
// PULL_NOT_FOUND (the case a suspending pull is held on). With holding set
// a PULL_NOT_FOUND builds no answer (the pull is about to be held, and
// answered by a later pullOnce): three pulls in four at 10k msg/s.
func (b *Broker) pullOnce(pc *pullCtx, holding bool) (f outFrame, notFound bool) {
	h, req := pc.h, pc.req
	maxMsgs := int(min(max(h.MaxMsgNums, 1), maxPullMsgs))
	maxBytes := maxPullBytes
	if h.HasMaxMsgBytes && h.MaxMsgBytes > 0 {
		maxBytes = min(int(h.MaxMsgBytes), maxPullBytes)
	}
	res, err := b.getMessages(pc, maxMsgs, maxBytes)
	if ce := (*storage.CorruptRecordError)(nil); errors.As(err, &ce) {
		return b.corruptAnswer(pc, res, ce), false
	}
	if errors.Is(err, storage.ErrCutDuringRead) { // a cut or a repair ran under the read: nothing is wrong
		return outFrame{cmd: protocol.NewResponse(req, protocol.PullRetryImmediately, err.Error())}, false
	}
	if errors.Is(err, storage.ErrResourceBusy) {
		return outFrame{cmd: protocol.NewResponse(req, protocol.SystemBusy, busyRemark(err))}, false
	}
	if err != nil {
		b.noteReadError(h.Topic, h.QueueID, h.QueueOffset, err)
		return outFrame{cmd: protocol.NewResponse(req, protocol.SystemError, "store getMessage failed: "+err.Error())}, false
	}
	rh := protocol.PullMessageResponseHeader{SuggestWhichBrokerID: b.suggestBroker(h.ConsumerGroup, &res),
		NextBeginOffset: res.NextOffset, MinOffset: res.MinOffset, MaxOffset: res.MaxOffset}
	code := b.slaveOutOfRange(pullCode(res.Status, h.QueueOffset), h, &rh)
	if code != protocol.Success {
		res.Release() // answered without the records
	}
	if holding && code == protocol.PullNotFound {
		return outFrame{}, true
	}
	if holding && sqlReadToTheEnd(pc, &res) {
		res.Release()
		return outFrame{}, true
	}
	resp := respond(req, code, res.Status.String(), rh.Encode())
	if code == protocol.PullOffsetMoved {
		b.log.Info("broker: pull offset moved", "group", h.ConsumerGroup, "topic", h.Topic, "queue", h.QueueID,
			"requested", h.QueueOffset, "next", res.NextOffset, "min", res.MinOffset, "max", res.MaxOffset)
	}
	if code != protocol.Success {
		return outFrame{cmd: resp}, code == protocol.PullNotFound
	}
	b.stats.get(h.Topic, len(res.QueueOffsets), res.Bytes)
	if res.Files.Pieces != nil {
		return outFrame{cmd: resp, files: res.Files}, false
	}
	parts := [][]byte{res.Whole}
	if res.Whole == nil { // filtered by SQL92: the records kept, each where it lies
		parts = res.Records
	}
	return outFrame{cmd: resp, parts: parts, buf: res.Buffer}, false
}

// getMessages reads pc's queue for its pull: as the store finds it
// (with the tag filter), or through filterSQL.
func (b *Broker) getMessages(pc *pullCtx, maxMsgs, maxBytes int) (storage.GetResult, error) {
	h := pc.h
	if pc.sql == nil && zeroCopyPull(&b.cfg, pc) {
		// the answer's frame carries the files; the writer sends and closes them
		return b.store.GetMessagesFile(h.Topic, h.QueueID, h.QueueOffset, maxMsgs, maxBytes, pc.filter.fn())
	}
	if pc.sql == nil {
		// pooled: pullOnce hands the buffer to the answer's frame, and the
		// writer releases it once sent
		return b.store.GetMessagesPooled(h.Topic, h.QueueID, h.QueueOffset, maxMsgs, maxBytes, pc.filter.fn())
	}
	return b.filterSQL(pc.sql, h.Topic, h.QueueID, h.QueueOffset, maxMsgs, maxBytes)
}

// pullCode maps a store status to RocketMQ's pull response code.
func pullCode(s storage.GetStatus, requested int64) int32 {
	switch s {
	case storage.Found:
		return protocol.Success
	case storage.MessageWasRemoving, storage.NoMatchedMessage:
		return protocol.PullRetryImmediately
	case storage.NoMatchedLogicQueue, storage.NoMessageInQueue:
		if requested != 0 {
			return protocol.PullOffsetMoved
		}
		return protocol.PullNotFound
	case storage.OffsetFoundNull, storage.OffsetOverflowOne:
		return protocol.PullNotFound
	case storage.OffsetOverflowBadly, storage.OffsetTooSmall:
		return protocol.PullOffsetMoved
	}
	return protocol.PullRetryImmediately
}
