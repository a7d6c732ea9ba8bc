package protocol

import (
	"bytes"
	"encoding/binary"
	"strconv"
)

// The send path's headers without maps: AppendExt for the encoders and a
// decoder that reads a send request's ext fields from the frame straight
// into a SendMessageRequestHeader. Both follow the map path exactly (the
// golden tests compare them): same bytes out, same header in, and any input
// the typed decoder does not take whole (a required field missing, a
// number that does not parse, a malformed pair) goes the map path, which
// then reports it as before.

// AppendExt implements ExtHeader: the long names in byte order.
func (h *SendMessageRequestHeader) AppendExt(w *ExtWriter) {
	w.Bool("batch", h.Batch)
	w.OptStr("bname", h.BrokerName)
	w.Int("bornTimestamp", h.BornTimestamp)
	w.Str("defaultTopic", h.DefaultTopic)
	w.Int("defaultTopicQueueNums", int64(h.DefaultTopicQueueNums))
	w.Int("flag", int64(h.Flag))
	if h.HasMaxReconsumeTimes {
		w.Int("maxReconsumeTimes", int64(h.MaxReconsumeTimes))
	}
	w.Str("producerGroup", h.ProducerGroup)
	w.OptStr("properties", h.Properties)
	w.Int("queueId", int64(h.QueueID))
	w.Int("reconsumeTimes", int64(h.ReconsumeTimes))
	w.Int("sysFlag", int64(h.SysFlag))
	w.Str("topic", h.Topic)
	w.Bool("unitMode", h.UnitMode)
}

// AppendExt implements ExtHeader: the letters a to n.
func (h *SendMessageRequestHeaderV2) AppendExt(w *ExtWriter) {
	w.Str("a", h.ProducerGroup)
	w.Str("b", h.Topic)
	w.Str("c", h.DefaultTopic)
	w.Int("d", int64(h.DefaultTopicQueueNums))
	w.Int("e", int64(h.QueueID))
	w.Int("f", int64(h.SysFlag))
	w.Int("g", h.BornTimestamp)
	w.Int("h", int64(h.Flag))
	w.OptStr("i", h.Properties)
	w.Int("j", int64(h.ReconsumeTimes))
	w.Bool("k", h.UnitMode)
	if h.HasMaxReconsumeTimes {
		w.Int("l", int64(h.MaxReconsumeTimes))
	}
	w.Bool("m", h.Batch)
	w.OptStr("n", h.BrokerName)
}

// AppendExt implements ExtHeader.
func (h *SendMessageResponseHeader) AppendExt(w *ExtWriter) {
	w.OptStr("MSG_REGION", h.MsgRegion)
	w.OptStr("TRACE_ON", h.TraceOn)
	w.OptStr("batchUniqId", h.BatchUniqID)
	w.Str("msgId", h.MsgID)
	w.Int("queueId", int64(h.QueueID))
	w.Int("queueOffset", h.QueueOffset)
	w.OptStr("transactionId", h.TransactionID)
}

// Indexes of the send header's fields: the V2 letters' order.
const (
	sfGroup = iota
	sfTopic
	sfDefaultTopic
	sfDefaultQueues
	sfQueueID
	sfSysFlag
	sfBorn
	sfFlag
	sfProperties
	sfReconsume
	sfUnitMode
	sfMaxReconsume
	sfBatch
	sfBrokerName
	sendFieldCount
	sfRequired = 1<<sfFlag<<1 - 1 // a to h
)

// sendFieldIndex gives a key's field index, -1 for another key.
func sendFieldIndex(k []byte, v2 bool) int {
	if v2 {
		if len(k) == 1 && k[0] >= 'a' && k[0] < 'a'+sendFieldCount {
			return int(k[0] - 'a')
		}
		return -1
	}
	switch string(k) {
	case "producerGroup":
		return sfGroup
	case "topic":
		return sfTopic
	case "defaultTopic":
		return sfDefaultTopic
	case "defaultTopicQueueNums":
		return sfDefaultQueues
	case "queueId":
		return sfQueueID
	case "sysFlag":
		return sfSysFlag
	case "bornTimestamp":
		return sfBorn
	case "flag":
		return sfFlag
	case "properties":
		return sfProperties
	case "reconsumeTimes":
		return sfReconsume
	case "unitMode":
		return sfUnitMode
	case "maxReconsumeTimes":
		return sfMaxReconsume
	case "batch":
		return sfBatch
	case "bname":
		return sfBrokerName
	}
	return -1
}

// sendFields gathers a send header's raw values (the last of a repeated
// key wins, as in a map) and the other ext fields.
type sendFields struct {
	v    [sendFieldCount][]byte
	has  uint16
	v2   bool
	rest map[string]string
}

func (f *sendFields) add(k, v []byte) {
	if i := sendFieldIndex(k, f.v2); i >= 0 {
		f.v[i] = v
		f.has |= 1 << i
		return
	}
	if f.rest == nil {
		f.rest = make(map[string]string, 4)
	}
	f.rest[intern(k)] = intern(v)
}

