package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/samsamq/samsa/broker/pop"
	"github.com/samsamq/samsa/protocol"
)

// handlePop answers POP_MESSAGE (200050) with RocketMQ 5's semantics
// (package pop): the body is the records handed out, back to back as a
// pull's; the header says the pop time, invisible time and the offsets a
// client builds each message's receipt handle from. A pop that finds
// nothing waits up to its pollTime on a goroutine of its own (the request
// stays counted on its connection until answered).
func (b *Broker) handlePop(c *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.PopMessageRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	if r := b.popServed(req); r != nil {
		return r
	}
	tc, ok := b.topics.get(h.Topic)
	if !ok {
		return protocol.NewResponse(req, protocol.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", h.Topic))
	}
	if tc.Perm&PermRead == 0 {
		return protocol.NewResponse(req, protocol.NoPermission, fmt.Sprintf("the topic[%s] peeking message is forbidden", h.Topic))
	}
	if h.QueueID < -1 || int(h.QueueID) >= tc.ReadQueueNums {
		return protocol.NewResponse(req, protocol.InvalidParameter, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.QueueID, h.Topic, tc.ReadQueueNums, c.addr))
	}
	if sub, ok := b.clients.pushOrPull(h.ConsumerGroup, h.Topic); ok {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf(
			"group %s consumes %s by push or pull (a heartbeat subscribes it: %s); one group cannot also consume it by POP",
			h.ConsumerGroup, h.Topic, sub.SubString))
	}
	pr := &pop.Request{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, Queues: int32(tc.ReadQueueNums),
		MaxMsgs: int(h.MaxMsgNums), Invisible: time.Duration(h.InvisibleTime) * time.Millisecond,
		Poll: time.Duration(min(max(h.PollTime, 0), pop.MaxPoll.Milliseconds())) * time.Millisecond, InitMode: h.InitMode,
		Order: h.Order}
	if err := pr.Check(); err != nil {
		return protocol.NewResponse(req, protocol.InvalidParameter, err.Error())
	}
	if r := b.popFilter(req, h, pr); r != nil {
		return r
	}
	if pr.Poll == 0 {
		return b.popAnswer(req, pr, nil)
	}
	return b.answerLater(c, req, func(ctx context.Context) *protocol.Command { return b.popAnswer(req, pr, ctx) })
}

