package protocol

import "fmt"

// SendMessageRequestHeader is SEND_MESSAGE's header (and, in its V2 form,
// SEND_MESSAGE_V2's and SEND_BATCH_MESSAGE's). rocketmq-client-go sends this
// long form with SEND_MESSAGE and the V2 form with SEND_BATCH_MESSAGE.
type SendMessageRequestHeader struct {
	ProducerGroup         string // required
	Topic                 string // required
	DefaultTopic          string // required; "TBW102" from the official clients
	DefaultTopicQueueNums int32  // required
	QueueID               int32  // required
	SysFlag               int32  // required; MessageSysFlag bits
	BornTimestamp         int64  // required; ms since the epoch
	Flag                  int32  // required; the user's message flag
	Properties            string // name\x01value\x02 pairs
	ReconsumeTimes        int32
	UnitMode              bool
	Batch                 bool
	MaxReconsumeTimes     int32
	HasMaxReconsumeTimes  bool   // MaxReconsumeTimes was sent (Java's Integer may be null)
	BrokerName            string // "bname": the broker the client aimed at
}

// Encode gives the long-name ext fields.
func (h *SendMessageRequestHeader) Encode() map[string]string {
	w := newFields(14)
	w.str("producerGroup", h.ProducerGroup)
	w.str("topic", h.Topic)
	w.str("defaultTopic", h.DefaultTopic)
	w.i32("defaultTopicQueueNums", h.DefaultTopicQueueNums)
	w.i32("queueId", h.QueueID)
	w.i32("sysFlag", h.SysFlag)
	w.i64("bornTimestamp", h.BornTimestamp)
	w.i32("flag", h.Flag)
	w.optStr("properties", h.Properties)
	w.i32("reconsumeTimes", h.ReconsumeTimes)
	w.boolean("unitMode", h.UnitMode)
	w.boolean("batch", h.Batch)
	w.optI32("maxReconsumeTimes", h.MaxReconsumeTimes, h.HasMaxReconsumeTimes)
	w.optStr("bname", h.BrokerName)
	return w
}

// Decode reads the long-name ext fields.
func (h *SendMessageRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ProducerGroup = r.reqStr("producerGroup")
	h.Topic = r.reqStr("topic")
	h.DefaultTopic = r.reqStr("defaultTopic")
	h.DefaultTopicQueueNums = r.i32("defaultTopicQueueNums", true)
	h.QueueID = r.i32("queueId", true)
	h.SysFlag = r.i32("sysFlag", true)
	h.BornTimestamp = r.i64("bornTimestamp", true)
	h.Flag = r.i32("flag", true)
	h.Properties = r.str("properties")
	h.ReconsumeTimes = r.i32("reconsumeTimes", false)
	h.UnitMode = r.boolean("unitMode")
	h.Batch = r.boolean("batch")
	h.HasMaxReconsumeTimes = r.has("maxReconsumeTimes") && m["maxReconsumeTimes"] != ""
	h.MaxReconsumeTimes = r.i32("maxReconsumeTimes", false)
	h.BrokerName = r.str("bname")
	return r.err()
}

// SendMessageRequestHeaderV2 is the same header with RocketMQ's one-letter
// field names (SendMessageRequestHeaderV2: a producerGroup, b topic,
// c defaultTopic, d defaultTopicQueueNums, e queueId, f sysFlag,
// g bornTimestamp, h flag, i properties, j reconsumeTimes, k unitMode,
// l maxReconsumeTimes, m batch, n brokerName).
type SendMessageRequestHeaderV2 struct {
	SendMessageRequestHeader
}

// Encode gives the one-letter ext fields.
func (h *SendMessageRequestHeaderV2) Encode() map[string]string {
	w := newFields(14)
	w.str("a", h.ProducerGroup)
	w.str("b", h.Topic)
	w.str("c", h.DefaultTopic)
	w.i32("d", h.DefaultTopicQueueNums)
	w.i32("e", h.QueueID)
	w.i32("f", h.SysFlag)
	w.i64("g", h.BornTimestamp)
	w.i32("h", h.Flag)
	w.optStr("i", h.Properties)
	w.i32("j", h.ReconsumeTimes)
	w.boolean("k", h.UnitMode)
	w.optI32("l", h.MaxReconsumeTimes, h.HasMaxReconsumeTimes)
	w.boolean("m", h.Batch)
	w.optStr("n", h.BrokerName)
	return w
}

// Decode reads the one-letter ext fields.
func (h *SendMessageRequestHeaderV2) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ProducerGroup = r.reqStr("a")
	h.Topic = r.reqStr("b")
	h.DefaultTopic = r.reqStr("c")
	h.DefaultTopicQueueNums = r.i32("d", true)
	h.QueueID = r.i32("e", true)
	h.SysFlag = r.i32("f", true)
	h.BornTimestamp = r.i64("g", true)
	h.Flag = r.i32("h", true)
	h.Properties = r.str("i")
	h.ReconsumeTimes = r.i32("j", false)
	h.UnitMode = r.boolean("k")
	h.HasMaxReconsumeTimes = r.has("l") && m["l"] != ""
	h.MaxReconsumeTimes = r.i32("l", false)
	h.Batch = r.boolean("m")
	h.BrokerName = r.str("n")
	return r.err()
}

