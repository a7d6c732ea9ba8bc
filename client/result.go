package client

import "fmt"

// SendStatus is how a broker stored a message (RocketMQ's SendStatus).
type SendStatus int

const (
	// SendOK: stored (and flushed or replicated, as the broker is set).
	SendOK SendStatus = iota
	// SendFlushDiskTimeout: stored, not flushed in time (sync flush).
	SendFlushDiskTimeout
	// SendFlushSlaveTimeout: stored, not replicated in time (sync master).
	SendFlushSlaveTimeout
	// SendSlaveNotAvailable: stored, no slave to replicate to.
	SendSlaveNotAvailable
)

func (s SendStatus) String() string {
	switch s {
	case SendOK:
		return "SEND_OK"
	case SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return fmt.Sprintf("SendStatus(%d)", int(s))
}

// SendResult is the broker's answer to one message.
type SendResult struct {
	Status SendStatus
	// MsgID is the message's unique id (its UNIQ_KEY property).
	MsgID string
	// OffsetMsgID is the broker's id of the stored message (store host
	// and commit-log offset).
	OffsetMsgID string
	// Queue is where the message went.
	Queue MessageQueue
	// QueueOffset is the message's index in Queue.
	QueueOffset int64
	// TransactionID is set for transactional messages.
	TransactionID string
}

func (r *SendResult) String() string {
	return fmt.Sprintf("%s %s %v@%d", r.Status, r.MsgID, r.Queue, r.QueueOffset)
}
