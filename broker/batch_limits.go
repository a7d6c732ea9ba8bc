package broker

import (
	"encoding/binary"
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// Batch limits, checked before anything of a batch is stored.
//
//   - The whole batch body counts against maxMessageSize, as in RocketMQ
//     (MessageExtEncoder.encode(MessageExtBatch): "message body size
//     exceeded" past maxMessageSize; the Java producer refuses such a
//     batch before sending it). A client splits a larger batch.
//   - The answer carries one 32-character offsetMsgId per message, comma
//     separated, in its header: a batch of many small messages has an
//     answer that grows with it. It must fit the header's 24-bit length
//     field and a frame the client will read (RocketMQ's clients read
//     frames of up to 16 MiB). A batch whose answer would not fit is
//     refused: stored and never answered, the client would time out and
//     send it again, a duplicate of every message in it.

//   - A batch holds at most MaxBatchMessages messages, counted before any
//     is decoded: each message costs the broker a few hundred bytes of
//     bookkeeping beyond its bytes on the wire, so a frame of hundreds of
//     thousands of empty messages would cost it many times the frame.

// MaxBatchMessages bounds the messages of one SEND_BATCH_MESSAGE. RocketMQ
// has no such bound (its batches are bounded by maxMessageSize only); a
// batch past it is refused with MESSAGE_ILLEGAL and the client splits it.
const MaxBatchMessages = 1 << 16

// batchAnswerOverhead bounds the answer header's fields other than the
// msgId list (code, remark, queueId, queueOffset, region, trace, the
// serialization's own bytes), generously.
const batchAnswerOverhead = 1 << 10

// batchAnswerLimit is the largest answer header a batch may need.
func (b *Broker) batchAnswerLimit() int {
	return min(b.cfg.MaxFrameSize, protocol.DefaultMaxFrame, 1<<24-1) - 8 - batchAnswerOverhead
}

// refuseBatchBody refuses a batch body over maxMessageSize.
func (b *Broker) refuseBatchBody(req *protocol.Command) *protocol.Command {
	if len(req.Body) <= b.cfg.MaxMessageSize {
		return nil
	}
	return protocol.NewResponse(req, protocol.MessageIllegal, fmt.Sprintf(
		"the message is illegal: batch of %d bytes exceeds maxMessageSize %dB; send it as several smaller batches",
		len(req.Body), b.cfg.MaxMessageSize))
}

// refuseBatchAnswer refuses a batch of n messages whose answer would not
// fit a frame.
func (b *Broker) refuseBatchAnswer(req *protocol.Command, n int) *protocol.Command {
	need := n * (32 + 1)
	if limit := b.batchAnswerLimit(); need > limit {
		return protocol.NewResponse(req, protocol.MessageIllegal, fmt.Sprintf(
			"the message is illegal: the answer to a batch of %d messages (%d bytes of msgIds) would not fit a frame (%d bytes); send at most %d messages in a batch",
			n, need, limit, limit/33))
	}
	return nil
}

// refuseBatchCount refuses a batch body of more than MaxBatchMessages
// items, walking only the items' length fields (nothing is allocated); a
// body whose lengths do not add up is left to decodeBatch's error.
func refuseBatchCount(req *protocol.Command) *protocol.Command {
	n, body := 0, req.Body
	for off := 0; off+4 <= len(body); n++ {
		if n == MaxBatchMessages {
			return protocol.NewResponse(req, protocol.MessageIllegal, fmt.Sprintf(
				"the message is illegal: a batch holds more than %d messages; send it as several smaller batches", MaxBatchMessages))
		}
		total := int(int32(binary.BigEndian.Uint32(body[off:])))
		if total < batchItemFixed {
			return nil
		}
		off += total
	}
	return nil
}
