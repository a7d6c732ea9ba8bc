package storage

import (
	"fmt"
	"net/netip"

	"github.com/samsamq/samsa/storage/record"
)

// Message is what a producer hands in; the store assigns offsets and the
// store time.
type Message struct {
	Topic   string
	QueueID int32
	Flag    int32
	// SysFlag is stored as given (record.Flag*; the host-family bits are
	// set from the hosts). A prepared or rolled-back transaction message
	// (record.TransactionPrepared/Rollback) is stored with queue offset 0
	// and gets no ConsumeQueue entry, as in RocketMQ.
	SysFlag int32
	Body    []byte
	// Properties are pre-encoded "k\x01v\x02..." pairs
	// (record.EncodeProperties), as on the wire. The store appends its
	// CRC property.
	Properties []byte
	// TagsCode is the ConsumeQueue tag hash (record.TagsCode of the TAGS
	// property). Recovery recomputes it from the TAGS property for the
	// records it re-indexes.
	TagsCode         int64
	BornTimestamp    int64 // ms
	BornHost         netip.AddrPort
	StoreHost        netip.AddrPort
	ReconsumeTimes   int32
	PreparedTxOffset int64
}

// AppendResult says where a record went.
type AppendResult struct {
	PhysicalOffset int64 // where the record starts in the CommitLog
	QueueOffset    int64 // its index in (topic, queue)
	Size           int32 // record bytes
	StoreTimestamp int64 // ms
}

// fields returns m as encoder input (offsets and store time come later,
// from Seal).
func (m *Message) fields() record.Fields {
	return record.Fields{
		QueueID:          m.QueueID,
		Flag:             m.Flag,
		SysFlag:          m.SysFlag,
		BornTimestamp:    m.BornTimestamp,
		BornHost:         m.BornHost,
		StoreHost:        m.StoreHost,
		ReconsumeTimes:   m.ReconsumeTimes,
		PreparedTxOffset: m.PreparedTxOffset,
		Topic:            m.Topic,
		Body:             m.Body,
		Properties:       m.Properties,
	}
}

// indexed reports whether a record with this SysFlag gets a queue offset
// and a ConsumeQueue entry (not a prepared or rolled-back transaction
// message: RocketMQ's CommitLog.doAppend).
// storedTags is the ConsumeQueue tags code of a stored record read back
// from the log: its TAGS property's, or record.HoleTagsCode for a hole
// (record/hole.go), which every read skips.
func storedTags(rec *record.Record) int64 {
	if rec.SysFlag&record.FlagHole != 0 {
		return record.HoleTagsCode
	}
	return record.TagsCodeOf(rec.Properties)
}

func indexed(sysFlag int32) bool {
	t := record.TransactionType(sysFlag)
	return t != record.TransactionPrepared && t != record.TransactionRollback
}

// GetStatus is the outcome of GetMessages (RocketMQ's GetMessageStatus, in
// its order).
type GetStatus int

const (
	Found GetStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowBadly
	OffsetOverflowOne
	OffsetTooSmall
	NoMatchedLogicQueue
	NoMessageInQueue
)

var getStatusNames = [...]string{"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL",
	"OFFSET_OVERFLOW_BADLY", "OFFSET_OVERFLOW_ONE", "OFFSET_TOO_SMALL", "NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"}

// String returns RocketMQ's name for the status.
func (s GetStatus) String() string {
	if s < 0 || int(s) >= len(getStatusNames) {
		return fmt.Sprintf("GetStatus(%d)", int(s))
	}
	return getStatusNames[s]
}

// GetResult is what GetMessages found.
type GetResult struct {
	Status GetStatus
	// Records are stored records exactly as in the log, each a slice of
	// one buffer the call allocated (they never alias a mapping, so they
	// stay valid after retention deletes the segment).
	Records [][]byte
	// QueueOffsets are the records' queue offsets.
	QueueOffsets []int64
	// NextOffset is the queue offset to ask for next.
	NextOffset int64
	MinOffset  int64
	MaxOffset  int64
	// Bytes is the records' total size.
	Bytes int
	// Whole is every record of Records back to back in one slice (the
	// buffer they are slices of), for writers that send them as one
	// piece; nil when there are none.
	Whole []byte
	// Buffer is the pooled buffer Records and Whole lie in, from
	// GetMessagesPooled (zero otherwise): GetResult.Release hands it back
	// once they are not read any more.
	Buffer ReadBuffer
	// Files, from GetMessagesFile, are where the records lie when the
	// read did not read them (get_file.go); Release closes them.
	Files FileRecords
}
