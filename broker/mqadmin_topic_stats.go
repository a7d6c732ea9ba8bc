package broker

import (
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// handleGetTopicStatsInfo answers GET_TOPIC_STATS_INFO (202): every
// queue of the topic (the larger of its read and write counts) with its
// min and max offsets and the store time of its last message, as
// RocketMQ's AdminBrokerProcessor.getTopicStatsInfo.
func (a *mqadminRequests) handleGetTopicStatsInfo(_ *conn, req *protocol.Command) *protocol.Command {
	topic := req.Ext("topic")
	tc, ok := a.topics.get(topic)
	if !ok {
		return protocol.NewResponse(req, protocol.TopicNotExist, "topic["+topic+"] not exist")
	}
	t := protocol.TopicStatsTable{OffsetTable: map[protocol.MessageQueue]protocol.TopicOffset{}}
	for i := range max(tc.ReadQueueNums, tc.WriteQueueNums) {
		qid := int32(i)
		o := protocol.TopicOffset{MinOffset: max(a.store.MinQueueOffset(topic, qid), 0), MaxOffset: max(a.store.MaxQueueOffset(topic, qid), 0)}
		if o.MaxOffset > 0 {
			o.LastUpdateTimestamp = storeTimeAt(a.store, topic, qid, o.MaxOffset-1)
		}
		t.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: a.cfg.BrokerName, QueueID: qid}] = o
	}
	body, err := t.Encode()
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = body
	return a.ans.bounded(req, r)
}

// storeTimeAt is the store time (Unix ms) of the message at a queue
// offset, 0 when it cannot be read (gone to retention, or corrupt).
func storeTimeAt(st *storage.Store, topic string, qid int32, off int64) int64 {
	res, err := st.GetMessages(topic, qid, off, 1, 0, nil)
	if err != nil || len(res.Records) == 0 {
		return 0
	}
	rec := res.Records[0]
	if len(rec) < record.OffSysFlag+4 || len(rec) < record.StoreTimeOffset(record.SysFlagOf(rec))+8 {
		return 0
	}
	return record.StoreTimestampOf(rec)
}
