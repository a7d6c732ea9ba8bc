package client

import (
	"context"
	"fmt"
	"maps"
	"strings"
)

// ToolsGroup is the consumer group the admin's reads pull as, RocketMQ's
// tools' own (MixAll.TOOLS_CONSUMER_GROUP). Its pulls commit nothing.
const ToolsGroup = "TOOLS_CONSUMER"

// MessagesAt reads up to n messages of q from offset (a pull as
// ToolsGroup that commits nothing) and returns them with the offset after
// the last one read. It stops early at the end of the queue. An offset
// outside the queue is an error that names the queue's bounds.
func (a *Admin) MessagesAt(ctx context.Context, q MessageQueue, offset int64, n int) ([]*MessageExt, int64, error) {
	var out []*MessageExt
	f := parseTagFilter("*")
	for len(out) < n {
		cctx, cancel := a.in.ctxTimeout(ctx)
		r, err := a.in.pull(cctx, ToolsGroup, q, offset, PullOptions{MaxMessages: min(n-len(out), 32), Expression: "*"}, f, -1)
		cancel()
		if err != nil {
			return out, offset, err
		}
		switch r.Status {
		case PullFound, PullNoMatchedMessage:
			out = append(out, r.Messages...)
			if r.NextOffset <= offset {
				return out, offset, nil
			}
			offset = r.NextOffset
		case PullNoNewMessage:
			return out, offset, nil
		case PullOffsetIllegal:
			if len(out) > 0 {
				return out, offset, nil
			}
			return nil, offset, fmt.Errorf("client: offset %d is outside %s/%d (it holds %d..%d)%s", offset, q.BrokerName, q.QueueID,
				r.MinOffset, r.MaxOffset-1, remarkSuffix(r.Remark))
		}
	}
	return out, offset, nil
}

func remarkSuffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// dlqSystemProperties are the properties a dead letter carries that a
// resend must not (they steer retries, transactions and delays, or name
// the old copy).
var dlqSystemProperties = map[string]bool{
	PropertyRetryTopic: true, PropertyRealTopic: true, PropertyRealQueueID: true, PropertyDelayLevel: true,
	PropertyReconsumeTime: true, PropertyMaxReconsume: true, PropertyConsumeStart: true, PropertyOriginMsgID: true,
	PropertyUniqKey: true, PropertyKeys: true, PropertyTags: true, PropertyWaitStoreMsgOK: true, PropertyCRC32: true,
	PropertyProducerGroup: true, "TRAN_MSG": true, "TRAN_PREPARED_QUEUE_OFFSET": true, "MIN_OFFSET": true, "MAX_OFFSET": true,
	"CLUSTER": true, "__STARTDELIVERTIME": true, "TIMER_DELIVER_MS": true, "TIMER_DELAY_SEC": true, "TIMER_DELAY_MS": true,
}

// Resendable is the message to send for dead letter m: to its original
// topic (the RETRY_TOPIC property the broker set when it first retried
// it), with its body, tags, keys and user properties, and
// ORIGIN_MESSAGE_ID naming the dead letter. An error when m names no
// original topic.
func Resendable(m *MessageExt) (*Message, error) {
	topic := m.Property(PropertyRetryTopic)
	if topic == "" || strings.HasPrefix(topic, "%RETRY%") || strings.HasPrefix(topic, "%DLQ%") {
		return nil, fmt.Errorf("client: message %s names no original topic (RETRY_TOPIC %q)", m.MsgID, topic)
	}
	props := m.PropertyMap()
	maps.DeleteFunc(props, func(k, _ string) bool { return dlqSystemProperties[k] })
	props[PropertyOriginMsgID] = m.MsgID
	return &Message{Topic: topic, Body: m.Body, Tags: m.Tags, Keys: m.Keys, Properties: props, Flag: m.Flag}, nil
}
