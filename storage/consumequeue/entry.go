package consumequeue

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// EntrySize is the size in bytes of one entry on disk.
const EntrySize = 20

// fileNameLen is the length of a file name: a 20-digit zero-padded byte offset.
const fileNameLen = 20

// Entry is one message's place in the CommitLog.
type Entry struct {
	PhysOffset int64 // where the record starts in the CommitLog
	Size       int32 // the record's total size in bytes
	TagsCode   int64 // hash of the record's TAGS property
}

// end is the CommitLog offset just past the record.
func (e Entry) end() int64 { return e.PhysOffset + int64(e.Size) }

// String formats the entry for logs and test failures.
func (e Entry) String() string {
	return fmt.Sprintf("{phys %d size %d tags %d}", e.PhysOffset, e.Size, e.TagsCode)
}

func putEntry(b []byte, e Entry) {
	_ = b[EntrySize-1]
	binary.BigEndian.PutUint64(b[0:8], uint64(e.PhysOffset))
	binary.BigEndian.PutUint32(b[8:12], uint32(e.Size))
	binary.BigEndian.PutUint64(b[12:20], uint64(e.TagsCode))
}

func getEntry(b []byte) Entry {
	_ = b[EntrySize-1]
	return Entry{
		PhysOffset: int64(binary.BigEndian.Uint64(b[0:8])),
		Size:       int32(binary.BigEndian.Uint32(b[8:12])),
		TagsCode:   int64(binary.BigEndian.Uint64(b[12:20])),
	}
}

// follows reports whether e may follow prev in a queue (prev nil: e is the
// first entry known): a positive size, a non-negative offset, and a record
// that starts at or after the end of the previous one.
func (e Entry) follows(prev *Entry) bool {
	if e.Size <= 0 || e.PhysOffset < 0 {
		return false
	}
	return prev == nil || e.PhysOffset >= prev.end()
}

// fileName is the name of the file whose first entry has queue offset start.
func fileName(start int64) string {
	return fmt.Sprintf("%020d", start*EntrySize)
}

// parseFileName returns the queue offset of a file's first entry, or false if
// name is not a 20-digit byte offset that is a multiple of EntrySize.
func parseFileName(name string) (int64, bool) {
	if len(name) != fileNameLen {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	off, err := strconv.ParseInt(name, 10, 64)
	if err != nil || off%EntrySize != 0 {
		return 0, false
	}
	return off / EntrySize, true
}
