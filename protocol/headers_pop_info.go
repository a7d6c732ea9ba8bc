package protocol

// PeekMessageRequestHeader is PEEK_MESSAGE's header: read a group's next
// messages without handing them out.
type PeekMessageRequestHeader struct {
	ConsumerGroup string // required
	Topic         string // required
	QueueID       int32  // required; -1: any queue
	MaxMsgNums    int32  // required
}

func (h *PeekMessageRequestHeader) Encode() map[string]string {
	w := newFields(4)
	w.str("consumerGroup", h.ConsumerGroup)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.i32("maxMsgNums", h.MaxMsgNums)
	return w
}

func (h *PeekMessageRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.MaxMsgNums = r.i32("maxMsgNums", true)
	return r.err()
}

// NotificationRequestHeader is NOTIFICATION's header: wait up to
// PollTime until a group has something to pop.
type NotificationRequestHeader struct {
	ConsumerGroup string // required
	Topic         string // required
	QueueID       int32  // required; -1: any queue
	PollTime      int64  // required, ms
	BornTime      int64  // required, ms
	Order         bool
	AttemptID     string
	ExpType       string
	Exp           string
}

func (h *NotificationRequestHeader) Encode() map[string]string {
	w := newFields(9)
	w.str("consumerGroup", h.ConsumerGroup)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.i64("pollTime", h.PollTime)
	w.i64("bornTime", h.BornTime)
	if h.Order {
		w.boolean("order", true)
	}
	w.optStr("attemptId", h.AttemptID)
	w.optStr("expType", h.ExpType)
	w.optStr("exp", h.Exp)
	return w
}

func (h *NotificationRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.PollTime = r.i64("pollTime", true)
	h.BornTime = r.i64("bornTime", true)
	h.Order = r.boolean("order")
	h.AttemptID = r.str("attemptId")
	h.ExpType = r.str("expType")
	h.Exp = r.str("exp")
	return r.err()
}

// NotificationResponseHeader is NOTIFICATION's answer header.
type NotificationResponseHeader struct {
	HasMsg      bool // required
	PollingFull bool
}

func (h *NotificationResponseHeader) Encode() map[string]string {
	w := newFields(2)
	w.boolean("hasMsg", h.HasMsg)
	if h.PollingFull {
		w.boolean("pollingFull", true)
	}
	return w
}

func (h *NotificationResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.HasMsg = r.boolean("hasMsg")
	h.PollingFull = r.boolean("pollingFull")
	return r.err()
}

// PollingInfoRequestHeader is POLLING_INFO's header: how many pops wait on
// a group's queue.
type PollingInfoRequestHeader struct {
	ConsumerGroup string // required
	Topic         string // required
	QueueID       int32  // required; -1: any queue
}

func (h *PollingInfoRequestHeader) Encode() map[string]string {
	w := newFields(3)
	w.str("consumerGroup", h.ConsumerGroup)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	return w
}

func (h *PollingInfoRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	return r.err()
}

// PollingInfoResponseHeader is POLLING_INFO's answer header.
type PollingInfoResponseHeader struct {
	PollingNum int32 // required
}

func (h *PollingInfoResponseHeader) Encode() map[string]string {
	w := newFields(1)
	w.i32("pollingNum", h.PollingNum)
	return w
}

func (h *PollingInfoResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.PollingNum = r.i32("pollingNum", true)
	return r.err()
}
