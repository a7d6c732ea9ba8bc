package broker

import (
	"fmt"

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
//     (handleQueryMessage stops at answerLimit);
//   - at the answer: bodyResponse and limitAnswer turn a body past
//     answerLimit into SYSTEM_ERROR saying so, never an unreadable frame.

// answerHeaderRoom is what answerLimit leaves for an answer's header.
const answerHeaderRoom = 64 << 10

// answerLimit is the largest answer body a client can read: the smaller of
// the broker's frame limit and RocketMQ's clients' (16 MiB), less room for
// the header.
func (b *Broker) answerLimit() int {
	return min(b.cfg.MaxFrameSize, protocol.DefaultMaxFrame) - answerHeaderRoom
}

// bodyResponse is protocol.NewBodyResponse bounded by answerLimit.
func (b *Broker) bodyResponse(req *protocol.Command, v any) *protocol.Command {
	return b.limitAnswer(req, protocol.NewBodyResponse(req, v))
}

// limitAnswer returns r, or SYSTEM_ERROR in its place when r's body is past
// answerLimit.
func (b *Broker) limitAnswer(req, r *protocol.Command) *protocol.Command {
	if limit := b.answerLimit(); len(r.Body) > limit {
		b.log.Warn("broker: an answer too large for a frame refused", "request", protocol.RequestName(req.Code),
			"bytes", len(r.Body), "limit", limit)
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf(
			"the answer to %s would take %d bytes, more than a frame allows (%d)", protocol.RequestName(req.Code), len(r.Body), limit))
	}
	return r
}
