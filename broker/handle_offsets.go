package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/samsamq/samsa/broker/offsets"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// offsetRequests answer the offset requests: consumer offsets (query,
// commit, the whole table for a slave) and the store's queue offsets (max,
// min, by time, earliest store time). RocketMQ splits these between its
// ConsumerManageProcessor and AdminBrokerProcessor.
type offsetRequests struct {
	store   *storage.Store
	offsets *offsets.Table
	topics  *topicManager
	// isSlave says this replica is not master now (commits for topics it
	// has not copied yet are taken; see checkOffsetCommit).
	isSlave func() bool
	now     func() time.Time
	ans     answers
}

// handleQueryConsumerOffset answers QUERY_CONSUMER_OFFSET (14): the
// group's committed offset; for a group without one, 0 when the queue
// holds nothing older than the group (offsets.Table.Start; RocketMQ: when
// its first message is in memory), else QUERY_NOT_FOUND so the client
// applies its consumeFromWhere.
func (o *offsetRequests) handleQueryConsumerOffset(_ *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.QueryConsumerOffsetRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	zero := !h.HasSetZeroIfNotFound || h.SetZeroIfNotFound
	// Whether the queue is empty, and what it held before the group,
	// count every record sent before this request, indexed or not yet.
	o.store.AwaitIndexed(indexWait)
	off, ok := o.offsets.Start(h.ConsumerGroup, h.Topic, h.QueueID, zero)
	switch {
	case ok:
		return respond(req, protocol.Success, "", (&protocol.OffsetResponseHeader{Offset: off}).Encode())
	case !zero:
		return protocol.NewResponse(req, protocol.QueryNotFound, "Not found, do not set to zero, maybe this group boot first")
	}
	return protocol.NewResponse(req, protocol.QueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
}

// handleUpdateConsumerOffset answers UPDATE_CONSUMER_OFFSET (15), usually
// sent one-way. Offsets reach consumerOffset.json within
// flushConsumerOffsetInterval and at shutdown.
func (o *offsetRequests) handleUpdateConsumerOffset(_ *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.UpdateConsumerOffsetRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	if code, remark := o.checkOffsetCommit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset); code != protocol.Success {
		return protocol.NewResponse(req, code, remark)
	}
	if err := o.offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

// checkOffsetCommit validates an offset commit before anything is stored
// (RocketMQ 5's ConsumerManageProcessor.updateConsumerOffset answers
// SUBSCRIPTION_GROUP_NOT_EXIST for a blank or unknown group, TOPIC_NOT_EXIST
// for an unknown topic, INVALID_PARAMETER for a missing queue or offset):
// a group name RocketMQ would refuse (ValidateGroup) is
// SUBSCRIPTION_GROUP_NOT_EXIST, a bad or unknown topic TOPIC_NOT_EXIST, a
// queue id outside the topic's queues or a negative offset
// INVALID_PARAMETER. One difference: a well-formed group not in the
// subscription table is accepted (RocketMQ 4 took any group, and a
// consumer may commit before its first heartbeat reaches this broker).
func (o *offsetRequests) checkOffsetCommit(group, topic string, queue int32, offset int64) (protocol.ResponseCode, string) {
	if err := ValidateGroup(group); err != nil {
		return protocol.SubscriptionGroupNotExist, fmt.Sprintf("Group %q not exist! (%v)", group, err)
	}
	if err := ValidateTopic(topic); err != nil {
		return protocol.TopicNotExist, fmt.Sprintf("Topic %q not exist! (%v)", topic, err)
	}
	if queue < 0 {
		return protocol.InvalidParameter, fmt.Sprintf("negative queue id %d", queue)
	}
	tc, ok := o.topics.get(topic)
	switch {
	case !ok && o.isSlave():
		// A slave's table is its master's copy, up to slaveSyncInterval
		// old: a consumer that failed over to it commits for topics it may
		// not have copied yet. The names are checked; the rest is the
		// master's to judge when the commit reaches it.
	case !ok:
		return protocol.TopicNotExist, "Topic " + topic + " not exist!"
	case int(queue) >= max(tc.ReadQueueNums, tc.WriteQueueNums):
		return protocol.InvalidParameter, fmt.Sprintf("queue id %d out of range: topic %s has %d read and %d write queues",
			queue, topic, tc.ReadQueueNums, tc.WriteQueueNums)
	}
	if offset < 0 {
		return protocol.InvalidParameter, fmt.Sprintf("negative offset %d", offset)
	}
	return protocol.Success, ""
}

// handleGetMaxOffset answers GET_MAX_OFFSET (30): the next offset the
// queue will assign.
func (o *offsetRequests) handleGetMaxOffset(_ *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.GetMaxOffsetRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	o.store.AwaitIndexed(indexWait) // records sent before this request count
	off := o.store.MaxQueueOffset(h.Topic, h.QueueID)
	return respond(req, protocol.Success, "", (&protocol.OffsetResponseHeader{Offset: off}).Encode())
}

// indexWait bounds how long a request that decides where a consumer
// starts waits for the dispatcher to index what was sent before it
// (storage.Store.AwaitIndexed): a consumer started right after a send
// from CONSUME_FROM_LAST_OFFSET must not start before that message
// because the queue read as shorter than it was.
const indexWait = 2 * time.Second

// handleGetMinOffset answers GET_MIN_OFFSET (31): the first offset still
// stored.
func (o *offsetRequests) handleGetMinOffset(_ *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.GetMinOffsetRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	off := o.store.MinQueueOffset(h.Topic, h.QueueID)
	return respond(req, protocol.Success, "", (&protocol.OffsetResponseHeader{Offset: off}).Encode())
}

// handleSearchOffset answers SEARCH_OFFSET_BY_TIMESTAMP (29): the first
// offset stored at or after the timestamp, or with boundaryType UPPER the
// last stored at or before it (offsets.ByTime).
func (o *offsetRequests) handleSearchOffset(_ *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.SearchOffsetRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	o.store.AwaitIndexed(indexWait) // records sent before this request count
	off := offsets.ByTime(o.store, h.Topic, h.QueueID, h.Timestamp, strings.EqualFold(h.BoundaryType, "UPPER"))
	return respond(req, protocol.Success, "", (&protocol.OffsetResponseHeader{Offset: off}).Encode())
}

// handleEarliestMsgStoreTime answers GET_EARLIEST_MSG_STORETIME (32).
func (o *offsetRequests) handleEarliestMsgStoreTime(_ *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.GetEarliestMsgStoretimeRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	ts, err := o.store.EarliestStoreTime(h.Topic, h.QueueID)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "no earliest message store time: "+err.Error())
	}
	return respond(req, protocol.Success, "", (&protocol.GetEarliestMsgStoretimeResponseHeader{Timestamp: ts}).Encode())
}

// handleGetAllConsumerOffset answers GET_ALL_CONSUMER_OFFSET (43): every
// committed offset, as a ConsumerOffsetSerializeWrapper (what a slave
// copies from its master). An empty table is a SUCCESS with an empty body
// object (RocketMQ answers SYSTEM_ERROR "No consumer offset in this
// broker", which its own slave just logs).
func (o *offsetRequests) handleGetAllConsumerOffset(_ *conn, req *protocol.Command) *protocol.Command {
	w := protocol.ConsumerOffsetSerializeWrapper{OffsetTable: o.offsets.All(),
		DataVersion: protocol.DataVersion{Timestamp: o.now().UnixMilli()}}
	return o.ans.body(req, w)
}
