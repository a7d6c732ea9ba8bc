package ha

import "context"

// SourceLog is what a master reads from its CommitLog. *storage.Store
// satisfies it. Every method is safe for concurrent use.
type SourceLog interface {
	// HandedOffset is the end of what has reached the kernel: bytes below
	// it may be shipped to slaves (they are what a process crash keeps).
	HandedOffset() int64
	// WrittenOffset is the end of the log. A master opens its epoch here.
	WrittenOffset() int64
	// CommitLogMinOffset is the oldest retained byte (a segment base).
	CommitLogMinOffset() int64
	// ReadLog copies whole records starting at from into buf: never past
	// HandedOffset, never across a segment boundary. It returns the bytes
	// copied and where the next read starts: from+n, or the next segment
	// base when what it copied is a segment's trailing filler, which may
	// come as less than its declared size (storage copies a blank filler
	// as its 8-byte header alone). 0 bytes, nil means nothing new. A buf
	// too short for the next record gets 0 and io.ErrShortBuffer (0, nil
	// is tolerated: the master retries with a buffer of MaxRecordSize).
	// from below CommitLogMinOffset is an error (storage.ErrLogTrimmed).
	ReadLog(from int64, buf []byte) (n int, next int64, err error)
	// OnHanded registers fn, called each time HandedOffset grows with its
	// new value. fn must not block.
	OnHanded(fn func(handed int64))
	// MaxRecordSize is the largest record the log can hold.
	MaxRecordSize() int
	// SegmentSize is the fixed size of a CommitLog segment.
	SegmentSize() int64
}

// ReplicaLog is what a slave writes into its CommitLog. *storage.Store
// satisfies it. The slave calls the writing methods from one goroutine.
type ReplicaLog interface {
	// SegmentSize is the fixed size of a CommitLog segment; it must
	// equal the master's (offsets map to the same segments).
	SegmentSize() int64
	// MaxRecordSize is the largest record the log can hold.
	MaxRecordSize() int
	// CommitLogMinOffset is the oldest retained byte; equal to
	// WrittenOffset when the log is empty.
	CommitLogMinOffset() int64
	// WrittenOffset is the end of the log.
	WrittenOffset() int64
	// DurableOffset is the end of what is known fsynced.
	DurableOffset() int64
	// AppendReplicated appends data, whole records copied from the
	// master's ReadLog, at from, which must equal WrittenOffset. It checks
	// each record (size, CRC, segment boundaries) and returns the new end
	// (the next segment base after a segment's filler). An
	// error (wrapping storage.ErrReplicaMismatch) means nothing usable was
	// appended and the link must be dropped.
	AppendReplicated(ctx context.Context, from int64, data []byte) (end int64, err error)
	// FlushTo returns once everything below off is durable.
	FlushTo(ctx context.Context, off int64) error
	// TruncateTo cuts the log at off, a record boundary.
	TruncateTo(off int64) error
	// ResetTo discards the whole log; it restarts empty at base, a
	// multiple of SegmentSize.
	ResetTo(base int64) error
}

// Log is a CommitLog that can play either role (a broker that changes
// role keeps one store). *storage.Store satisfies it.
type Log interface {
	SourceLog
	ReplicaLog
}
