package client

import (
	"cmp"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Message is what a producer sends. Only Topic and Body are required.
type Message struct {
	// Topic the message is sent to.
	Topic string
	// Body is the payload. The producer does not modify it; keep it
	// unchanged until the send completes (async sends read it later).
	Body []byte
	// Tags is the message's tag (RocketMQ's TAGS property); consumers
	// filter by it ("TagA || TagB").
	Tags string
	// Keys are the message's business keys (KEYS property, space-joined),
	// for look-up by key on the broker.
	Keys []string
	// ShardingKey routes the message when the producer's Balancer is
	// keyed (HashModulo, ConsistentHash, HashSlots): equal keys go to the
	// same queue, so they are consumed in send order. Empty: any queue.
	ShardingKey string
	// Properties are user properties sent with the message. Names and
	// values must not contain the bytes 0x01 and 0x02.
	Properties map[string]string
	// Flag is RocketMQ's opaque int flag, stored and delivered as is.
	Flag int32
	// DelayLevel > 0 asks the broker to deliver the message later
	// (RocketMQ's delay levels: 1 = 1s, 2 = 5s, 3 = 10s, ...).
	DelayLevel int
}

// Property names RocketMQ gives meaning to (MessageConst).
const (
	PropertyKeys           = "KEYS"
	PropertyTags           = "TAGS"
	PropertyWaitStoreMsgOK = "WAIT"
	PropertyDelayLevel     = "DELAY"
	PropertyRetryTopic     = "RETRY_TOPIC"
	PropertyRealTopic      = "REAL_TOPIC"
	PropertyRealQueueID    = "REAL_QID"
	PropertyProducerGroup  = "PGROUP"
	PropertyUniqKey        = "UNIQ_KEY"
	PropertyReconsumeTime  = "RECONSUME_TIME"
	PropertyMaxReconsume   = "MAX_RECONSUME_TIMES"
	PropertyShardingKey    = "__SHARDINGKEY"
	PropertyConsumeStart   = "CONSUME_START_TIME"
	PropertyOriginMsgID    = "ORIGIN_MESSAGE_ID"
	PropertyCRC32          = "__CRC32#"
)

// size is the bytes the message adds to a request body, roughly: body plus
// properties; used for batching and flow control.
func (m *Message) size() int {
	n := len(m.Topic) + len(m.Body) + len(m.Tags) + 20
	for _, k := range m.Keys {
		n += len(k) + 1
	}
	for k, v := range m.Properties {
		n += len(k) + len(v) + 2
	}
	return n
}

// MessageExt is a message as a consumer receives it: the sent message plus
// what the broker recorded. A received message's Properties is nil: its
// properties stay as the bytes received, read with Property or copied
// into a map with PropertyMap (decode.go). Its strings and Body alias the
// answer it came in, which nothing writes again: it may be held as long
// as the application likes.
type MessageExt struct {
	Message
	// MsgID is the producer's unique id (UNIQ_KEY) or, for a message
	// without one, OffsetMsgID.
	MsgID string
	// OffsetMsgID is the broker's id: store host and commit-log offset, hex.
	OffsetMsgID string
	// Queue the message was read from.
	Queue MessageQueue
	// QueueOffset is the message's index in its queue.
	QueueOffset int64
	// CommitLogOffset is where the message lies in the broker's log.
	CommitLogOffset int64
	// StoreSize is the stored record's size in bytes.
	StoreSize int32
	// BodyCRC is the stored body's CRC.
	BodyCRC uint32
	// SysFlag is the stored system flag (compression, transaction bits).
	SysFlag int32
	// BornTime is when the producer made the message; StoreTime when the
	// broker stored it.
	BornTime, StoreTime time.Time
	// BornHost and StoreHost are the producer's and broker's addresses.
	BornHost, StoreHost netip.AddrPort
	// ReconsumeTimes counts earlier deliveries that failed.
	ReconsumeTimes int32
	// props are a received message's stored properties (without the CRC
	// pair), aliasing its answer: Properties is nil on a received message,
	// Property and PropertyMap read these (decode.go).
	props []byte
}

// String is a short description for logs.
func (m *MessageExt) String() string {
	return fmt.Sprintf("%s@%d id=%s tags=%q %dB", m.Queue, m.QueueOffset, m.MsgID, m.Tags, len(m.Body))
}

// MessageQueue names one queue: a topic's queue number on one broker
// (master and slaves share the name).
type MessageQueue struct {
	Topic      string
	BrokerName string
	QueueID    int
}

// String renders the queue as RocketMQ does in its logs and hashes.
func (q MessageQueue) String() string {
	return "MessageQueue [topic=" + q.Topic + ", brokerName=" + q.BrokerName + ", queueId=" + strconv.Itoa(q.QueueID) + "]"
}

// Compare orders queues by topic, broker name and queue id, RocketMQ's
// order: members of a group allocate over the same sorted list.
func (q MessageQueue) Compare(o MessageQueue) int {
	if c := strings.Compare(q.Topic, o.Topic); c != 0 {
		return c
	}
	if c := strings.Compare(q.BrokerName, o.BrokerName); c != 0 {
		return c
	}
	return cmp.Compare(q.QueueID, o.QueueID)
}

// SortQueues sorts qs in RocketMQ's order (see Compare).
func SortQueues(qs []MessageQueue) {
	sort.Slice(qs, func(i, j int) bool { return qs[i].Compare(qs[j]) < 0 })
}
