package protocol

import (
	"encoding/json"
	"slices"
	"strconv"
)

// Consume types, message models and consume-from points as heartbeats spell them.
const (
	ConsumeActively          = "CONSUME_ACTIVELY"  // pull consumer
	ConsumePassively         = "CONSUME_PASSIVELY" // push consumer
	ConsumePop               = "CONSUME_POP"
	MessageModelClustering   = "CLUSTERING"
	MessageModelBroadcasting = "BROADCASTING"
	ConsumeFromLastOffset    = "CONSUME_FROM_LAST_OFFSET"
	ConsumeFromFirstOffset   = "CONSUME_FROM_FIRST_OFFSET"
	ConsumeFromTimestamp     = "CONSUME_FROM_TIMESTAMP"
	ExpressionTag            = "TAG"
	ExpressionSQL92          = "SQL92"
	SubAll                   = "*"
)

// HeartbeatData is HEART_BEAT's body: a client's producer and consumer groups.
type HeartbeatData struct {
	ClientID             string         `json:"clientID"`
	ProducerDataSet      []ProducerData `json:"producerDataSet"`
	ConsumerDataSet      []ConsumerData `json:"consumerDataSet"`
	HeartbeatFingerprint int32          `json:"heartbeatFingerprint,omitempty"`
	WithoutSub           bool           `json:"withoutSub,omitempty"`
}

// MarshalJSON writes empty sets as [].
func (h HeartbeatData) MarshalJSON() ([]byte, error) {
	type plain HeartbeatData
	if h.ProducerDataSet == nil {
		h.ProducerDataSet = []ProducerData{}
	}
	if h.ConsumerDataSet == nil {
		h.ConsumerDataSet = []ConsumerData{}
	}
	return json.Marshal(plain(h))
}

// ProducerData names a producer group.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData is one consumer group of a client.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`      // ConsumeActively, ConsumePassively
	MessageModel        string             `json:"messageModel"`     // MessageModelClustering, MessageModelBroadcasting
	ConsumeFromWhere    string             `json:"consumeFromWhere"` // ConsumeFrom*
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// MarshalJSON writes an empty subscription set as [].
func (c ConsumerData) MarshalJSON() ([]byte, error) {
	type plain ConsumerData
	if c.SubscriptionDataSet == nil {
		c.SubscriptionDataSet = []SubscriptionData{}
	}
	return json.Marshal(plain(c))
}

// SubscriptionData is one topic subscription of a consumer group.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"` // "*", "TagA || TagB", or SQL
	TagsSet         []string `json:"tagsSet"`
	CodeSet         CodeSet  `json:"codeSet"` // hash codes of the tags
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"` // ExpressionTag, ExpressionSQL92
}

// MarshalJSON writes empty sets as [].
func (s SubscriptionData) MarshalJSON() ([]byte, error) {
	type plain SubscriptionData
	if s.TagsSet == nil {
		s.TagsSet = []string{}
	}
	if s.CodeSet == nil {
		s.CodeSet = CodeSet{}
	}
	return json.Marshal(plain(s))
}

// CodeSet is a set of tag hash codes. Java writes numbers; rocketmq-client-go
// writes them as strings ("12345"); both decode.
type CodeSet []int32

// UnmarshalJSON accepts numbers and numeric strings.
func (c *CodeSet) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(CodeSet, 0, len(raw))
	for _, r := range raw {
		t := string(r)
		if len(t) >= 2 && t[0] == '"' {
			var s string
			if err := json.Unmarshal(r, &s); err != nil {
				return err
			}
			t = s
		}
		n, err := strconv.ParseInt(t, 10, 32)
		if err != nil {
			return err
		}
		out = append(out, int32(n))
	}
	*c = out
	return nil
}

// MessageQueue names one queue.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// GetConsumerListByGroupResponseBody answers GET_CONSUMER_LIST_BY_GROUP.
type GetConsumerListByGroupResponseBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// MarshalJSON writes an empty list as [].
func (b GetConsumerListByGroupResponseBody) MarshalJSON() ([]byte, error) {
	type plain GetConsumerListByGroupResponseBody
	if b.ConsumerIDList == nil {
		b.ConsumerIDList = []string{}
	}
	return json.Marshal(plain(b))
}

// LockBatchRequestBody is LOCK_BATCH_MQ's body (UNLOCK_BATCH_MQ's too): an
// ordered consumer asks to own queues.
type LockBatchRequestBody struct {
	ConsumerGroup  string         `json:"consumerGroup"`
	ClientID       string         `json:"clientId"`
	OnlyThisBroker bool           `json:"onlyThisBroker"`
	MQSet          []MessageQueue `json:"mqSet"`
}

// UnlockBatchRequestBody is UNLOCK_BATCH_MQ's body.
type UnlockBatchRequestBody = LockBatchRequestBody

// LockBatchResponseBody answers LOCK_BATCH_MQ with the queues now locked.
type LockBatchResponseBody struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}

// MarshalJSON writes an empty set as [].
func (b LockBatchResponseBody) MarshalJSON() ([]byte, error) {
	type plain LockBatchResponseBody
	if b.LockOKMQSet == nil {
		b.LockOKMQSet = []MessageQueue{}
	}
	return json.Marshal(plain(b))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
