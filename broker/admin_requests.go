package broker

import (
	"regexp"
	"sort"
	"strings"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// The admin requests of RocketMQ's mqadmin that read a broker's state:
// GET_TOPIC_STATS_INFO (topicStatus), GET_CONSUMER_CONNECTION_LIST
// (consumerConnection), GET_BROKER_CONFIG (getBrokerConfig). Each only
// reads; a slave answers them for itself.

// processGetTopicStatsInfo answers GET_TOPIC_STATS_INFO (202): every
// queue of the topic (the larger of its read and write counts) with its
// min and max offsets and the store time of its last message, as
// RocketMQ's AdminBrokerProcessor.getTopicStatsInfo.
func (b *Broker) processGetTopicStatsInfo(_ *conn, req *protocol.Command) *protocol.Command {
	topic := req.Ext("topic")
	tc, ok := b.topics.get(topic)
	if !ok {
		return protocol.NewResponse(req, protocol.TopicNotExist, "topic["+topic+"] not exist")
	}
	t := protocol.TopicStatsTable{OffsetTable: map[protocol.MessageQueue]protocol.TopicOffset{}}
	for i := range max(tc.ReadQueueNums, tc.WriteQueueNums) {
		qid := int32(i)
		o := protocol.TopicOffset{MinOffset: max(b.store.MinQueueOffset(topic, qid), 0), MaxOffset: max(b.store.MaxQueueOffset(topic, qid), 0)}
		if o.MaxOffset > 0 {
			o.LastUpdateTimestamp = b.storeTimeAt(topic, qid, o.MaxOffset-1)
		}
		t.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: qid}] = o
	}
	body, err := t.Encode()
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = body
	return b.limitAnswer(req, r)
}

// storeTimeAt is the store time (Unix ms) of the message at a queue
// offset, 0 when it cannot be read (gone to retention, or corrupt).
func (b *Broker) storeTimeAt(topic string, qid int32, off int64) int64 {
	res, err := b.store.GetMessages(topic, qid, off, 1, 0, nil)
	if err != nil || len(res.Records) == 0 {
		return 0
	}
	rec := res.Records[0]
	if len(rec) < record.OffSysFlag+4 || len(rec) < record.StoreTimeOffset(record.SysFlagOf(rec))+8 {
		return 0
	}
	return record.StoreTimestampOf(rec)
}

// processGetConsumerConnectionList answers GET_CONSUMER_CONNECTION_LIST
// (203): a group's online members (client id, address, language,
// version) and subscriptions; CONSUMER_NOT_ONLINE when it has none.
func (b *Broker) processGetConsumerConnectionList(_ *conn, req *protocol.Command) *protocol.Command {
	group := req.Ext("consumerGroup")
	cc, ok := b.clients.connections(group)
	if !ok {
		return protocol.NewResponse(req, protocol.ConsumerNotOnline, "the consumer group["+group+"] not online")
	}
	return b.bodyResponse(req, cc)
}

// connections is group's ConsumerConnection; false when no member is
// online.
func (m *clientManager) connections(group string) (protocol.ConsumerConnection, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.mu.consumers[group]
	if g == nil || len(g.channels) == 0 {
		return protocol.ConsumerConnection{}, false
	}
	cc := protocol.ConsumerConnection{ConsumeType: g.consumeType, MessageModel: g.messageModel, ConsumeFromWhere: g.fromWhere,
		SubscriptionTable: make(map[string]protocol.SubscriptionData, len(g.subs))}
	for p, ci := range g.channels {
		cc.ConnectionSet = append(cc.ConnectionSet, protocol.Connection{ClientID: ci.clientID, ClientAddr: p.remote(),
			Language: ci.language, Version: ci.version})
	}
	sort.Slice(cc.ConnectionSet, func(i, j int) bool { return cc.ConnectionSet[i].ClientID < cc.ConnectionSet[j].ClientID })
	for t, s := range g.subs {
		exp := s.ExpType
		if exp == "" {
			exp = protocol.ExpressionTag
		}
		cc.SubscriptionTable[t] = protocol.SubscriptionData{Topic: t, SubString: s.SubString, SubVersion: s.SubVersion, ExpressionType: exp}
	}
	return cc, true
}

// secretProperty matches the names of properties whose values
// GET_BROKER_CONFIG never shows.
var secretProperty = regexp.MustCompile(`(?i)secret|password|passwd|token|credential|privatekey`)

// processGetBrokerConfig answers GET_BROKER_CONFIG (26): the running
// configuration as RocketMQ's properties text ("key=value" lines), with
// the values of secret keys masked (the broker's secretKey shows as
// "(set)" or nothing). Nothing can change the configuration remotely (no
// UPDATE_BROKER_CONFIG).
func (b *Broker) processGetBrokerConfig(_ *conn, req *protocol.Command) *protocol.Command {
	lines := b.cfg.propertyLines()
	for i, l := range lines {
		k, v, _ := strings.Cut(l, "=")
		if secretProperty.MatchString(k) && v != "" && v != "(set)" {
			lines[i] = k + "=******"
		}
	}
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = []byte(strings.Join(lines, "\n") + "\n")
	return b.limitAnswer(req, r)
}
