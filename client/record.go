package client

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/samsamq/samsa/storage/record"
)

// Record is a received message read in place: a view of its stored
// record in the pull answer, each field decoded when asked. A pull with
// PullOptions.Records answers with Records instead of MessageExts: one
// slab of these (48 bytes each) per answer and nothing per message, for
// consumers that read a few fields of many messages (a drain, a
// replicator, a load generator). A Record keeps its answer's bytes alive
// and stays valid after later pulls: nothing reuses them. Message turns
// one into a MessageExt.
type Record struct {
	b []byte // the stored record, exactly
	// body is the inflated body of a compressed record (nil otherwise:
	// the body is read from b).
	body []byte
}

// fields decodes the record (checked when the answer was read).
func (r Record) fields() record.Record {
	var d record.Record
	_ = record.DecodeUnchecked(r.b, &d)
	return d
}

// Bytes returns the stored record as the broker keeps it (RocketMQ's
// message format), aliasing the answer.
func (r Record) Bytes() []byte { return r.b }

// Topic returns the topic the record was stored under.
func (r Record) Topic() string { d := r.fields(); return aliasString(d.Topic) }

// QueueID returns the queue the record was stored in.
func (r Record) QueueID() int { return int(r.fields().QueueID) }

// QueueOffset returns the record's index in its queue.
func (r Record) QueueOffset() int64 { return record.QueueOffsetOf(r.b) }

// CommitLogOffset returns where the record lies in the broker's log.
func (r Record) CommitLogOffset() int64 { return record.PhysOffsetOf(r.b) }

// StoreSize returns the stored record's size in bytes.
func (r Record) StoreSize() int { return len(r.b) }

// Flag returns the producer's flag.
func (r Record) Flag() int32 { return r.fields().Flag }

// SysFlag returns the stored system flag (without the compression bit
// for a body inflated here).
func (r Record) SysFlag() int32 {
	f := record.SysFlagOf(r.b)
	if r.body != nil {
		f &^= record.FlagCompressed
	}
	return f
}

// Body returns the message's body (inflated if it was stored
// compressed), aliasing the answer.
func (r Record) Body() []byte {
	if r.body != nil {
		return r.body
	}
	return r.fields().Body
}

// BornTime returns when the producer made the message.
func (r Record) BornTime() time.Time { return time.UnixMilli(r.fields().BornTimestamp) }

// StoreTime returns when the broker stored it.
func (r Record) StoreTime() time.Time { return time.UnixMilli(record.StoreTimestampOf(r.b)) }

// BornHost returns the producer's address.
func (r Record) BornHost() netip.AddrPort { return r.fields().BornHost }

// StoreHost returns the storing broker's address.
func (r Record) StoreHost() netip.AddrPort { return r.fields().StoreHost }

// ReconsumeTimes counts earlier deliveries that failed.
func (r Record) ReconsumeTimes() int32 { return r.fields().ReconsumeTimes }

// Property returns the named property ("" when it has none).
func (r Record) Property(name string) string {
	d := r.fields()
	v, _ := record.LookupProperty(d.UserProperties(), name)
	return aliasString(v)
}

// Tags returns the message's tag.
func (r Record) Tags() string { return r.Property(PropertyTags) }

// Keys returns the message's keys.
func (r Record) Keys() []string { return strings.Fields(r.Property(PropertyKeys)) }

// MsgID returns the producer's unique id (UNIQ_KEY) or, for a message
// without one, OffsetMsgID.
func (r Record) MsgID() string {
	if id := r.Property(PropertyUniqKey); id != "" {
		return id
	}
	return r.OffsetMsgID()
}

// OffsetMsgID returns the broker's id of the message: store host and
// commit-log offset, hex (it allocates the string).
func (r Record) OffsetMsgID() string {
	d := r.fields()
	_, id := appendOffsetID(nil, &d)
	return id
}

// Message returns the record as a MessageExt of queue q (the pull's),
// aliasing the answer as a pulled MessageExt does.
func (r Record) Message(q MessageQueue) (*MessageExt, error) {
	d := r.fields()
	_, id := appendOffsetID(nil, &d)
	m := new(MessageExt)
	if err := messageFromRecord(m, &d, aliasString(d.Topic), q.BrokerName, id); err != nil {
		return nil, err
	}
	m.Queue = q
	return m, nil
}

// decodeRecords reads an answer body of stored records back to back as
// Records of queue q pulled from offset: each record's structure checked,
// its CRC too with o.verify, and its place (checkDirected's rules); a
// compressed body is inflated here, so a bad one fails the pull as in
// decodeAnswer.
func decodeRecords(body []byte, q MessageQueue, offset int64, o decodeOptions) ([]Record, error) {
	out := make([]Record, 0, countRecords(body))
	next := offset
	for len(body) > 0 {
		var d record.Record
		if err := record.DecodeUnchecked(body, &d); err != nil {
			return out, fmt.Errorf("client: pull body: %w", err)
		}
		b := body[:d.TotalSize:d.TotalSize]
		body = body[d.TotalSize:]
		if o.verify {
			if err := verifyRecord(b); err != nil {
				return out, &CorruptMessageError{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID,
					QueueOffset: d.QueueOffset, PullOffset: offset, Err: err}
			}
		}
		if err := misdirected(q, offset, next, aliasString(d.Topic), int(d.QueueID), d.QueueOffset); err != nil {
			return out, err
		}
		next = d.QueueOffset + 1
		r := Record{b: b}
		if d.SysFlag&record.FlagCompressed != 0 {
			if ct := (d.SysFlag & record.CompressionTypeMask) >> 8; ct == 0 || ct == 3 {
				in, err := inflate(d.Body)
				if err != nil {
					return out, fmt.Errorf("client: message at %v@%d: %w", q, d.QueueOffset, err)
				}
				r.body = in
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// String is a short description for logs.
func (r Record) String() string {
	return r.Topic() + "@" + strconv.FormatInt(r.QueueOffset(), 10) + " " + strconv.Itoa(len(r.Body())) + "B"
}
