package storage

import (
	"errors"
	"fmt"
	"io"

	"github.com/samsamq/samsa/storage/record"
)

// Replication: the storage side of master/slave replication.
// Package ha ships CommitLog bytes from a master's Store to a slave's; the
// store gives it:
//
//   - master: ReadLog copies whole records from a physical offset, up to
//     HandedOffset (what a process crash of the master cannot take back),
//     one segment at a time; OnHanded says when there is more.
//   - slave: AppendReplicated writes what ReadLog produced at the same
//     physical offsets, checked record by record, through the normal write
//     path (hand-over, group commit, dispatcher, waiters), so the slave's
//     CommitLog is byte-identical to the master's and its ConsumeQueues
//     are built by its own dispatcher; FlushTo waits for durability;
//     TruncateTo cuts a diverged tail; ResetTo starts the log afresh at a
//     segment base (replica_cut.go).
//
// Master and slave have the same SegmentSize (the ha layer checks it), so
// the slave rolls exactly where the master rolled: after the blank filler,
// which ReadLog returns whole (its header and zeros for the rest of the
// segment) and AppendReplicated writes as the master did (the header).

// ErrReplicaMismatch: replicated bytes do not continue this log (a gap, a
// bad CRC, a wrong physical offset, a queue-offset gap...). It comes
// wrapped with the offset and the reason.
var ErrReplicaMismatch = errors.New("storage: replicated bytes do not continue the log")

// ErrLogTrimmed: the requested offset is below CommitLogMinOffset
// (retention deleted it).
var ErrLogTrimmed = errors.New("storage: offset below the oldest retained segment")

// SegmentSize is the size of every CommitLog segment (Options.SegmentSize).
func (s *Store) SegmentSize() int64 { return s.segSize }

// MaxRecordSize is the largest record ReadLog copies: a message record
// with a body of MaxMessageSize, the longest topic, IPv6 hosts and full
// properties (a batch is stored as separate records), at most what a
// segment takes. A ReadLog buffer of that size always makes progress; a
// blank filler is copied as its 8-byte header alone.
func (s *Store) MaxRecordSize() int {
	return min(record.MaxSize(s.opts.MaxMessageSize), s.maxRec)
}

// logSpan is how far a readLog result of n bytes read at from reaches in
// the log: from+n, or the next segment's base when it is a blank filler's
// header (n == record.BlankSize: no message record is that short).
func logSpan(from int64, n int, segSize int64) int64 {
	if n == record.BlankSize {
		return from - from%segSize + segSize
	}
	return from + int64(n)
}

// OnHanded registers fn, called each time HandedOffset grows, with the new
// value, from the goroutine that moved it, after the store (an appender,
// the hand-over's writer or the flusher). fn must not block (a
// non-blocking channel send): it may run under the append lock. Register
// before traffic, like OnDispatch. TruncateTo and ResetTo lower the offset
// without calling it.
func (s *Store) OnHanded(fn func(handed int64)) { addCallback(&s.onHanded, fn) }

// ReadLog copies whole records starting at physical offset from (a record
// boundary) into buf and returns the byte count n and where the next call
// starts, next. It never copies past HandedOffset() (bytes already in the
// kernel), never a partial record, and never across a segment boundary. A segment's trailing blank filler
// comes alone, as its 8-byte header (all the master wrote of it; the rest
// of the segment is zeros): n == record.BlankSize, and next is the next
// segment's base offset; otherwise next is from+n. n==0, err==nil: nothing
// new yet. from < CommitLogMinOffset(): ErrLogTrimmed. from > HandedOffset():
// an error. len(buf) >= MaxRecordSize() always makes progress; a smaller
// buf that cannot hold the next record gets an error wrapping
// io.ErrShortBuffer. A record whose header is damaged, or whose
// physical-offset field is not its position (from is not a record
// boundary), is an error when it comes first and ends the copy otherwise;
// CRCs are left to the slave (AppendReplicated checks every record).
//
// It may run concurrently with everything (one ReadAt under the segment
// list's read lock) and does not allocate.
func (s *Store) ReadLog(from int64, buf []byte) (n int, next int64, err error) {
	n, err = s.readLog(from, buf)
	return n, logSpan(from, n, s.segSize), err
}

func (s *Store) readLog(from int64, buf []byte) (int, error) {
	s.segs.RLock() // handed is read under it: a cut lowers it under the write lock
	defer s.segs.RUnlock()
	handed := s.handed.Load()
	if lo := s.minOffsetLocked(); from < lo {
		return 0, fmt.Errorf("%w: read log at %d, min offset %d", ErrLogTrimmed, from, lo)
	}
	if from >= handed {
		if from > handed {
			return 0, fmt.Errorf("storage: read log at %d: past the handed offset %d", from, handed)
		}
		return 0, nil
	}
	g := s.segmentAtLocked(from)
	if g == nil {
		return 0, fmt.Errorf("storage: internal: read log at %d: no segment holds it (handed %d)", from, handed)
	}
	segEnd := g.end(s.segSize)
	avail := min(handed, g.base+g.seg.Written()) - from
	if avail < record.BlankSize { // below handed a header always follows a boundary
		return 0, fmt.Errorf("storage: read log at %d: not a record boundary (%s holds records up to %d)",
			from, g.path, g.base+g.seg.Written())
	}
	want := int(min(int64(len(buf)), avail))
	if want < record.BlankSize {
		return 0, fmt.Errorf("storage: read log at %d: a %d-byte buffer holds no record", from, len(buf))
	}
	if _, err := g.seg.ReadAt(buf[:want], from-g.base); err != nil {
		return 0, fmt.Errorf("storage: read log: read %d bytes at %d of %s: %w", want, from-g.base, g.path, err)
	}
	n := 0
	for n+record.BlankSize <= want {
		at := from + int64(n)
		size, magic, _ := record.Header(buf[n:want])
		var bad error
		switch {
		case magic == record.MagicBlank:
			if int64(size) != segEnd-at {
				bad = fmt.Errorf("%w: blank of %d bytes where %d remain", record.ErrBadSize, size, segEnd-at)
				break
			}
			if n > 0 {
				return n, nil // it comes alone, next
			}
			// Its header is in the kernel (want covers it): that is all
			// of it the log holds, and all a slave needs. (The handed
			// offset is then at segEnd or beyond: it never stops inside
			// a blank.)
			return record.BlankSize, nil
		case magic != record.MagicMessage:
			bad = fmt.Errorf("%w: %#08x", record.ErrBadMagic, uint32(magic))
		case int(size) < record.MinSize || int64(size)+blankReserve > segEnd-at:
			bad = fmt.Errorf("%w: %d bytes at %d of a %d-byte segment", record.ErrBadSize, size, at-g.base, s.segSize)
		case n+int(size) > want:
			if n == 0 && int(size) > len(buf) {
				return 0, fmt.Errorf("storage: read log at %d: the %d-byte record does not fit a %d-byte buffer: %w", at, size, len(buf), io.ErrShortBuffer)
			}
			return n, nil // the rest comes with the next call
		case record.PhysOffsetOf(buf[n:]) != at:
			bad = fmt.Errorf("%w: field says %d", record.ErrPhysOffset, record.PhysOffsetOf(buf[n:]))
		}
		if bad != nil {
			if n > 0 {
				return n, nil // the next call reports it
			}
			return 0, fmt.Errorf("storage: read log at %d (not a record boundary, or a damaged record): %w", at, bad)
		}
		n += int(size)
	}
	return n, nil
}
