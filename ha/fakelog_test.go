package ha

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// memLog is an in-memory CommitLog with the semantics of the Log
// interface, for tests. Records: SIZE 4 (whole record), MAGIC 4, CRC 4
// (of the payload), payload. A record that does not fit the rest of a
// segment is preceded by a filler record (its own magic) spanning that
// rest. Handed follows written at once unless holdHand is set.
type memLog struct {
	seg       int64
	maxRecord int

	mu       sync.Mutex
	min      int64
	data     []byte // [min, written)
	handed   int64
	durable  int64
	holdHand bool
	cbs      []func(int64)
	// quietShort answers a buffer too short for the next record with 0,
	// nil instead of io.ErrShortBuffer.
	quietShort bool
	// nAppends counts AppendReplicated calls that appended.
	nAppends int
}

func (l *memLog) appends() int { l.mu.Lock(); defer l.mu.Unlock(); return l.nAppends }

const (
	recHeader   = 12
	magicRecord = 0x5a4d0001
	magicFiller = 0x5a4d0002
)

var (
	errTrimmed  = errors.New("memlog: offset below the log's start")
	errMismatch = errors.New("memlog: replica mismatch")
)

func newMemLog(seg int64, maxRecord int) *memLog {
	return &memLog{seg: seg, maxRecord: maxRecord}
}

func (l *memLog) written() int64 { return l.min + int64(len(l.data)) }

func (l *memLog) HandedOffset() int64  { l.mu.Lock(); defer l.mu.Unlock(); return l.handed }
func (l *memLog) WrittenOffset() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.written() }
func (l *memLog) DurableOffset() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.durable }
func (l *memLog) CommitLogMinOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.min
}
func (l *memLog) MaxRecordSize() int { return l.maxRecord }
func (l *memLog) SegmentSize() int64 { return l.seg }

func (l *memLog) OnHanded(fn func(int64)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cbs = append(l.cbs, fn)
}

// hand moves handed to written (or to off, if smaller) and calls the
// callbacks (outside the lock, as a store would from its write-out).
func (l *memLog) hand(off int64) {
	l.mu.Lock()
	off = min(off, l.written())
	if off <= l.handed {
		l.mu.Unlock()
		return
	}
	l.handed = off
	cbs := l.cbs
	l.mu.Unlock()
	for _, fn := range cbs {
		fn(off)
	}
}

func encodeRecord(b []byte, magic uint32, payload []byte) []byte {
	n := recHeader + len(payload)
	b = be.AppendUint32(b, uint32(n))
	b = be.AppendUint32(b, magic)
	b = be.AppendUint32(b, crc32.ChecksumIEEE(payload))
	return append(b, payload...)
}

// Append writes a record holding payload (after a filler if it does not
// fit the segment) and returns its end; handed follows unless holdHand.
func (l *memLog) Append(payload []byte) int64 {
	n := int64(recHeader + len(payload))
	if n > int64(l.maxRecord) {
		panic(fmt.Sprintf("memlog: record of %d bytes, max %d", n, l.maxRecord))
	}
	l.mu.Lock()
	w := l.written()
	rest := l.seg - w%l.seg
	if n != rest && n+recHeader > rest {
		l.data = encodeRecord(l.data, magicFiller, make([]byte, rest-recHeader))
	}
	l.data = encodeRecord(l.data, magicRecord, payload)
	end := l.written()
	hold := l.holdHand
	l.mu.Unlock()
	if !hold {
		l.hand(end)
	}
	return end
}

// ReadLog gives a filler alone, as its header (as storage gives its blank
// filler), with next at the segment's end.
func (l *memLog) ReadLog(from int64, buf []byte) (int, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from < l.min {
		return 0, from, fmt.Errorf("%w: %d < %d", errTrimmed, from, l.min)
	}
	if from > l.written() {
		return 0, from, fmt.Errorf("memlog: read at %d past the end %d", from, l.written())
	}
	segEnd := (from/l.seg + 1) * l.seg
	pos, n := from, 0
	for pos < l.handed && pos < segEnd {
		size := int(be.Uint32(l.data[pos-l.min:]))
		if be.Uint32(l.data[pos-l.min+4:]) == magicFiller {
			if n > 0 || len(buf) < recHeader {
				break
			}
			return copy(buf, l.data[pos-l.min:pos-l.min+recHeader]), segEnd, nil
		}
		if n+size > len(buf) {
			if n == 0 && !l.quietShort {
				return 0, from, io.ErrShortBuffer
			}
			break
		}
		copy(buf[n:], l.data[pos-l.min:pos-l.min+int64(size)])
		n += size
		pos += int64(size)
	}
	return n, pos, nil
}

