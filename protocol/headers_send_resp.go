package protocol

import "encoding/binary"

// A client's side of the send path without maps: a send's answer decoded
// from the frame straight into a SendMessageResponseHeader. Like the
// request side (headers_send_typed.go) it follows the map path exactly:
// any answer it does not take whole (a key the header does not know, a
// required field missing, a number that does not parse) is decoded as
// DecodeFrame decodes it, and SendMessageResponseHeader.Decode then
// reports it as before.

// FrameOpaque reads a frame's opaque and flag (a frame as ReadFrame
// returns it) without decoding the rest. ok is false when the header is
// not RocketMQ's binary serialization or is too short; DecodeFrame then
// says why.
func FrameOpaque(frame []byte) (opaque, flag int32, ok bool) {
	if len(frame) < 4+binaryFixed || SerializeType(frame[0]) != SerializeRocketMQ {
		return 0, 0, false
	}
	if int(binary.BigEndian.Uint32(frame)&maxHeaderLength) < binaryFixed {
		return 0, 0, false
	}
	h := frame[4:]
	return int32(binary.BigEndian.Uint32(h[5:])), int32(binary.BigEndian.Uint32(h[9:])), true
}

// DecodeSendResponseFrame is DecodeFrame for the answer to a single send
// (SEND_MESSAGE, SEND_MESSAGE_V2): when the ext fields are those of a
// SendMessageResponseHeader alone, they are decoded into Command.Header
// (a *SendMessageResponseHeader) and ExtFields stays nil. Every other
// frame decodes as with DecodeFrame.
func DecodeSendResponseFrame(frame []byte) (*Command, error) {
	if len(frame) >= 4 && SerializeType(frame[0]) == SerializeRocketMQ {
		hl := int(binary.BigEndian.Uint32(frame) & maxHeaderLength)
		if hl <= len(frame)-4 {
			if c, ok := decodeSendResponseBinary(frame[4 : 4+hl]); ok {
				if body := frame[4+hl:]; len(body) > 0 {
					c.Body = body
				}
				return c, nil
			}
		}
	}
	return DecodeFrame(frame)
}

// decodeSendResponseBinary decodes a binary header whose ext fields are a
// send answer's; false when it cannot take it whole.
func decodeSendResponseBinary(h []byte) (*Command, bool) {
	remark, ext, err := splitBinaryHeader(h)
	if err != nil {
		return nil, false
	}
	var r sendResponseFields
	for len(ext) > 0 {
		k, v, rest, ok := nextBinaryPair(ext)
		if !ok || !r.add(k, v) {
			return nil, false
		}
		ext = rest
	}
	hdr := &SendMessageResponseHeader{}
	if !r.header(hdr) {
		return nil, false
	}
	c := &Command{Remark: string(remark), Serialize: SerializeRocketMQ, Header: hdr}
	setBinaryFixed(h, c)
	return c, true
}

// The send answer's fields, by index.
const (
	srMsgID = iota
	srQueueID
	srQueueOffset
	srTransactionID
	srBatchUniqID
	srMsgRegion
	srTraceOn
	sendResponseFieldCount
	srRequired = 1<<srMsgID | 1<<srQueueID | 1<<srQueueOffset
)

// sendResponseFields gathers a send answer's raw values; the last of a
// repeated key wins, as in a map.
type sendResponseFields struct {
	v   [sendResponseFieldCount][]byte
	has uint8
}

// add takes one pair; false for a key the header does not know.
func (r *sendResponseFields) add(k, v []byte) bool {
	var i int
	switch string(k) {
	case "msgId":
		i = srMsgID
	case "queueId":
		i = srQueueID
	case "queueOffset":
		i = srQueueOffset
	case "transactionId":
		i = srTransactionID
	case "batchUniqId":
		i = srBatchUniqID
	case "MSG_REGION":
		i = srMsgRegion
	case "TRACE_ON":
		i = srTraceOn
	default:
		return false
	}
	r.v[i] = v
	r.has |= 1 << i
	return true
}

// header converts the values with fieldReader's rules; false when the map
// path would report an error.
func (r *sendResponseFields) header(h *SendMessageResponseHeader) bool {
	if r.has&srRequired != srRequired {
		return false
	}
	q, ok1 := parseDecimal(r.v[srQueueID], 32)
	o, ok2 := parseDecimal(r.v[srQueueOffset], 64)
	if !ok1 || !ok2 {
		return false
	}
	h.MsgID = string(r.v[srMsgID])
	h.QueueID = int32(q)
	h.QueueOffset = o
	h.TransactionID = string(r.v[srTransactionID])
	h.BatchUniqID = string(r.v[srBatchUniqID])
	h.MsgRegion = intern(r.v[srMsgRegion])
	h.TraceOn = intern(r.v[srTraceOn])
	return true
}
