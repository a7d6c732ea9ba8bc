package broker

import (
	"fmt"
	"log/slog"

	"github.com/samsamq/samsa/protocol"
)

// An answer is never larger than a frame a client reads: an
// answer past it is never read, and the client waits out its timeout and
// asks again, or, for a broker's registration, loses every route. The
// answers that grow with what clients put in are bounded twice:
//
//   - at the source: topics (MaxTopics), subscription groups (MaxGroups),
//     the consumer-offset table (offsets.DefaultMaxBytes), names
//     (ValidateTopic, ValidateGroup), client ids (MaxClientIDLength), lock
//     batches (MaxLockBatch), batches (batch_limits.go), query results
//     (handleQueryMessage stops at answers.limit);
//   - at the answer: answers.body and answers.bounded turn a body past
//     answers.limit into SYSTEM_ERROR saying so, never an unreadable frame.

// answerHeaderRoom is what answers.limit leaves for an answer's header.
const answerHeaderRoom = 64 << 10

// answers bounds what the request handlers answer (the frame limit and a
// logger are all it needs); every handler group holds a copy.
type answers struct {
	maxFrame int
	log      *slog.Logger
}

// limit is the largest answer body a client can read: the smaller of the
// broker's frame limit and RocketMQ's clients' (16 MiB), less room for the
// header.
func (a answers) limit() int {
	return min(a.maxFrame, protocol.DefaultMaxFrame) - answerHeaderRoom
}

// body is protocol.NewBodyResponse bounded by limit.
func (a answers) body(req *protocol.Command, v any) *protocol.Command {
	return a.bounded(req, protocol.NewBodyResponse(req, v))
}

// bounded returns r, or SYSTEM_ERROR in its place when r's body is past
// limit.
func (a answers) bounded(req, r *protocol.Command) *protocol.Command {
	if limit := a.limit(); len(r.Body) > limit {
		a.log.Warn("broker: an answer too large for a frame refused", "request", protocol.RequestName(req.Code),
			"bytes", len(r.Body), "limit", limit)
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf(
			"the answer to %s would take %d bytes, more than a frame allows (%d)", protocol.RequestName(req.Code), len(r.Body), limit))
	}
	return r
}