// header converts the values with fieldReader's rules; false when the map
// path would report an error.
func (f *sendFields) header(h *SendMessageRequestHeader) bool {
	if f.has&sfRequired != sfRequired {
		return false
	}
	ok := true
	num := func(i int, bits int) int64 {
		v := f.v[i]
		if f.has&(1<<i) == 0 || (len(v) == 0 && i >= sfProperties) {
			return 0 // an optional field absent or empty
		}
		n, good := parseDecimal(v, bits)
		ok = ok && good
		return n
	}
	h.ProducerGroup = internRecent(f.v[sfGroup])
	h.Topic = internRecent(f.v[sfTopic])
	h.DefaultTopic = intern(f.v[sfDefaultTopic])
	h.DefaultTopicQueueNums = int32(num(sfDefaultQueues, 32))
	h.QueueID = int32(num(sfQueueID, 32))
	h.SysFlag = int32(num(sfSysFlag, 32))
	h.BornTimestamp = num(sfBorn, 64)
	h.Flag = int32(num(sfFlag, 32))
	h.Properties = string(f.v[sfProperties])
	h.ReconsumeTimes = int32(num(sfReconsume, 32))
	h.UnitMode = bytes.EqualFold(f.v[sfUnitMode], []byte("true"))
	h.HasMaxReconsumeTimes = f.has&(1<<sfMaxReconsume) != 0 && len(f.v[sfMaxReconsume]) > 0
	h.MaxReconsumeTimes = int32(num(sfMaxReconsume, 32))
	h.Batch = bytes.EqualFold(f.v[sfBatch], []byte("true"))
	h.BrokerName = internRecent(f.v[sfBrokerName])
	return ok
}

// parseDecimal is strconv.ParseInt(string(b), 10, bits) without the
// string for plain digits.
func parseDecimal(b []byte, bits int) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	d := b
	if neg {
		d = b[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		n, err := strconv.ParseInt(string(b), 10, bits)
		return n, err == nil
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			n, err := strconv.ParseInt(string(b), 10, bits)
			return n, err == nil
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	if bits < 64 && (n < -1<<(bits-1) || n > 1<<(bits-1)-1) {
		return 0, false
	}
	return n, true
}

// typedSendCode reports whether a request of this code gets its header
// decoded typed, and whether with the one-letter names.
func typedSendCode(code int32) (typed, v2 bool) {
	switch code {
	case SendMessage:
		return true, false
	case SendMessageV2, SendBatchMessage, SendReplyMessageV2:
		return true, true
	}
	return false, false
}

// setSendHeader sets c.Header (and ExtFields to the other fields) from f,
// or reports false leaving c as it was.
func setSendHeader(c *Command, f *sendFields) bool {
	if f.v2 {
		h := &SendMessageRequestHeaderV2{}
		if !f.header(&h.SendMessageRequestHeader) {
			return false
		}
		c.Header = h
	} else {
		h := &SendMessageRequestHeader{}
		if !f.header(h) {
			return false
		}
		c.Header = h
	}
	c.ExtFields = f.rest
	return true
}

// decodeSendExtBinary decodes binary ext pairs typed; false (c untouched)
// when it cannot take them whole.
func decodeSendExtBinary(ext []byte, c *Command, v2 bool) bool {
	f := sendFields{v2: v2}
	for len(ext) > 0 {
		k, v, rest, ok := nextBinaryPair(ext)
		if !ok {
			return false
		}
		f.add(k, v)
		ext = rest
	}
	return setSendHeader(c, &f)
}

// nextBinaryPair splits the first binary ext pair (key length 2, key,
// value length 4, value) off ext; false when it is cut short or a length
// is out of range.
func nextBinaryPair(ext []byte) (k, v, rest []byte, ok bool) {
	if len(ext) < 2 {
		return nil, nil, nil, false
	}
	kl := int(int16(binary.BigEndian.Uint16(ext)))
	ext = ext[2:]
	if kl < 0 || kl > len(ext) {
		return nil, nil, nil, false
	}
	k, ext = ext[:kl], ext[kl:]
	if len(ext) < 4 {
		return nil, nil, nil, false
	}
	vl := int64(int32(binary.BigEndian.Uint32(ext)))
	ext = ext[4:]
	if vl < 0 || vl > int64(len(ext)) {
		return nil, nil, nil, false
	}
	return k, ext[:vl], ext[vl:], true
}

// decodeSendExtJSON decodes the extFields object at h[at:] typed; false
// (c untouched) when it cannot take it whole.
func decodeSendExtJSON(h []byte, at int, c *Command, v2 bool) bool {
	s := &jsonScanner{b: h, i: at}
	if !s.consume('{') {
		return false
	}
	f := sendFields{v2: v2}
	if s.consume('}') {
		return setSendHeader(c, &f)
	}
	for {
		k, _, err := s.strBytes()
		if err != nil || !s.consume(':') {
			return false
		}
		switch p := s.peek(); {
		case p == '"':
			v, _, err := s.strBytes()
			if err != nil {
				return false
			}
			f.add(k, v)
		case p == 'n' && s.null():
		case p == 't' && s.literal("true"):
			f.add(k, []byte("true"))
		case p == 'f' && s.literal("false"):
			f.add(k, []byte("false"))
		default:
			t, err := s.numberText()
			if err != nil {
				return false
			}
			f.add(k, t)
		}
		if s.consume('}') {
			return setSendHeader(c, &f)
		}
		if !s.consume(',') {
			return false
		}
	}
}
