package protocol

// commitOrRollback values of END_TRANSACTION (RocketMQ MessageSysFlag's
// transaction type bits).
const (
	TransactionNotType  int32 = 0
	TransactionPrepared int32 = 0x1 << 2
	TransactionCommit   int32 = 0x2 << 2
	TransactionRollback int32 = 0x3 << 2
)

// EndTransactionRequestHeader is END_TRANSACTION's header (usually one-way):
// the producer's verdict on a half message.
type EndTransactionRequestHeader struct {
	Topic                string
	ProducerGroup        string // required
	TranStateTableOffset int64  // required; the half message's queue offset
	CommitLogOffset      int64  // required; the half message's commit-log offset
	CommitOrRollback     int32  // required; TransactionCommit, TransactionRollback, TransactionNotType
	FromTransactionCheck bool
	MsgID                string // required
	TransactionID        string
	BrokerName           string // "bname"
}

func (h *EndTransactionRequestHeader) Encode() map[string]string {
	w := newFields(9)
	w.optStr("topic", h.Topic)
	w.str("producerGroup", h.ProducerGroup)
	w.i64("tranStateTableOffset", h.TranStateTableOffset)
	w.i64("commitLogOffset", h.CommitLogOffset)
	w.i32("commitOrRollback", h.CommitOrRollback)
	w.boolean("fromTransactionCheck", h.FromTransactionCheck)
	w.str("msgId", h.MsgID)
	w.optStr("transactionId", h.TransactionID)
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *EndTransactionRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.str("topic")
	h.ProducerGroup = r.reqStr("producerGroup")
	h.TranStateTableOffset = r.i64("tranStateTableOffset", true)
	h.CommitLogOffset = r.i64("commitLogOffset", true)
	h.CommitOrRollback = r.i32("commitOrRollback", true)
	h.FromTransactionCheck = r.boolean("fromTransactionCheck")
	h.MsgID = r.reqStr("msgId")
	h.TransactionID = r.str("transactionId")
	h.BrokerName = r.str("bname")
	return r.err()
}

// CheckTransactionStateRequestHeader is CHECK_TRANSACTION_STATE's header:
// the broker asks a producer about a half message it has not settled.
type CheckTransactionStateRequestHeader struct {
	Topic                string
	TranStateTableOffset int64 // required
	CommitLogOffset      int64 // required
	MsgID                string
	TransactionID        string
	OffsetMsgID          string
	BrokerName           string // "bname"
}

func (h *CheckTransactionStateRequestHeader) Encode() map[string]string {
	w := newFields(7)
	w.optStr("topic", h.Topic)
	w.i64("tranStateTableOffset", h.TranStateTableOffset)
	w.i64("commitLogOffset", h.CommitLogOffset)
	w.optStr("msgId", h.MsgID)
	w.optStr("transactionId", h.TransactionID)
	w.optStr("offsetMsgId", h.OffsetMsgID)
	w.optStr("bname", h.BrokerName)
	return w
}

func (h *CheckTransactionStateRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.str("topic")
	h.TranStateTableOffset = r.i64("tranStateTableOffset", true)
	h.CommitLogOffset = r.i64("commitLogOffset", true)
	h.MsgID = r.str("msgId")
	h.TransactionID = r.str("transactionId")
	h.OffsetMsgID = r.str("offsetMsgId")
	h.BrokerName = r.str("bname")
	return r.err()
}
