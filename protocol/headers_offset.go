package protocol

// QueryConsumerOffsetRequestHeader is QUERY_CONSUMER_OFFSET's header.
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup        string // required
	Topic                string // required
	QueueID              int32  // required
	SetZeroIfNotFound    bool
	HasSetZeroIfNotFound bool   // sent at all (Java treats absent as true)
	BrokerName           string // "bname"
}

func (h *QueryConsumerOffsetRequestHeader) Encode() map[string]string {
	w := newFields(5)
	w.str("consumerGroup", h.ConsumerGroup)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	if h.HasSetZeroIfNotFound {
		w.boolean("setZeroIfNotFound", h.SetZeroIfNotFound)
	}
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *QueryConsumerOffsetRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.HasSetZeroIfNotFound = r.has("setZeroIfNotFound")
	h.SetZeroIfNotFound = r.boolean("setZeroIfNotFound")
	h.BrokerName = r.str("bname")
	return r.err()
}

// OffsetResponseHeader is the {"offset": n} answer of QUERY_CONSUMER_OFFSET,
// GET_MAX_OFFSET, GET_MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP.
type OffsetResponseHeader struct {
	Offset int64 // required
}

func (h *OffsetResponseHeader) Encode() map[string]string {
	w := newFields(1)
	w.i64("offset", h.Offset)
	return w
}

func (h *OffsetResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Offset = r.i64("offset", true)
	return r.err()
}

// The per-request names of the offset answer.
type (
	QueryConsumerOffsetResponseHeader = OffsetResponseHeader
	GetMaxOffsetResponseHeader        = OffsetResponseHeader
	GetMinOffsetResponseHeader        = OffsetResponseHeader
	SearchOffsetResponseHeader        = OffsetResponseHeader
)

// UpdateConsumerOffsetRequestHeader is UPDATE_CONSUMER_OFFSET's header (the
// Go client sends it one-way).
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string // required
	Topic         string // required
	QueueID       int32  // required
	CommitOffset  int64  // required
	BrokerName    string // "bname"
}

func (h *UpdateConsumerOffsetRequestHeader) Encode() map[string]string {
	w := newFields(5)
	w.str("consumerGroup", h.ConsumerGroup)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.i64("commitOffset", h.CommitOffset)
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *UpdateConsumerOffsetRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.CommitOffset = r.i64("commitOffset", true)
	h.BrokerName = r.str("bname")
	return r.err()
}

// UpdateConsumerOffsetResponseHeader is empty.
type UpdateConsumerOffsetResponseHeader struct{}

func (h *UpdateConsumerOffsetResponseHeader) Encode() map[string]string { return nil }
func (h *UpdateConsumerOffsetResponseHeader) Decode(map[string]string) error {
	return nil
}

// QueueRequestHeader is the (topic, queueId) header of GET_MAX_OFFSET,
// GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME.
type QueueRequestHeader struct {
	Topic      string // required
	QueueID    int32  // required
	BrokerName string // "bname"
}

func (h *QueueRequestHeader) Encode() map[string]string {
	w := newFields(3)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *QueueRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.BrokerName = r.str("bname")
	return r.err()
}

// The per-request names of the (topic, queueId) request.
type (
	GetMinOffsetRequestHeader            = QueueRequestHeader
	GetEarliestMsgStoretimeRequestHeader = QueueRequestHeader
)

// GetMaxOffsetRequestHeader is GET_MAX_OFFSET's header.
type GetMaxOffsetRequestHeader struct {
	Topic      string // required
	QueueID    int32  // required
	Committed  bool   // Java default true: only offsets already dispatched
	BrokerName string // "bname"
}

func (h *GetMaxOffsetRequestHeader) Encode() map[string]string {
	w := newFields(4)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.boolean("committed", h.Committed)
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *GetMaxOffsetRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.Committed = r.boolOr("committed", true)
	h.BrokerName = r.str("bname")
	return r.err()
}

// SearchOffsetRequestHeader is SEARCH_OFFSET_BY_TIMESTAMP's header.
type SearchOffsetRequestHeader struct {
	Topic        string // required
	QueueID      int32  // required
	Timestamp    int64  // required; ms since the epoch
	BoundaryType string // "LOWER" (default) or "UPPER"
	BrokerName   string // "bname"
}

func (h *SearchOffsetRequestHeader) Encode() map[string]string {
	w := newFields(5)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.i64("timestamp", h.Timestamp)
	w.optStr("boundaryType", h.BoundaryType)
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *SearchOffsetRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.Timestamp = r.i64("timestamp", true)
	h.BoundaryType = r.str("boundaryType")
	h.BrokerName = r.str("bname")
	return r.err()
}

// GetEarliestMsgStoretimeResponseHeader answers GET_EARLIEST_MSG_STORETIME.
type GetEarliestMsgStoretimeResponseHeader struct {
	Timestamp int64 // required
}

func (h *GetEarliestMsgStoretimeResponseHeader) Encode() map[string]string {
	w := newFields(1)
	w.i64("timestamp", h.Timestamp)
	return w
}

func (h *GetEarliestMsgStoretimeResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Timestamp = r.i64("timestamp", true)
	return r.err()
}
