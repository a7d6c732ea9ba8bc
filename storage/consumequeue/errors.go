package consumequeue

import "errors"

// Errors returned by this package; match them with errors.Is (most are
// wrapped with the offsets involved).
var (
	// ErrGap: Append was given a queue offset past MaxOffset.
	ErrGap = errors.New("consumequeue: append leaves a gap")
	// ErrConflict: Append was given a queue offset below MaxOffset whose
	// stored entry differs (other than the recovered last entry, which
	// Append replaces). The queue and the CommitLog disagree: a bug, or
	// files damaged outside a crash; TruncateFromPhys cuts the queue.
	ErrConflict = errors.New("consumequeue: entry differs from the stored one")
	// ErrInvalidEntry: Append was given a non-positive size, a negative
	// offset, or a record that starts before the end of the previous one.
	ErrInvalidEntry = errors.New("consumequeue: invalid entry")
	// ErrInvalidName: the topic or queue id cannot name a directory.
	ErrInvalidName = errors.New("consumequeue: invalid topic or queue id")
	// ErrOffsetTooSmall: the queue offset is below MinOffset.
	ErrOffsetTooSmall = errors.New("consumequeue: offset below the queue's min offset")
	// ErrOffsetOverflow: the queue offset is at or past MaxOffset (for
	// Entries: past it; Entries at MaxOffset returns nothing).
	ErrOffsetOverflow = errors.New("consumequeue: offset past the queue's max offset")
	// ErrCorrupt: the files on disk cannot form a queue (e.g. a file missing
	// in the middle).
	ErrCorrupt = errors.New("consumequeue: corrupt queue")
	// ErrClosed: the table or queue is closed.
	ErrClosed = errors.New("consumequeue: closed")
)
