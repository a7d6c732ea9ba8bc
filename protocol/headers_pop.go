package protocol

// PopMessageRequestHeader is POP_MESSAGE's header (RocketMQ 5).
type PopMessageRequestHeader struct {
	ConsumerGroup string // required
	Topic         string // required
	QueueID       int32  // required; -1: any queue
	MaxMsgNums    int32  // required
	InvisibleTime int64  // required, ms
	PollTime      int64  // required, ms
	BornTime      int64  // required, ms
	InitMode      int32  // required: 0 MIN, 1 MAX
	ExpType       string
	Exp           string
	Order         bool
	AttemptID     string
}

func (h *PopMessageRequestHeader) Encode() map[string]string {
	w := newFields(12)
	w.str("consumerGroup", h.ConsumerGroup)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.i32("maxMsgNums", h.MaxMsgNums)
	w.i64("invisibleTime", h.InvisibleTime)
	w.i64("pollTime", h.PollTime)
	w.i64("bornTime", h.BornTime)
	w.i32("initMode", h.InitMode)
	w.optStr("expType", h.ExpType)
	w.optStr("exp", h.Exp)
	if h.Order {
		w.boolean("order", true)
	}
	w.optStr("attemptId", h.AttemptID)
	return w
}

func (h *PopMessageRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.MaxMsgNums = r.i32("maxMsgNums", true)
	h.InvisibleTime = r.i64("invisibleTime", true)
	h.PollTime = r.i64("pollTime", true)
	h.BornTime = r.i64("bornTime", true)
	h.InitMode = r.i32("initMode", true)
	h.ExpType = r.str("expType")
	h.Exp = r.str("exp")
	h.Order = r.boolean("order")
	h.AttemptID = r.str("attemptId")
	return r.err()
}

// PopMessageResponseHeader is POP_MESSAGE's answer header. A client
// builds each message's receipt handle (extraInfo) from it.
type PopMessageResponseHeader struct {
	PopTime         int64 // required, ms
	InvisibleTime   int64 // required, ms
	ReviveQid       int32 // required
	RestNum         int64 // required
	StartOffsetInfo string
	MsgOffsetInfo   string
	OrderCountInfo  string
}

func (h *PopMessageResponseHeader) Encode() map[string]string {
	w := newFields(7)
	w.i64("popTime", h.PopTime)
	w.i64("invisibleTime", h.InvisibleTime)
	w.i32("reviveQid", h.ReviveQid)
	w.i64("restNum", h.RestNum)
	w.optStr("startOffsetInfo", h.StartOffsetInfo)
	w.optStr("msgOffsetInfo", h.MsgOffsetInfo)
	w.optStr("orderCountInfo", h.OrderCountInfo)
	return w
}

func (h *PopMessageResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.PopTime = r.i64("popTime", true)
	h.InvisibleTime = r.i64("invisibleTime", true)
	h.ReviveQid = r.i32("reviveQid", true)
	h.RestNum = r.i64("restNum", true)
	h.StartOffsetInfo = r.str("startOffsetInfo")
	h.MsgOffsetInfo = r.str("msgOffsetInfo")
	h.OrderCountInfo = r.str("orderCountInfo")
	return r.err()
}

// AckMessageRequestHeader is ACK_MESSAGE's header.
type AckMessageRequestHeader struct {
	ConsumerGroup string // required
	Topic         string // required
	QueueID       int32  // required
	ExtraInfo     string // required: the receipt handle
	Offset        int64  // required: the message's queue offset
	BrokerName    string // "bname"
}

func (h *AckMessageRequestHeader) Encode() map[string]string {
	w := newFields(6)
	w.str("consumerGroup", h.ConsumerGroup)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.str("extraInfo", h.ExtraInfo)
	w.i64("offset", h.Offset)
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *AckMessageRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.ExtraInfo = r.reqStr("extraInfo")
	h.Offset = r.i64("offset", true)
	h.BrokerName = r.str("bname")
	return r.err()
}

// ChangeInvisibleTimeRequestHeader is CHANGE_MESSAGE_INVISIBLETIME's
// header.
type ChangeInvisibleTimeRequestHeader struct {
	ConsumerGroup string // required
	Topic         string // required
	QueueID       int32  // required
	ExtraInfo     string // required
	Offset        int64  // required
	InvisibleTime int64  // required, ms from now
	BrokerName    string // "bname"
}

func (h *ChangeInvisibleTimeRequestHeader) Encode() map[string]string {
	w := newFields(7)
	w.str("consumerGroup", h.ConsumerGroup)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.str("extraInfo", h.ExtraInfo)
	w.i64("offset", h.Offset)
	w.i64("invisibleTime", h.InvisibleTime)
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *ChangeInvisibleTimeRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.ExtraInfo = r.reqStr("extraInfo")
	h.Offset = r.i64("offset", true)
	h.InvisibleTime = r.i64("invisibleTime", true)
	h.BrokerName = r.str("bname")
	return r.err()
}

// ChangeInvisibleTimeResponseHeader is its answer: the message's new pop
// time (its handle's identity from now on).
type ChangeInvisibleTimeResponseHeader struct {
	PopTime       int64 // required
	InvisibleTime int64 // required
	ReviveQid     int32 // required
}

func (h *ChangeInvisibleTimeResponseHeader) Encode() map[string]string {
	w := newFields(3)
	w.i64("popTime", h.PopTime)
	w.i64("invisibleTime", h.InvisibleTime)
	w.i32("reviveQid", h.ReviveQid)
	return w
}

func (h *ChangeInvisibleTimeResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.PopTime = r.i64("popTime", true)
	h.InvisibleTime = r.i64("invisibleTime", true)
	h.ReviveQid = r.i32("reviveQid", true)
	return r.err()
}