// check validates data as whole records starting at from.
func (l *memLog) check(from int64, data []byte) error {
	pos := from
	for p := 0; p < len(data); {
		if len(data)-p < recHeader {
			return fmt.Errorf("%w: torn header at %d", errMismatch, pos)
		}
		size := int(be.Uint32(data[p:]))
		magic := be.Uint32(data[p+4:])
		if size < recHeader || size > len(data)-p {
			return fmt.Errorf("%w: size %d at %d", errMismatch, size, pos)
		}
		if pos/l.seg != (pos+int64(size)-1)/l.seg {
			return fmt.Errorf("%w: record at %d crosses a segment", errMismatch, pos)
		}
		if magic != magicRecord && !(magic == magicFiller && (pos+int64(size))%l.seg == 0) {
			return fmt.Errorf("%w: magic %#x at %d", errMismatch, magic, pos)
		}
		if crc32.ChecksumIEEE(data[p+recHeader:p+size]) != be.Uint32(data[p+8:]) {
			return fmt.Errorf("%w: CRC at %d", errMismatch, pos)
		}
		p += size
		pos += int64(size)
	}
	return nil
}

func (l *memLog) AppendReplicated(ctx context.Context, from int64, data []byte) (int64, error) {
	l.mu.Lock()
	if from != l.written() {
		defer l.mu.Unlock()
		return 0, fmt.Errorf("%w: append at %d, log ends at %d", errMismatch, from, l.written())
	}
	segEnd := (from/l.seg + 1) * l.seg
	if len(data) == recHeader && be.Uint32(data[4:]) == magicFiller && from+int64(be.Uint32(data)) == segEnd {
		// A filler's header alone: the rest is zeros.
		data = append(data[:recHeader:recHeader], make([]byte, segEnd-from-recHeader)...)
		be.PutUint32(data[8:], crc32.ChecksumIEEE(data[recHeader:]))
	}
	if err := l.check(from, data); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	l.data = append(l.data, data...)
	l.nAppends++
	end := l.written()
	l.mu.Unlock()
	l.hand(end)
	return end, nil
}

func (l *memLog) FlushTo(ctx context.Context, off int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.durable = max(l.durable, min(off, l.written()))
	return nil
}

func (l *memLog) TruncateTo(off int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off < l.min || off > l.written() {
		return fmt.Errorf("memlog: truncate to %d outside [%d, %d]", off, l.min, l.written())
	}
	pos := l.min
	for pos < off {
		pos += int64(be.Uint32(l.data[pos-l.min:]))
	}
	if pos != off {
		return fmt.Errorf("memlog: truncate to %d: not a record boundary", off)
	}
	l.data = l.data[:off-l.min]
	l.handed = min(l.handed, off)
	l.durable = min(l.durable, off)
	return nil
}

func (l *memLog) ResetTo(base int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if base%l.seg != 0 {
		return fmt.Errorf("memlog: reset to %d: not a segment base", base)
	}
	l.min, l.data, l.handed, l.durable = base, nil, base, base
	return nil
}

// trimTo drops the segments below base (retention).
func (l *memLog) trimTo(base int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if base%l.seg != 0 || base > l.written() || base < l.min {
		panic(fmt.Sprintf("memlog: trim to %d", base))
	}
	l.data = append([]byte(nil), l.data[base-l.min:]...)
	l.min = base
}

// bytes returns a copy of [from, to).
func (l *memLog) bytes(from, to int64) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.data[from-l.min:to-l.min]...)
}

var _ Log = (*memLog)(nil)
