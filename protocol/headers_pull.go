package protocol

// PULL_MESSAGE sysFlag bits (RocketMQ PullSysFlag).
const (
	PullFlagCommitOffset    int32 = 0x1      // the request carries the consumer's commit offset
	PullFlagSuspend         int32 = 0x1 << 1 // hold the pull (long-poll) when nothing is there
	PullFlagSubscription    int32 = 0x1 << 2 // the request carries its subscription expression
	PullFlagClassFilter     int32 = 0x1 << 3 // class filter mode
	PullFlagLitePullMessage int32 = 0x1 << 4 // from a lite pull consumer
)

// BuildPullSysFlag composes a PULL_MESSAGE sysFlag.
func BuildPullSysFlag(commitOffset, suspend, subscription, classFilter bool) int32 {
	var f int32
	if commitOffset {
		f |= PullFlagCommitOffset
	}
	if suspend {
		f |= PullFlagSuspend
	}
	if subscription {
		f |= PullFlagSubscription
	}
	if classFilter {
		f |= PullFlagClassFilter
	}
	return f
}

// PullMessageRequestHeader is PULL_MESSAGE's header.
type PullMessageRequestHeader struct {
	ConsumerGroup        string // required
	Topic                string // required
	QueueID              int32  // required
	QueueOffset          int64  // required; the first queue offset wanted
	MaxMsgNums           int32  // required
	SysFlag              int32  // required; PullFlag* bits
	CommitOffset         int64  // required; meaningful with PullFlagCommitOffset
	SuspendTimeoutMillis int64  // required; how long the broker may hold the pull
	Subscription         string // the expression ("*", "TagA || TagB", SQL)
	SubVersion           int64  // required
	ExpressionType       string // "TAG" or "SQL92"
	MaxMsgBytes          int32
	HasMaxMsgBytes       bool
	BrokerName           string // "bname"
	// ClientChecksCRC ("crcChecked", a Samsa field other brokers ignore):
	// the client verifies every record's CRC itself, so the broker may
	// send the records from its files without reading them.
	ClientChecksCRC bool
	// AskBrokerCheck ("crcChecked" = "false"): this pull's records must be
	// read and checked by the broker whatever the connection said: the
	// client found a corrupt record in an answer sent from the files and
	// asks again, so the broker quarantines it, repairs it from a peer
	// replica or moves the consumer past it.
	AskBrokerCheck bool
}

func (h *PullMessageRequestHeader) Encode() map[string]string {
	w := newFields(14)
	w.str("consumerGroup", h.ConsumerGroup)
	w.str("topic", h.Topic)
	w.i32("queueId", h.QueueID)
	w.i64("queueOffset", h.QueueOffset)
	w.i32("maxMsgNums", h.MaxMsgNums)
	w.i32("sysFlag", h.SysFlag)
	w.i64("commitOffset", h.CommitOffset)
	w.i64("suspendTimeoutMillis", h.SuspendTimeoutMillis)
	w.optStr("subscription", h.Subscription)
	w.i64("subVersion", h.SubVersion)
	w.optStr("expressionType", h.ExpressionType)
	w.optI32("maxMsgBytes", h.MaxMsgBytes, h.HasMaxMsgBytes)
	w.optStr("bname", h.BrokerName)
	if h.ClientChecksCRC {
		w.str(ExtClientChecksCRC, "true")
	} else if h.AskBrokerCheck {
		w.str(ExtClientChecksCRC, "false")
	}
	return w
}

func (h *PullMessageRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ConsumerGroup = r.reqStr("consumerGroup")
	h.Topic = r.reqStr("topic")
	h.QueueID = r.i32("queueId", true)
	h.QueueOffset = r.i64("queueOffset", true)
	h.MaxMsgNums = r.i32("maxMsgNums", true)
	h.SysFlag = r.i32("sysFlag", true)
	h.CommitOffset = r.i64("commitOffset", true)
	h.SuspendTimeoutMillis = r.i64("suspendTimeoutMillis", true)
	h.Subscription = r.str("subscription")
	h.SubVersion = r.i64("subVersion", true)
	h.ExpressionType = r.str("expressionType")
	h.HasMaxMsgBytes = r.has("maxMsgBytes") && m["maxMsgBytes"] != ""
	h.MaxMsgBytes = r.i32("maxMsgBytes", false)
	h.BrokerName = r.str("bname")
	switch r.str(ExtClientChecksCRC) {
	case "true":
		h.ClientChecksCRC = true
	case "false":
		h.AskBrokerCheck = true
	}
	return r.err()
}

