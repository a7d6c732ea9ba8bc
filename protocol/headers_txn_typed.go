package protocol

// AppendExt implements ExtHeader: END_TRANSACTION is sent once per
// transaction, so its header skips the map too (the fields Encode writes,
// in ascending key order).
func (h *EndTransactionRequestHeader) AppendExt(w *ExtWriter) {
	w.OptStr("bname", h.BrokerName)
	w.Int("commitLogOffset", h.CommitLogOffset)
	w.Int("commitOrRollback", int64(h.CommitOrRollback))
	w.Bool("fromTransactionCheck", h.FromTransactionCheck)
	w.Str("msgId", h.MsgID)
	w.Str("producerGroup", h.ProducerGroup)
	w.OptStr("topic", h.Topic)
	w.Int("tranStateTableOffset", h.TranStateTableOffset)
	w.OptStr("transactionId", h.TransactionID)
}
