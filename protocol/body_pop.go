package protocol

// BatchAckMessageRequestBody is BATCH_ACK_MESSAGE's body (RocketMQ 5's
// BatchAckMessageRequestBody): acknowledgements of many messages of a pop
// at once.
type BatchAckMessageRequestBody struct {
	BrokerName string     `json:"brokerName"`
	Acks       []BatchAck `json:"acks"`
}

// BatchAck acknowledges the messages of one queue popped at one pop time:
// bit i of BitSet (Java's BitSet.toByteArray, little-endian, base64 in
// JSON) acknowledges queue offset StartOffset+i. RocketMQ writes the
// short names (c, t, ...); the long ones are its alternates.
type BatchAck struct {
	ConsumerGroup string `json:"c,omitempty"`
	Topic         string `json:"t,omitempty"`
	Retry         string `json:"r,omitempty"`
	StartOffset   int64  `json:"so"`
	QueueID       int32  `json:"q"`
	ReviveQueueID int32  `json:"rq"`
	PopTime       int64  `json:"pt"`
	InvisibleTime int64  `json:"it"`
	BitSet        []byte `json:"b,omitempty"`

	LongConsumerGroup string `json:"consumerGroup,omitempty"`
	LongTopic         string `json:"topic,omitempty"`
	LongRetry         string `json:"retry,omitempty"`
	LongBitSet        []byte `json:"bitSet,omitempty"`
}

// Normalize folds the long alternate names into the short fields.
func (a *BatchAck) Normalize() {
	if a.ConsumerGroup == "" {
		a.ConsumerGroup = a.LongConsumerGroup
	}
	if a.Topic == "" {
		a.Topic = a.LongTopic
	}
	if a.Retry == "" {
		a.Retry = a.LongRetry
	}
	if a.BitSet == nil {
		a.BitSet = a.LongBitSet
	}
	a.LongConsumerGroup, a.LongTopic, a.LongRetry, a.LongBitSet = "", "", "", nil
}

// Offsets lists the queue offsets a's bits acknowledge, in order.
func (a *BatchAck) Offsets() []int64 {
	var out []int64
	for i, b := range a.BitSet {
		for j := 0; j < 8; j++ {
			if b&(1<<j) != 0 {
				out = append(out, a.StartOffset+int64(i*8+j))
			}
		}
	}
	return out
}
