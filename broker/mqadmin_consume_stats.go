package broker

import (
	"slices"

	"github.com/samsamq/samsa/broker/pop"
	"github.com/samsamq/samsa/protocol"
)

// handleGetConsumeStats answers GET_CONSUME_STATS (208), what mqadmin's
// consumerProgress asks each master: per read queue of the topic (or of
// every topic the group has offsets on), the queue's max offset, the
// group's committed offset (0 when none, as RocketMQ), and the store time
// of the last message consumed. Topics the group's online members do not
// subscribe to are left out when they subscribe to any (RocketMQ's rule).
// Samsa keeps no pull offset apart from the committed one, and no
// per-group rate (consumeTps is not sent). For a group consuming by POP
// the consumer offset is the lowest offset not acknowledged, and ours
// popInFlight and popRedelivered say what is in flight and how much was
// handed out again.
func (a *mqadminRequests) handleGetConsumeStats(_ *conn, req *protocol.Command) *protocol.Command {
	group, topic := req.Ext("consumerGroup"), req.Ext("topic")
	if group == "" {
		return protocol.NewResponse(req, protocol.InvalidParameter, "consumerGroup is required")
	}
	topics := []string{topic}
	if topic == "" {
		topics = a.offsets.TopicsOf(group)
		if a.pop != nil {
			for _, t := range a.pop.Topics(group) {
				if !slices.Contains(topics, t) {
					topics = append(topics, t)
				}
			}
		}
	}
	_, subscribes := a.clients.connections(group)
	cs := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	for _, t := range topics {
		tc, ok := a.topics.get(t)
		if !ok {
			continue
		}
		var popped map[int32]pop.QueueStat
		if a.pop != nil {
			popped = a.pop.QueueStats(group, t)
		}
		if _, sub := a.clients.subscription(group, t); !sub && subscribes && popped == nil {
			continue
		}
		for i := range tc.ReadQueueNums {
			qid := int32(i)
			w := protocol.OffsetWrapper{BrokerOffset: max(a.store.MaxQueueOffset(t, qid), 0)}
			if off, ok := a.offsets.Query(group, t, qid); ok && off > 0 {
				w.ConsumerOffset = off
			}
			if p, ok := popped[qid]; ok && p.Floor > 0 {
				// a POP group commits no offset: below its floor everything is acknowledged
				w.ConsumerOffset, w.PopInFlight, w.PopRedelivered = p.Floor, p.InFlight, p.Redelivered
			}
			w.PullOffset = w.ConsumerOffset
			if w.ConsumerOffset > 0 {
				w.LastTimestamp = storeTimeAt(a.store, t, qid, w.ConsumerOffset-1)
			}
			cs.OffsetTable[protocol.MessageQueue{Topic: t, BrokerName: a.cfg.BrokerName, QueueID: qid}] = w
		}
	}
	body, err := cs.Encode()
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = body
	return a.ans.bounded(req, r)
}
