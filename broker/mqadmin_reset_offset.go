package broker

import (
	"fmt"
	"strconv"

	"github.com/samsamq/samsa/protocol"
)

// handleInvokeBrokerToResetOffset answers INVOKE_BROKER_TO_RESET_OFFSET
// (222), what mqadmin's resetOffsetByTime sends each master first. As a
// RocketMQ 4.x broker does, it checks the topic and that the group has an
// offset on every queue, and answers CONSUMER_NOT_ONLINE when the group
// has no member online: mqadmin then moves the offsets itself
// (SEARCH_OFFSET_BY_TIMESTAMP and UPDATE_CONSUMER_OFFSET per queue), as
// samsa group reset-offsets does. A group with members online is refused
// with a clear remark: RocketMQ pushes RESET_CONSUMER_CLIENT_OFFSET to
// the members, which Samsa's client does not obey; a running member
// would write its own offsets back. Stop the consumers, then reset.
func (a *mqadminRequests) handleInvokeBrokerToResetOffset(_ *conn, req *protocol.Command) *protocol.Command {
	topic, group := req.Ext("topic"), req.Ext("group")
	if topic == "" || group == "" {
		return protocol.NewResponse(req, protocol.InvalidParameter, "topic and group are required")
	}
	if _, err := strconv.ParseInt(req.Ext("timestamp"), 10, 64); err != nil {
		return protocol.NewResponse(req, protocol.InvalidParameter, "timestamp: "+err.Error())
	}
	tc, ok := a.topics.get(topic)
	if !ok {
		return protocol.NewResponse(req, protocol.TopicNotExist, "[reset-offset] reset offset failed, no topic in this broker. topic="+topic)
	}
	for i := range tc.WriteQueueNums {
		if _, ok := a.offsets.Query(group, topic, int32(i)); !ok {
			return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("The consumer group <%s> not exist", group))
		}
	}
	if ids := a.clients.consumerIDs(group); len(ids) > 0 {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf(
			"resetting the offsets of group %s while %d member(s) are online is not supported (its clients are not told to reset): stop its consumers and reset again",
			group, len(ids)))
	}
	return protocol.NewResponse(req, protocol.ConsumerNotOnline,
		fmt.Sprintf("Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %s", group, topic, req.Ext("timestamp")))
}
