package protocol

// RocketMQ 5's POP family (RequestCode; RIP-19). They pass int16, so they
// travel only in JSON headers (RocketMQSerializable writes a short).
const (
	PopMessage                 RequestCode = 200050 // POP_MESSAGE
	AckMessage                 RequestCode = 200051 // ACK_MESSAGE
	PeekMessage                RequestCode = 200052 // PEEK_MESSAGE
	ChangeMessageInvisibleTime RequestCode = 200053 // CHANGE_MESSAGE_INVISIBLETIME
	Notification               RequestCode = 200054 // NOTIFICATION
	PollingInfo                RequestCode = 200055 // POLLING_INFO
	PopRollback                RequestCode = 200056 // POP_ROLLBACK
	BatchAckMessage            RequestCode = 200151 // BATCH_ACK_MESSAGE
)

func init() {
	for c, n := range map[RequestCode]string{
		PopMessage: "POP_MESSAGE", AckMessage: "ACK_MESSAGE", PeekMessage: "PEEK_MESSAGE",
		ChangeMessageInvisibleTime: "CHANGE_MESSAGE_INVISIBLETIME", Notification: "NOTIFICATION",
		PollingInfo: "POLLING_INFO", PopRollback: "POP_ROLLBACK", BatchAckMessage: "BATCH_ACK_MESSAGE",
	} {
		requestNames[c] = n
	}
}
