package acl

import (
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// Resource is one topic or group a request touches and the permission it
// needs there.
type Resource struct {
	Name  string // topic, or group without the retry prefix
	Group bool
	Perm  Perm
}

func topicRes(topic string, p Perm) Resource {
	// A retry topic is its group (RocketMQ checks %RETRY%g against groupPerms).
	if len(topic) > len(RetryGroupPrefix) && topic[:len(RetryGroupPrefix)] == RetryGroupPrefix {
		return Resource{Name: topic[len(RetryGroupPrefix):], Group: true, Perm: p}
	}
	return Resource{Name: topic, Perm: p}
}

func groupRes(group string) Resource { return Resource{Name: group, Group: true, Perm: Sub} }

// AdminCode reports whether a request code needs an admin account. These
// are RocketMQ's (UPDATE_AND_CREATE_TOPIC, UPDATE_BROKER_CONFIG,
// DELETE_TOPIC_IN_BROKER, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
// DELETE_SUBSCRIPTIONGROUP) and, beyond RocketMQ, the codes that dump every
// topic's or group's configuration or offsets (what a slave copies from its
// master), the broker's configuration (GET_BROKER_CONFIG), the raw log
// (GetCommitLogRange, a replica's repair), and the name server's
// broker-only and write codes.
func AdminCode(code int32) bool {
	switch code {
	case protocol.UpdateAndCreateTopic, protocol.UpdateAndCreateTopicList, protocol.UpdateBrokerConfig,
		protocol.DeleteTopicInBroker, protocol.UpdateAndCreateSubscriptionGroup, protocol.DeleteSubscriptionGroup,
		protocol.GetAllTopicConfig, protocol.GetTopicConfig, protocol.GetAllSubscriptionGroupConfig, protocol.GetAllConsumerOffset,
		protocol.GetAllDelayOffset, protocol.GetTimerCheckPoint, protocol.GetBrokerConfig,
		protocol.PutKVConfig, protocol.DeleteKVConfig, protocol.RegisterBroker, protocol.UnregisterBroker,
		protocol.BrokerHeartbeat, protocol.QueryDataVersion, protocol.DeleteTopicInNamesrv,
		protocol.RegisterTopicInNamesrv, protocol.GetCommitLogRange:
		return true
	}
	return false
}

// Resources lists the topics and groups a request touches, RocketMQ's
// PlainAccessResource.parse extended to the codes it leaves out (batch and
// reply sends, offset queries, consumer-offset query, lock/unlock). ext is
// the request's whole custom header; body its body (HEART_BEAT and
// LOCK/UNLOCK name their groups there). A body that does not decode is an
// error: the request is refused rather than checked against less.
func Resources(code int32, ext map[string]string, body []byte) ([]Resource, error) {
	switch code {
	case protocol.SendMessage, protocol.SendReplyMessage:
		return []Resource{topicRes(ext["topic"], Pub)}, nil
	case protocol.SendMessageV2, protocol.SendBatchMessage, protocol.SendReplyMessageV2:
		return []Resource{topicRes(ext["b"], Pub)}, nil
	case protocol.ConsumerSendMsgBack:
		return []Resource{topicRes(ext["originTopic"], Pub), groupRes(ext["group"])}, nil
	case protocol.PullMessage, protocol.QueryConsumerOffset, protocol.UpdateConsumerOffset,
		protocol.PopMessage, protocol.AckMessage, protocol.ChangeMessageInvisibleTime,
		protocol.PeekMessage, protocol.Notification, protocol.PollingInfo:
		// RocketMQ 5 marks the POP headers' topic and group @RocketMQResource
		return []Resource{topicRes(ext["topic"], Sub), groupRes(ext["consumerGroup"])}, nil
	case protocol.QueryMessage, protocol.GetMaxOffset, protocol.GetMinOffset, protocol.SearchOffsetByTimestamp,
		protocol.GetEarliestMsgStoretime:
		return []Resource{topicRes(ext["topic"], Sub)}, nil
	case protocol.GetConsumerListByGroup:
		return []Resource{groupRes(ext["consumerGroup"])}, nil
	case protocol.UnregisterClient:
		if g := ext["consumerGroup"]; g != "" {
			return []Resource{groupRes(g)}, nil
		}
		return nil, nil
	case protocol.HeartBeat:
		var hb protocol.HeartbeatData
		if err := protocol.UnmarshalBody(body, &hb); err != nil {
			return nil, fmt.Errorf("heartbeat body: %w", err)
		}
		var rs []Resource
		for _, c := range hb.ConsumerDataSet {
			rs = append(rs, groupRes(c.GroupName))
			for _, s := range c.SubscriptionDataSet {
				rs = append(rs, topicRes(s.Topic, Sub))
			}
		}
		return rs, nil
	case protocol.BatchAckMessage:
		var ba protocol.BatchAckMessageRequestBody
		if err := protocol.UnmarshalBody(body, &ba); err != nil {
			return nil, fmt.Errorf("batch ack body: %w", err)
		}
		var rs []Resource
		for i := range ba.Acks {
			a := ba.Acks[i]
			a.Normalize()
			rs = append(rs, topicRes(a.Topic, Sub), groupRes(a.ConsumerGroup))
		}
		return rs, nil
	case protocol.LockBatchMQ, protocol.UnlockBatchMQ:
		var lb protocol.LockBatchRequestBody
		if err := protocol.UnmarshalBody(body, &lb); err != nil {
			return nil, fmt.Errorf("lock body: %w", err)
		}
		rs := []Resource{groupRes(lb.ConsumerGroup)}
		for _, mq := range lb.MQSet {
			rs = append(rs, topicRes(mq.Topic, Sub))
		}
		return rs, nil
	}
	return nil, nil
}
