package storage

import (
	"errors"
	"fmt"

	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/record"
)

// Reads check what they serve.
//
// GetMessages hands out no record it has not checked (record.Verify):
// TOTALSIZE equal to the size its ConsumeQueue entry gives, the magic
// code, the physical-offset identity and the whole-record CRC. Recovery
// checks only the log's tail after a crash, and nothing after a clean
// stop, so a record damaged at rest in an older segment is first seen
// here.
//
// A record that fails is corrupt: the read returns the good records before
// it, with NextOffset at the corrupt one; a read starting at it returns no
// records and a *CorruptRecordError, with NextOffset just past it, so a
// consumer that follows NextOffset is never stuck there. Each corrupt
// record found is logged once, counted (Metrics.CorruptRecords) and
// quarantined (quarantine.go); later reads answer a quarantined record
// from the quarantine, the same way, without reading it again. A
// ConsumeQueue entry whose size no record can have is treated the same
// way.

// CorruptRecordError says a read met a corrupt record (or one quarantined
// earlier). It matches ErrCorrupt.
type CorruptRecordError struct {
	Topic       string
	QueueID     int32
	QueueOffset int64
	PhysOffset  int64
	// Size is the record's size as its ConsumeQueue entry gives it.
	Size int32
	// Quarantined is true when an earlier read found it: Err is that
	// read's error (after a restart, its text).
	Quarantined bool
	Err         error
}

func (e *CorruptRecordError) Error() string {
	s := "storage: corrupt record"
	if e.Quarantined {
		s = "storage: quarantined corrupt record"
	}
	return fmt.Sprintf("%s: topic %s queue %d queue offset %d physical offset %d (%d bytes): %v",
		s, e.Topic, e.QueueID, e.QueueOffset, e.PhysOffset, e.Size, e.Err)
}

func (e *CorruptRecordError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// skipReadVerify turns the checks off: for BenchmarkGetMessages's
// baseline only, never set elsewhere.
var skipReadVerify = false

// verifyRecord checks one record read through its ConsumeQueue entry e.
func verifyRecord(b []byte, e consumequeue.Entry) error {
	if skipReadVerify {
		return nil
	}
	return record.Verify(b, e.PhysOffset)
}

// checkEntry is what GetMessages asks before it picks entry e: nil, or why
// the record cannot be served without reading it (quarantined, or a size
// no record has).
func (s *Store) checkEntry(topic string, queueID int32, queueOffset int64, e consumequeue.Entry) *CorruptRecordError {
	if q, ok := s.quarantine().lookup(e.PhysOffset); ok {
		err := q.err
		if err == nil { // loaded from the file: the reason is text
			err = errors.New(q.Reason)
		}
		return &CorruptRecordError{Topic: topic, QueueID: queueID, QueueOffset: queueOffset, PhysOffset: e.PhysOffset,
			Size: e.Size, Quarantined: true, Err: fmt.Errorf("found at %d ms: %w", q.FoundMs, err)}
	}
	if int(e.Size) < record.MinSize || int(e.Size) > s.maxRec {
		return s.corrupt(topic, queueID, queueOffset, e,
			fmt.Errorf("%w: consume queue entry gives %d bytes, records have [%d, %d]", record.ErrBadSize, e.Size, record.MinSize, s.maxRec))
	}
	return nil
}

// corrupt reports the corrupt record e at queueOffset of (topic, queueID)
// the first time any read finds it: quarantined, logged, counted.
func (s *Store) corrupt(topic string, queueID int32, queueOffset int64, e consumequeue.Entry, err error) *CorruptRecordError {
	ce := &CorruptRecordError{Topic: topic, QueueID: queueID, QueueOffset: queueOffset, PhysOffset: e.PhysOffset, Size: e.Size, Err: err}
	q := QuarantineEntry{Topic: topic, QueueID: queueID, QueueOffset: queueOffset, PhysOffset: e.PhysOffset, Size: e.Size,
		Reason: err.Error(), FoundMs: s.clock().UnixMilli()}
	if s.addQuarantine(q, err) {
		s.m.corruptRecords.Add(1)
		s.log.Error("storage: corrupt record found by a read; quarantined, not served", "topic", topic, "queue", queueID,
			"queueOffset", queueOffset, "physOffset", e.PhysOffset, "size", e.Size, "err", err)
	}
	return ce
}

// stopAtCorrupt ends a read at the corrupt record ce: a result with records
// keeps them and stops before it; an empty one moves past it and returns ce.
func stopAtCorrupt(res *GetResult, ce *CorruptRecordError) error {
	if len(res.Records) > 0 {
		res.Status, res.NextOffset = Found, ce.QueueOffset
		return nil
	}
	res.Status, res.NextOffset = OffsetFoundNull, ce.QueueOffset+1
	return ce
}
