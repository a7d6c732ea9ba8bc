package client

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/samsamq/samsa/storage/record"
)

// Decoding an answer.
//
// A pull answer's body is the stored records back to back, as the broker's
// log holds them, and the client owns it: the connection's reader gives
// every answer a buffer of its own and never reuses it. decodeMessages
// therefore decodes over it instead of copying out of it:
//
//   - the messages of one answer are one slab ([]MessageExt), their
//     pointers one slice, their offset ids one byte slab: three allocations
//     an answer, none a message;
//   - Body, Tags, Keys, ShardingKey and MsgID alias the answer's bytes
//     (strings made with unsafe.String over bytes nobody writes again);
//   - properties stay as the stored "name\x01value\x02" bytes: Property
//     reads one, PropertyMap builds the map when an application asks.
//
// A message held past the next pull stays valid: the next answer is read
// into another buffer. It keeps its whole answer alive while held.
//
// Every record is checked before it is decoded (verifyRecord): a record
// that fails is never delivered, and the pull fails with a
// *CorruptMessageError.

// ErrCorruptMessage is matched by a *CorruptMessageError.
var ErrCorruptMessage = errors.New("client: corrupt message")

// CorruptMessageError says a received record failed its check (its
// whole-record CRC, or for a record stored without one its body CRC):
// the disk, the broker's memory or the network changed it. The client
// does not deliver it, nor the rest of its answer.
type CorruptMessageError struct {
	// Topic and QueueID are the queue pulled; QueueOffset is the record's
	// own offset field (what the header says; the header may be what is
	// corrupt) and PullOffset the offset the pull started at.
	Topic       string
	BrokerName  string
	QueueID     int
	QueueOffset int64
	PullOffset  int64
	Err         error
}

func (e *CorruptMessageError) Error() string {
	return fmt.Sprintf("client: corrupt message refused: topic %s queue %d (broker %s) queue offset %d (pull from %d): %v",
		e.Topic, e.QueueID, e.BrokerName, e.QueueOffset, e.PullOffset, e.Err)
}

func (e *CorruptMessageError) Unwrap() []error { return []error{ErrCorruptMessage, e.Err} }

// verifyRecord checks one received record: the whole-record CRC this
// broker seals every record with (it covers every byte but its own), or,
// for a record without it (stored by a RocketMQ broker), the body CRC.
func verifyRecord(b []byte) error {
	err := record.Verify(b, record.NoPhys)
	if !errors.Is(err, record.ErrNoCRC) {
		return err
	}
	var r record.Record
	if err := record.DecodeUnchecked(b, &r); err != nil {
		return err
	}
	if c := record.BodyCRC(r.Body); c != r.BodyCRC {
		return fmt.Errorf("%w: stored %d, computed %d", record.ErrBodyCRC, r.BodyCRC, c)
	}
	return nil
}

// decodeOptions say how decodeMessages reads an answer.
type decodeOptions struct {
	brokerName string
	// verify checks every record's CRC (ClientOptions.SkipCRCCheck off).
	verify bool
	// pullOffset names the pull in a CorruptMessageError.
	pullOffset int64
}

// decodeMessages decodes an answer body of stored records back to back
// (see above). body must not be written again: the messages alias it.
func decodeMessages(body []byte, brokerName string) ([]*MessageExt, error) {
	return decodeAnswer(body, decodeOptions{brokerName: brokerName, verify: true, pullOffset: -1})
}

func decodeAnswer(body []byte, o decodeOptions) ([]*MessageExt, error) {
	n := countRecords(body)
	slab := make([]MessageExt, n)
	out := make([]*MessageExt, 0, n)
	ids := make([]byte, 0, n*offsetIDLen)
	var topic string
	for len(body) > 0 {
		var r record.Record
		if err := record.DecodeUnchecked(body, &r); err != nil {
			return out, fmt.Errorf("client: pull body: %w", err)
		}
		if o.verify {
			if err := verifyRecord(body[:r.TotalSize]); err != nil {
				return out, &CorruptMessageError{Topic: string(r.Topic), BrokerName: o.brokerName, QueueID: int(r.QueueID),
					QueueOffset: r.QueueOffset, PullOffset: o.pullOffset, Err: err}
			}
		}
		if len(slab) == 0 { // countRecords stopped short (a torn record follows)
			slab = make([]MessageExt, 1)
		}
		m := &slab[0]
		slab = slab[1:]
		if string(r.Topic) != topic {
			topic = string(r.Topic)
		}
		if len(ids)+offsetIDLen > cap(ids) {
			ids = make([]byte, 0, offsetIDLen*4)
		}
		var id string
		ids, id = appendOffsetID(ids, &r)
		if err := messageFromRecord(m, &r, topic, o.brokerName, id); err != nil {
			return out, err
		}
		out = append(out, m)
		body = body[r.TotalSize:]
	}
	return out, nil
}