// answerLater holds req (the answer held): answer runs on a goroutine of
// its own with a context that ends when the connection closes, and its
// response is sent when it returns. POP_MESSAGE's and NOTIFICATION's long
// polls.
func (b *Broker) answerLater(c *conn, req *protocol.Command, answer func(context.Context) *protocol.Command) *protocol.Command {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer c.reqDone()
		defer cancel()
		go func() {
			select {
			case <-c.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		resp := answer(ctx)
		b.metrics.req.result(req.Code, resp.Code)
		c.send(outFrame{cmd: resp})
	}()
	return held
}

// popFilter sets pr's filters from the request's expType and exp
// (TAG by default, SQL92 when enablePropertyFilter is on).
func (b *Broker) popFilter(req *protocol.Command, h *protocol.PopMessageRequestHeader, pr *pop.Request) *protocol.Command {
	expType, exp := h.ExpType, h.Exp
	if expType == "" {
		expType = ExpTag
	}
	if exp == "" {
		exp = "*"
	}
	if isSQL92(expType) {
		e, refuse := b.sqlFilterOf(req, Subscription{Topic: h.Topic, SubString: exp, ExpType: expType}, true)
		if refuse != nil {
			return refuse
		}
		pr.Match = e.Match
		return nil
	}
	f, err := parseSubscription(expType, exp)
	if err != nil {
		return protocol.NewResponse(req, protocol.SubscriptionParseFailed, fmt.Sprintf("parse the POP filter %s %q: %v", expType, exp, err))
	}
	if f != nil {
		pr.TagMatch = f.fn()
	}
	return nil
}

// popAnswer pops (ctx nil: without waiting) and builds the answer.
func (b *Broker) popAnswer(req *protocol.Command, pr *pop.Request, ctx context.Context) *protocol.Command {
	if ctx == nil {
		ctx, pr.Poll = context.Background(), 0
	}
	res, err := b.pop.Pop(ctx, pr)
	if err != nil {
		code := protocol.SystemError
		switch {
		case errors.Is(err, pop.ErrBadRequest):
			code = protocol.InvalidParameter
		case errors.Is(err, pop.ErrPollingFull):
			code = protocol.PollingFull
		}
		return protocol.NewResponse(req, code, err.Error())
	}
	rh := protocol.PopMessageResponseHeader{PopTime: res.PopTime, InvisibleTime: res.Invisible, RestNum: res.RestNum,
		StartOffsetInfo: res.StartOffsetInfo, MsgOffsetInfo: res.MsgOffsetInfo, OrderCountInfo: res.OrderCountInfo}
	if len(res.Records) == 0 {
		return respond(req, protocol.PollingTimeout, "no new message", rh.Encode())
	}
	n := 0
	for _, r := range res.Records {
		n += len(r)
	}
	body := make([]byte, 0, n)
	for _, r := range res.Records {
		body = append(body, r...)
	}
	b.stats.get(pr.Topic, len(res.Records), len(body))
	resp := respond(req, protocol.Success, "FOUND", rh.Encode())
	resp.Body = body
	return resp
}

// handleAck answers ACK_MESSAGE (200051).
func (b *Broker) handleAck(c *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.AckMessageRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	if r := b.popHandleCheck(req, h.Topic, h.QueueID); r != nil {
		return r
	}
	err := b.pop.Ack(&pop.Handle{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, Offset: h.Offset, Extra: h.ExtraInfo})
	if err != nil {
		return popError(req, err)
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

// handleChangeInvisibleTime answers CHANGE_MESSAGE_INVISIBLETIME (200053).
func (b *Broker) handleChangeInvisibleTime(c *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.ChangeInvisibleTimeRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	if r := b.popHandleCheck(req, h.Topic, h.QueueID); r != nil {
		return r
	}
	pt, err := b.pop.ChangeInvisible(&pop.Handle{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, Offset: h.Offset,
		Extra: h.ExtraInfo}, h.InvisibleTime)
	if err != nil {
		return popError(req, err)
	}
	rh := protocol.ChangeInvisibleTimeResponseHeader{PopTime: pt, InvisibleTime: h.InvisibleTime}
	return respond(req, protocol.Success, "", rh.Encode())
}

// popServed refuses a POP request where POP is not served: on a slave,
// which has no POP service, and on a controller-mode replica that is not
// the writable master now (it has one, from the pop.wal of its time as
// master, which another master's consumption has left behind).
func (b *Broker) popServed(req *protocol.Command) *protocol.Command {
	if b.pop == nil || b.repl.isSlave() {
		return protocol.NewResponse(req, protocol.SystemError, "POP is served by the master only: this broker is a slave")
	}
	return nil
}

// popHandleCheck checks an ack's or a change's topic and queue.
func (b *Broker) popHandleCheck(req *protocol.Command, topic string, qid int32) *protocol.Command {
	if r := b.popServed(req); r != nil {
		return r
	}
	tc, ok := b.topics.get(topic)
	if !ok {
		return protocol.NewResponse(req, protocol.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", topic))
	}
	if qid < 0 || int(qid) >= tc.ReadQueueNums {
		return protocol.NewResponse(req, protocol.InvalidParameter, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]",
			qid, topic, tc.ReadQueueNums))
	}
	return nil
}

// popError maps package pop's errors: a malformed handle or bound is
// INVALID_PARAMETER, a stale handle NO_MESSAGE (RocketMQ's answer to an
// ack whose checkpoint is gone), the rest SYSTEM_ERROR.
func popError(req *protocol.Command, err error) *protocol.Command {
	switch {
	case errors.Is(err, pop.ErrBadExtraInfo), errors.Is(err, pop.ErrBadRequest):
		return protocol.NewResponse(req, protocol.InvalidParameter, err.Error())
	case errors.Is(err, pop.ErrStale):
		return protocol.NewResponse(req, protocol.NoMessage, err.Error())
	}
	return protocol.NewResponse(req, protocol.SystemError, err.Error())
}

// handlePopNotSupported answers the POP family's codes this broker does
// not serve yet, saying so (never a silent success).
func (b *Broker) handlePopNotSupported(c *conn, req *protocol.Command) *protocol.Command {
	return protocol.NewResponse(req, protocol.RequestCodeNotSupported,
		fmt.Sprintf("%s is not supported by this broker: its POP serves POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, PEEK_MESSAGE, NOTIFICATION and POLLING_INFO",
			protocol.RequestName(req.Code)))
}

// handleBatchAck answers BATCH_ACK_MESSAGE (200151): each BatchAck's set
// bits name offsets from its start offset. SUCCESS when the body is well
// formed; the remark counts what was not in flight (stale), which
// RocketMQ skips the same way.
func (b *Broker) handleBatchAck(c *conn, req *protocol.Command) *protocol.Command {
	var body protocol.BatchAckMessageRequestBody
	if err := protocol.UnmarshalBody(req.Body, &body); err != nil {
		return protocol.NewResponse(req, protocol.InvalidParameter, "batch ack body: "+err.Error())
	}
	if body.BrokerName != "" && body.BrokerName != b.cfg.BrokerName {
		return protocol.NewResponse(req, protocol.InvalidParameter,
			fmt.Sprintf("batch ack names broker %q, this is %q", body.BrokerName, b.cfg.BrokerName))
	}
	acked, stale := 0, 0
	for i := range body.Acks {
		a := &body.Acks[i]
		a.Normalize()
		if a.ConsumerGroup == "" {
			return protocol.NewResponse(req, protocol.InvalidParameter, fmt.Sprintf("batch ack %d names no consumer group", i))
		}
		if a.Retry != "" && a.Retry != "0" {
			return protocol.NewResponse(req, protocol.InvalidParameter,
				fmt.Sprintf("batch ack %d names a POP retry topic (retry %s); this broker hands out again from the topic itself", i, a.Retry))
		}
		if r := b.popHandleCheck(req, a.Topic, a.QueueID); r != nil {
			return r
		}
		n, s, err := b.pop.BatchAck(a.ConsumerGroup, a.Topic, a.QueueID, a.PopTime, a.Offsets())
		if err != nil {
			return popError(req, err)
		}
		acked, stale = acked+n, stale+s
	}
	remark := ""
	if stale > 0 {
		remark = fmt.Sprintf("%d acknowledged; %d not in flight with that pop time (stale), skipped", acked, stale)
	}
	return protocol.NewResponse(req, protocol.Success, remark)
}
