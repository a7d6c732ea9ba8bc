package protocol

// UnregisterClientRequestHeader is UNREGISTER_CLIENT's header: a client
// leaves its producer and/or consumer group.
type UnregisterClientRequestHeader struct {
	ClientID      string // required
	ProducerGroup string
	ConsumerGroup string
}

func (h *UnregisterClientRequestHeader) Encode() map[string]string {
	w := newFields(3)
	w.str("clientID", h.ClientID)
	w.optStr("producerGroup", h.ProducerGroup)
	w.optStr("consumerGroup", h.ConsumerGroup)
	return w
}

func (h *UnregisterClientRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ClientID = r.reqStr("clientID")
	h.ProducerGroup = r.str("producerGroup")
	h.ConsumerGroup = r.str("consumerGroup")
	return r.err()
}

// GetConsumerListByGroupRequestHeader is GET_CONSUMER_LIST_BY_GROUP's
// header; the answer's body is a GetConsumerListByGroupResponseBody.
type GetConsumerListByGroupRequestHeader struct {
	ConsumerGroup string // required
}

func (h *GetConsumerListByGroupRequestHeader) Encode() map[string]string {
	w := newFields(1)
	w.str("consumerGroup", h.ConsumerGroup)
	return w
}

func (h *GetConsumerListByGroupRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	return r.err()
}

// NotifyConsumerIdsChangedRequestHeader is NOTIFY_CONSUMER_IDS_CHANGED's
// header, sent one-way by a broker to every member of a group that changed.
type NotifyConsumerIdsChangedRequestHeader struct {
	ConsumerGroup string // required
}

func (h *NotifyConsumerIdsChangedRequestHeader) Encode() map[string]string {
	w := newFields(1)
	w.str("consumerGroup", h.ConsumerGroup)
	return w
}

func (h *NotifyConsumerIdsChangedRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	return r.err()
}

// Topic permission bits (RocketMQ PermName).
const (
	PermPriority = 0x1 << 3
	PermRead     = 0x1 << 2
	PermWrite    = 0x1 << 1
	PermInherit  = 0x1 << 0
)

// Topic filter types (RocketMQ TopicFilterType).
const (
	TopicFilterSingleTag = "SINGLE_TAG"
	TopicFilterMultiTag  = "MULTI_TAG"
)

// CreateTopicRequestHeader is UPDATE_AND_CREATE_TOPIC's header.
type CreateTopicRequestHeader struct {
	Topic           string // required
	DefaultTopic    string // required
	ReadQueueNums   int32  // required
	WriteQueueNums  int32  // required
	Perm            int32  // required; Perm* bits
	TopicFilterType string // required; TopicFilterSingleTag or TopicFilterMultiTag
	TopicSysFlag    int32
	Order           bool
	Attributes      string // "+key=value,-key" (RocketMQ 5 attributes)
}

func (h *CreateTopicRequestHeader) Encode() map[string]string {
	w := newFields(9)
	w.str("topic", h.Topic)
	w.str("defaultTopic", h.DefaultTopic)
	w.i32("readQueueNums", h.ReadQueueNums)
	w.i32("writeQueueNums", h.WriteQueueNums)
	w.i32("perm", h.Perm)
	w.str("topicFilterType", h.TopicFilterType)
	w.i32("topicSysFlag", h.TopicSysFlag)
	w.boolean("order", h.Order)
	w.optStr("attributes", h.Attributes)
	return w
}

func (h *CreateTopicRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.reqStr("topic")
	h.DefaultTopic = r.reqStr("defaultTopic")
	h.ReadQueueNums = r.i32("readQueueNums", true)
	h.WriteQueueNums = r.i32("writeQueueNums", true)
	h.Perm = r.i32("perm", true)
	h.TopicFilterType = r.reqStr("topicFilterType")
	h.TopicSysFlag = r.i32("topicSysFlag", false)
	h.Order = r.boolean("order")
	h.Attributes = r.str("attributes")
	return r.err()
}

// GetAllTopicConfigResponseHeader answers GET_ALL_TOPIC_CONFIG (body: a
// TopicConfigSerializeWrapper).
type GetAllTopicConfigResponseHeader struct {
	TotalTopicNum int32
}

func (h *GetAllTopicConfigResponseHeader) Encode() map[string]string {
	w := newFields(1)
	w.i32("totalTopicNum", h.TotalTopicNum)
	return w
}

func (h *GetAllTopicConfigResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.TotalTopicNum = r.i32("totalTopicNum", false)
	return r.err()
}