// countRecords counts the records of body by their size fields alone
// (decodeMessages checks them).
func countRecords(body []byte) int {
	n := 0
	for len(body) >= 4 {
		size := int(binary.BigEndian.Uint32(body))
		if size <= 0 || size > len(body) {
			break
		}
		n++
		body = body[size:]
	}
	return max(n, 1)
}

// aliasString is b as a string without a copy: b must never be written
// again (an answer's bytes).
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func messageFromRecord(m *MessageExt, r *record.Record, topic, brokerName, offsetID string) error {
	*m = MessageExt{
		Queue:           MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: int(r.QueueID)},
		QueueOffset:     r.QueueOffset,
		CommitLogOffset: r.PhysOffset,
		StoreSize:       r.TotalSize,
		BodyCRC:         r.BodyCRC,
		SysFlag:         r.SysFlag,
		BornTime:        time.UnixMilli(r.BornTimestamp),
		StoreTime:       time.UnixMilli(r.StoreTimestamp),
		BornHost:        r.BornHost,
		StoreHost:       r.StoreHost,
		ReconsumeTimes:  r.ReconsumeTimes,
		OffsetMsgID:     offsetID,
	}
	m.Topic = topic
	m.Flag = r.Flag
	m.Body = r.Body
	if r.SysFlag&record.FlagCompressed != 0 {
		ct := (r.SysFlag & record.CompressionTypeMask) >> 8
		if ct == 0 || ct == 3 { // RocketMQ 4.x zlib, or 5.x's ZLIB type
			b, err := inflate(r.Body)
			if err != nil {
				return fmt.Errorf("client: message at %v@%d: %w", m.Queue, m.QueueOffset, err)
			}
			m.Body = b
			m.SysFlag &^= record.FlagCompressed
		}
	}
	m.props = r.UserProperties()
	// One pass over the properties for the ones with fields of their own.
	for p := m.props; len(p) > 0; {
		end := indexByte(p, record.PropertySeparator)
		piece := p
		if end >= 0 {
			piece, p = p[:end], p[end+1:]
		} else {
			p = nil
		}
		kv := indexByte(piece, record.NameValueSeparator)
		if kv <= 0 || kv == len(piece)-1 {
			continue
		}
		name, value := piece[:kv], piece[kv+1:]
		switch string(name) {
		case PropertyTags:
			m.Tags = aliasString(value)
		case PropertyKeys:
			m.Keys = strings.Fields(aliasString(value))
		case PropertyUniqKey:
			m.MsgID = aliasString(value)
		case PropertyShardingKey:
			m.ShardingKey = aliasString(value)
		case PropertyDelayLevel:
			m.DelayLevel, _ = strconv.Atoi(aliasString(value))
		}
	}
	if m.MsgID == "" {
		m.MsgID = m.OffsetMsgID
	}
	return nil
}

// indexByte is bytes.IndexByte for the short pieces of a property list.
func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// offsetIDLen is the length of an IPv4 store host's offset message id.
const offsetIDLen = 32

// appendOffsetID appends r's offset message id (RocketMQ's
// MessageDecoder.createMessageId: store host address and port, then the
// commit-log offset, as upper-case hex) to ids and returns it as a string
// over ids' new bytes, which are never written again.
func appendOffsetID(ids []byte, r *record.Record) ([]byte, string) {
	var b [28]byte
	n := 0
	host := r.StoreHost
	if host.Addr().Is4() {
		a := host.Addr().As4()
		n = copy(b[:], a[:])
	} else {
		a := host.Addr().As16()
		n = copy(b[:], a[:])
	}
	binary.BigEndian.PutUint32(b[n:], uint32(host.Port()))
	binary.BigEndian.PutUint64(b[n+4:], uint64(r.PhysOffset))
	const digits = "0123456789ABCDEF"
	start := len(ids)
	if start+2*(n+12) > cap(ids) { // an IPv6 host: a buffer of its own
		ids, start = make([]byte, 0, 2*(n+12)), 0
	}
	for _, c := range b[:n+12] {
		ids = append(ids, digits[c>>4], digits[c&0x0f])
	}
	return ids, aliasString(ids[start:])
}

// Property returns the named property of the received message ("" when
// it has none).
func (m *MessageExt) Property(name string) string {
	if m.Properties != nil {
		return m.Properties[name]
	}
	v, _ := record.LookupProperty(m.props, name)
	return aliasString(v)
}

// PropertyMap returns the message's properties as a new map the caller
// owns (a received message keeps its properties as the stored bytes;
// Properties is nil on it).
func (m *MessageExt) PropertyMap() map[string]string {
	if m.Properties != nil {
		out := make(map[string]string, len(m.Properties))
		for k, v := range m.Properties {
			out[k] = v
		}
		return out
	}
	out := make(map[string]string)
	record.ForEachProperty(m.props, func(name, value []byte) bool {
		out[propertyName(name)] = string(value)
		return true
	})
	return out
}
