package client

import (
	"errors"
	"fmt"

	"github.com/samsamq/samsa/client/internal/remoting"
	"github.com/samsamq/samsa/protocol"
)

// Errors of the client, matchable with errors.Is. Errors returned carry
// details (topic, broker, remark) around these.
var (
	// ErrNoRoute: the name servers know no route for the topic, or the
	// route has no queue that can be written (or read, for consumers).
	ErrNoRoute = errors.New("client: no route for topic")
	// ErrTimeout: a request got no answer in time. Errors carrying it
	// also match context.DeadlineExceeded.
	ErrTimeout = remoting.ErrTimeout
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
	ErrConnection = remoting.ErrConnection
	// ErrClosed: the producer or consumer was closed.
	ErrClosed = remoting.ErrClosed
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
	Code   int32  // RocketMQ response code
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

// responseError turns an error answer into a *ResponseError.
func responseError(addr string, c *protocol.Command) error {
	e := &ResponseError{Addr: addr, Code: c.Code, Remark: c.Remark}
	switch c.Code {
	case protocol.SystemBusy, protocol.FlowControl, protocol.PollingFull:
		e.kind = ErrBrokerBusy
	case protocol.FlushDiskTimeout:
		e.kind = ErrFlushDiskTimeout
	case protocol.FlushSlaveTimeout:
		e.kind = ErrFlushSlaveTimeout
	case protocol.SlaveNotAvailable:
		e.kind = ErrSlaveNotAvailable
	case protocol.TopicNotExist:
		e.kind = ErrTopicNotExist
	case protocol.MessageIllegal:
		e.kind = ErrMessageIllegal
	case protocol.RequestCodeNotSupported:
		e.kind = ErrNotSupported
	}
	return e
}

// retriable reports whether a failed send may succeed on another broker
// (RocketMQ's retryResponseCodes, plus connection failures).
func retriable(err error) bool {
	if errors.Is(err, ErrConnection) {
		return true
	}
	var re *ResponseError
	if errors.As(err, &re) {
		switch re.Code {
		case protocol.TopicNotExist, protocol.ServiceNotAvailable, protocol.SystemError, protocol.SystemBusy,
			protocol.NoPermission, protocol.NoBuyerID, protocol.NotInCurrentUnit, protocol.GoAway:
			return true
		}
	}
	return false
}
