package client

import (
	"context"
	"errors"
	"fmt"
)

// Errors of the client, matchable with errors.Is. Errors returned carry
// details (topic, broker, remark) around these.
var (
	// ErrNoRoute: the name servers know no route for the topic, or the
	// route has no queue that can be written (or read, for consumers).
	ErrNoRoute = errors.New("client: no route for topic")
	// ErrTimeout: a request got no answer in time. Errors carrying it
	// also match context.DeadlineExceeded.
	ErrTimeout = errors.New("client: request timed out")
	// ErrBrokerBusy: the broker refused the request for load
	// (SYSTEM_BUSY); retry later or elsewhere.
	ErrBrokerBusy = errors.New("client: broker busy")
	// ErrFlushDiskTimeout: the broker stored the message but could not
	// flush it to disk in time (sync flush); it may be lost in a crash.
	// Send returns the SendResult alongside this error.
	ErrFlushDiskTimeout = errors.New("client: broker flush to disk timed out")
	// ErrFlushSlaveTimeout: a sync master stored the message but no slave
	// acknowledged it in time. Send returns the SendResult too.
	ErrFlushSlaveTimeout = errors.New("client: broker flush to slave timed out")
	// ErrSlaveNotAvailable: a sync master stored the message but has no
	// slave to replicate to. Send returns the SendResult too.
	ErrSlaveNotAvailable = errors.New("client: no slave available")
	// ErrTopicNotExist: the broker does not know the topic.
	ErrTopicNotExist = errors.New("client: topic does not exist")
	// ErrMessageIllegal: the broker rejected the message (size, topic,
	// properties).
	ErrMessageIllegal = errors.New("client: message illegal")
	// ErrNotSupported: the peer does not serve this request code.
	ErrNotSupported = errors.New("client: request not supported by peer")
	// ErrConnection: the connection to the peer failed or was lost before
	// the answer came; the request may or may not have been applied.
	ErrConnection = errors.New("client: connection failed")
	// ErrClosed: the producer or consumer was closed.
	ErrClosed = errors.New("client: closed")
	// ErrNoOffset: an OffsetStore holds no offset for the queue.
	ErrNoOffset = errors.New("client: no stored offset")
	// ErrBrokerError: any other error answer of a broker or name server;
	// see *ResponseError for the code and remark.
	ErrBrokerError = errors.New("client: error response")
)

// ResponseError is an error answer from a broker or name server. It
// matches ErrBrokerError and the sentinel of its code (ErrBrokerBusy for
// SYSTEM_BUSY, ErrTopicNotExist, ...).
type ResponseError struct {
	Addr   string // the peer
	Code   int16  // RocketMQ response code
	Remark string // the peer's explanation
	kind   error  // the sentinel matching Code, or nil
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("client: %s answered code %d: %s", e.Addr, e.Code, e.Remark)
}

// Is matches ErrBrokerError and the sentinel of the code.
func (e *ResponseError) Is(target error) bool {
	return target == ErrBrokerError || (e.kind != nil && target == e.kind)
}

// timeoutError wraps ErrTimeout so it also matches context.DeadlineExceeded.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return "client: " + e.msg + ": request timed out" }
func (e *timeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}
