package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/samsamq/samsa/broker/pop"
	"github.com/samsamq/samsa/protocol"
)

// The POP family's read-only codes: PEEK_MESSAGE, NOTIFICATION and
// POLLING_INFO, served by package pop.

// popTopicCheck checks a POP request's topic (it exists and is readable)
// and queue (-1 for any), returning the topic's read queues.
func (b *Broker) popTopicCheck(req *protocol.Command, topic string, qid int32) (int32, *protocol.Command) {
	if r := b.popServed(req); r != nil {
		return 0, r
	}
	tc, ok := b.topics.get(topic)
	if !ok {
		return 0, protocol.NewResponse(req, protocol.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", topic))
	}
	if tc.Perm&PermRead == 0 {
		return 0, protocol.NewResponse(req, protocol.NoPermission, fmt.Sprintf("the topic[%s] peeking message is forbidden", topic))
	}
	if qid < -1 || int(qid) >= tc.ReadQueueNums {
		return 0, protocol.NewResponse(req, protocol.InvalidParameter, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]",
			qid, topic, tc.ReadQueueNums))
	}
	return int32(tc.ReadQueueNums), nil
}

// handlePeek answers PEEK_MESSAGE (200052): up to maxMsgNums of what the
// group's next pop would hand out, as stored, without handing anything
// out (SUCCESS with the records back to back, restNum in the header), or
// PULL_NOT_FOUND.
func (b *Broker) handlePeek(c *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.PeekMessageRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	queues, refuse := b.popTopicCheck(req, h.Topic, h.QueueID)
	if refuse != nil {
		return refuse
	}
	res, err := b.pop.Peek(&pop.Request{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, Queues: queues,
		MaxMsgs: int(h.MaxMsgNums)})
	if err != nil {
		return popError(req, err)
	}
	rh := protocol.PopMessageResponseHeader{PopTime: b.cfg.Clock().UnixMilli(), RestNum: res.RestNum}
	if len(res.Records) == 0 {
		return respond(req, protocol.PullNotFound, "no message", rh.Encode())
	}
	n := 0
	for _, r := range res.Records {
		n += len(r)
	}
	body := make([]byte, 0, n)
	for _, r := range res.Records {
		body = append(body, r...)
	}
	resp := respond(req, protocol.Success, "FOUND", rh.Encode())
	resp.Body = body
	return resp
}

// handleNotification answers NOTIFICATION (200054): whether the group
// has something to pop (hasMsg), waiting up to pollTime for it as a pop
// does; POLLING_FULL (pollingFull) when too many wait already.
func (b *Broker) handleNotification(c *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.NotificationRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	queues, refuse := b.popTopicCheck(req, h.Topic, h.QueueID)
	if refuse != nil {
		return refuse
	}
	pr := &pop.Request{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, Queues: queues, MaxMsgs: 1,
		Invisible: pop.MinInvisible, Poll: time.Duration(min(max(h.PollTime, 0), pop.MaxPoll.Milliseconds())) * time.Millisecond,
		Order: h.Order}
	ph := &protocol.PopMessageRequestHeader{ConsumerGroup: h.ConsumerGroup, Topic: h.Topic, ExpType: h.ExpType, Exp: h.Exp}
	if r := b.popFilter(req, ph, pr); r != nil {
		return r
	}
	if pr.Poll == 0 {
		return b.notificationAnswer(req, pr, context.Background())
	}
	return b.answerLater(c, req, func(ctx context.Context) *protocol.Command { return b.notificationAnswer(req, pr, ctx) })
}

func (b *Broker) notificationAnswer(req *protocol.Command, pr *pop.Request, ctx context.Context) *protocol.Command {
	has, err := b.pop.Notify(ctx, pr)
	switch {
	case errors.Is(err, pop.ErrPollingFull):
		rh := protocol.NotificationResponseHeader{PollingFull: true}
		return respond(req, protocol.PollingFull, err.Error(), rh.Encode())
	case err != nil:
		return popError(req, err)
	}
	rh := protocol.NotificationResponseHeader{HasMsg: has}
	return respond(req, protocol.Success, "", rh.Encode())
}

// handlePollingInfo answers POLLING_INFO (200055): how many pops and
// notifications of the group wait on the queue (pollingNum).
func (b *Broker) handlePollingInfo(c *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.PollingInfoRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	if _, refuse := b.popTopicCheck(req, h.Topic, h.QueueID); refuse != nil {
		return refuse
	}
	rh := protocol.PollingInfoResponseHeader{PollingNum: int32(b.pop.PollingInfo(h.ConsumerGroup, h.Topic, h.QueueID))}
	return respond(req, protocol.Success, "", rh.Encode())
}