// V2 gives the one-letter form of h.
func (h *SendMessageRequestHeader) V2() *SendMessageRequestHeaderV2 {
	return &SendMessageRequestHeaderV2{SendMessageRequestHeader: *h}
}

// V1 gives the long-name form of h.
func (h *SendMessageRequestHeaderV2) V1() *SendMessageRequestHeader {
	v := h.SendMessageRequestHeader
	return &v
}

// DecodeSendMessageRequest decodes the header of a SEND_MESSAGE (long names),
// SEND_MESSAGE_V2 or SEND_BATCH_MESSAGE (one-letter names) request, as
// RocketMQ's broker picks by code. Batch is set for SEND_BATCH_MESSAGE.
//
// A header DecodeRequestFrame decoded typed (Command.Header) is returned
// as a copy, without a map.
func DecodeSendMessageRequest(c *Command) (*SendMessageRequestHeader, error) {
	var typed *SendMessageRequestHeader
	switch h := c.Header.(type) {
	case *SendMessageRequestHeader:
		if c.Code == SendMessage {
			typed = h
		}
	case *SendMessageRequestHeaderV2:
		if c.Code != SendMessage {
			typed = &h.SendMessageRequestHeader
		}
	}
	if typed != nil {
		h := *typed
		if c.Code == SendBatchMessage {
			h.Batch = true
		}
		return &h, nil
	}
	switch c.Code {
	case SendMessage:
		h := &SendMessageRequestHeader{}
		return h, h.Decode(c.ExtFields)
	case SendMessageV2, SendBatchMessage, SendReplyMessageV2:
		h := &SendMessageRequestHeaderV2{}
		err := h.Decode(c.ExtFields)
		if c.Code == SendBatchMessage {
			h.Batch = true
		}
		return &h.SendMessageRequestHeader, err
	}
	return nil, fmt.Errorf("%w: code %s is not a send", ErrBadField, RequestName(c.Code))
}

// SendMessageResponseHeader is a send's answer; the Go client reads msgId,
// queueId, queueOffset and transactionId.
type SendMessageResponseHeader struct {
	MsgID         string // required; the offset message id (store host + commit-log offset)
	QueueID       int32  // required
	QueueOffset   int64  // required
	TransactionID string
	BatchUniqID   string
	// MsgRegion and TraceOn are not header fields in RocketMQ but ext fields
	// its broker adds to a send answer (MSG_REGION, TRACE_ON); the Go client
	// reads them. Sent when not empty.
	MsgRegion string
	TraceOn   string
}

func (h *SendMessageResponseHeader) Encode() map[string]string {
	w := newFields(7)
	w.str("msgId", h.MsgID)
	w.i32("queueId", h.QueueID)
	w.i64("queueOffset", h.QueueOffset)
	w.optStr("transactionId", h.TransactionID)
	w.optStr("batchUniqId", h.BatchUniqID)
	w.optStr("MSG_REGION", h.MsgRegion)
	w.optStr("TRACE_ON", h.TraceOn)
	return w
}

func (h *SendMessageResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.MsgID = r.reqStr("msgId")
	h.QueueID = r.i32("queueId", true)
	h.QueueOffset = r.i64("queueOffset", true)
	h.TransactionID = r.str("transactionId")
	h.BatchUniqID = r.str("batchUniqId")
	h.MsgRegion = r.str("MSG_REGION")
	h.TraceOn = r.str("TRACE_ON")
	return r.err()
}

// ConsumerSendMsgBackRequestHeader is CONSUMER_SEND_MSG_BACK's header: a
// consumer hands a message back for retry.
type ConsumerSendMsgBackRequestHeader struct {
	Offset               int64  // required; the message's commit-log offset
	Group                string // required
	DelayLevel           int32  // required
	OriginMsgID          string
	OriginTopic          string
	UnitMode             bool
	MaxReconsumeTimes    int32
	HasMaxReconsumeTimes bool
	BrokerName           string // "bname"
}

func (h *ConsumerSendMsgBackRequestHeader) Encode() map[string]string {
	w := newFields(8)
	w.i64("offset", h.Offset)
	w.str("group", h.Group)
	w.i32("delayLevel", h.DelayLevel)
	w.optStr("originMsgId", h.OriginMsgID)
	w.optStr("originTopic", h.OriginTopic)
	w.boolean("unitMode", h.UnitMode)
	w.optI32("maxReconsumeTimes", h.MaxReconsumeTimes, h.HasMaxReconsumeTimes)
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *ConsumerSendMsgBackRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Offset = r.i64("offset", true)
	h.Group = r.reqStr("group")
	h.DelayLevel = r.i32("delayLevel", true)
	h.OriginMsgID = r.str("originMsgId")
	h.OriginTopic = r.str("originTopic")
	h.UnitMode = r.boolean("unitMode")
	h.HasMaxReconsumeTimes = r.has("maxReconsumeTimes") && m["maxReconsumeTimes"] != ""
	h.MaxReconsumeTimes = r.i32("maxReconsumeTimes", false)
	h.BrokerName = r.str("bname")
	return r.err()
}