// HasFlag reports whether the sysFlag has bit f.
func (h *PullMessageRequestHeader) HasFlag(f int32) bool { return h.SysFlag&f != 0 }

// PullMessageResponseHeader is PULL_MESSAGE's answer header (with
// SUCCESS, PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY or PULL_OFFSET_MOVED); the
// body of a SUCCESS is the stored messages back to back.
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID int64 // required; 0 master, else a slave to read from next
	NextBeginOffset      int64 // required
	MinOffset            int64 // required
	MaxOffset            int64 // required
	TopicSysFlag         int32 // sent when not 0
	GroupSysFlag         int32 // sent when not 0
}

func (h *PullMessageResponseHeader) Encode() map[string]string {
	w := newFields(6)
	w.i64("suggestWhichBrokerId", h.SuggestWhichBrokerID)
	w.i64("nextBeginOffset", h.NextBeginOffset)
	w.i64("minOffset", h.MinOffset)
	w.i64("maxOffset", h.MaxOffset)
	w.optI32("topicSysFlag", h.TopicSysFlag, h.TopicSysFlag != 0)
	w.optI32("groupSysFlag", h.GroupSysFlag, h.GroupSysFlag != 0)
	return w
}

func (h *PullMessageResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.SuggestWhichBrokerID = r.i64("suggestWhichBrokerId", true)
	h.NextBeginOffset = r.i64("nextBeginOffset", true)
	h.MinOffset = r.i64("minOffset", true)
	h.MaxOffset = r.i64("maxOffset", true)
	h.TopicSysFlag = r.i32("topicSysFlag", false)
	h.GroupSysFlag = r.i32("groupSysFlag", false)
	return r.err()
}

// QueryMessageRequestHeader is QUERY_MESSAGE's header: messages of a topic by
// key within a time range.
type QueryMessageRequestHeader struct {
	Topic          string // required
	Key            string // required
	MaxNum         int32  // required
	BeginTimestamp int64  // required
	EndTimestamp   int64  // required
}

func (h *QueryMessageRequestHeader) Encode() map[string]string {
	w := newFields(5)
	w.str("topic", h.Topic)
	w.str("key", h.Key)
	w.i32("maxNum", h.MaxNum)
	w.i64("beginTimestamp", h.BeginTimestamp)
	w.i64("endTimestamp", h.EndTimestamp)
	return w
}

func (h *QueryMessageRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.reqStr("topic")
	h.Key = r.reqStr("key")
	h.MaxNum = r.i32("maxNum", true)
	h.BeginTimestamp = r.i64("beginTimestamp", true)
	h.EndTimestamp = r.i64("endTimestamp", true)
	return r.err()
}

// QueryMessageResponseHeader answers QUERY_MESSAGE; the body holds the
// messages found.
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64 // required
	IndexLastUpdatePhyoffset int64 // required
}

func (h *QueryMessageResponseHeader) Encode() map[string]string {
	w := newFields(2)
	w.i64("indexLastUpdateTimestamp", h.IndexLastUpdateTimestamp)
	w.i64("indexLastUpdatePhyoffset", h.IndexLastUpdatePhyoffset)
	return w
}

func (h *QueryMessageResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.IndexLastUpdateTimestamp = r.i64("indexLastUpdateTimestamp", true)
	h.IndexLastUpdatePhyoffset = r.i64("indexLastUpdatePhyoffset", true)
	return r.err()
}

// ViewMessageRequestHeader is VIEW_MESSAGE_BY_ID's header: one message by
// its commit-log offset (decoded from an offset message id).
type ViewMessageRequestHeader struct {
	Topic  string
	Offset int64 // required
}

func (h *ViewMessageRequestHeader) Encode() map[string]string {
	w := newFields(2)
	w.optStr("topic", h.Topic)
	w.i64("offset", h.Offset)
	return w
}

func (h *ViewMessageRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.str("topic")
	h.Offset = r.i64("offset", true)
	return r.err()
}
