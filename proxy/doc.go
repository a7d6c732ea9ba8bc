// Package proxy serves RocketMQ 5's gRPC protocol (apache.rocketmq.v2
// MessagingService, package rmqpb) in front of a Samsa cluster, as
// RocketMQ's proxy does in its cluster mode: the official RocketMQ 5
// clients (Java, Go, Node.js, ...) connect to it, and it speaks RocketMQ 4
// remoting to the brokers through package client, with routes from the
// name servers. It holds no messages of its own: any Samsa cluster (or
// several proxies in front of one) works, and the broker does not grow a
// second protocol.
//
// What maps to what:
//
//	QueryRoute             the topic's route; every broker's endpoints are the proxy's
//	QueryAssignment        one assignment per broker with readable queues (POP serves them)
//	SendMessage            a send by client.Producer: FIFO messages go to the queue the hash
//	                       of their message group picks, delivery timestamps become
//	                       TIMER_DELIVER_MS, transactional ones half messages of a
//	                       client.TransactionProducer
//	ReceiveMessage         a POP by client.PopConsumer with long polling; the stream is a
//	                       status, the messages, then the delivery timestamp
//	AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue
//	                       ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, CONSUMER_SEND_MSG_BACK
//	                       to the DLQ, by receipt handle
//	EndTransaction         END_TRANSACTION of the transaction the proxy holds (or the answer
//	                       to a check-back it relays)
//	Telemetry              settings both ways; a broker's check-back of a half message is
//	                       relayed to the producer's stream as RecoverOrphanedTransactionCommand
//	GetOffset, UpdateOffset, QueryOffset
//	                       a group's committed offset of a queue; a queue's first, next or
//	                       at-a-time offset
//
// PullMessage, RecallMessage and SyncLiteSubscription answer gRPC's
// Unimplemented. A receipt handle is "S1 <commit-log offset>
// <RocketMQ's extraInfo>", which names the broker, queue and offset.
//
// Bounds as remoting's: a message body above MaxMessageSize is refused,
// at most MaxReceives receives are held at once (beyond, TOO_MANY_REQUESTS),
// at most MaxStreams streams per connection and MaxSessions telemetry
// sessions. With ACL on, every call must carry RocketMQ 5's authorization
// header (MQv2-HMAC-SHA1 over x-mq-date-time) of an account of the
// accounts file, with rights on the topics and groups it names.
//
// A Server is safe for concurrent use; Close stops it.
package proxy
