package consumequeue

import (
	"fmt"
)

// Entry returns the entry at queueOffset: ErrOffsetTooSmall below
// MinOffset, ErrOffsetOverflow at or past MaxOffset.
func (q *Queue) Entry(queueOffset int64) (Entry, error) {
	q.structMu.RLock()
	defer q.structMu.RUnlock()
	q.mu.RLock()
	if err := q.checkReadLocked(queueOffset, queueOffset+1); err != nil {
		q.mu.RUnlock()
		return Entry{}, err
	}
	if queueOffset >= q.mu.bufStart {
		i := (queueOffset - q.mu.bufStart) * EntrySize
		e := getEntry(q.mu.wbuf[i : i+EntrySize])
		q.mu.RUnlock()
		return e, nil
	}
	f := q.fileFor(q.mu.files, queueOffset)
	q.mu.RUnlock()
	var one [1]Entry
	err := q.readFile(f, queueOffset, one[:])
	return one[0], err
}

// checkReadLocked checks that [from, end) may be read; end == from checks
// only that from is in [min, max].
func (q *Queue) checkReadLocked(from, end int64) error {
	switch {
	case q.mu.closed:
		return ErrClosed
	case from < q.mu.min:
		return fmt.Errorf("%w: %s: offset %d, min offset %d", ErrOffsetTooSmall, q, from, q.mu.min)
	case end > q.mu.max:
		return fmt.Errorf("%w: %s: offset %d, max offset %d", ErrOffsetOverflow, q, max64(from, end-1), q.mu.max)
	}
	return nil
}

// Entries reads up to max entries starting at queue offset from into dst's
// backing array (dst[:0], grown only if too small) and returns them. from
// equal to MaxOffset gives no entries and no error; below MinOffset is
// ErrOffsetTooSmall, past MaxOffset ErrOffsetOverflow. It does one ReadAt per
// file span (64 KiB at most) and allocates nothing once dst is big enough.
func (q *Queue) Entries(from int64, max int, dst []Entry) ([]Entry, error) {
	dst = dst[:0]
	q.structMu.RLock()
	defer q.structMu.RUnlock()
	q.mu.RLock()
	if err := q.checkReadLocked(from, from); err != nil || from == q.mu.max || max <= 0 {
		q.mu.RUnlock()
		return dst, err
	}
	end := from + min(int64(max), q.mu.max-from)
	n := int(end - from)
	if cap(dst) < n {
		dst = make([]Entry, n)
	}
	dst = dst[:n]
	split := min(max64(q.mu.bufStart, from), end) // [from, split) in files, [split, end) buffered
	for off := split; off < end; off++ {
		i := (off - q.mu.bufStart) * EntrySize
		dst[off-from] = getEntry(q.mu.wbuf[i : i+EntrySize])
	}
	files := q.mu.files
	q.mu.RUnlock()

	for off := from; off < split; {
		f := q.fileFor(files, off)
		spanEnd := min(split, f.start+q.sh.perFile)
		if err := q.readFile(f, off, dst[off-from:spanEnd-from]); err != nil {
			return dst[:0], err
		}
		off = spanEnd
	}
	return dst, nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// readFile fills out with the entries of f starting at queue offset from;
// they must be written (below bufStart) and the caller must keep f in the
// queue (hold structMu shared, or exclusively). It opens f if it is closed.
func (q *Queue) readFile(f *segFile, from int64, out []Entry) error {
	fd, err := q.acquire(f)
	if err != nil {
		return err
	}
	defer q.release(f)
	buf := q.sh.getScratch()
	defer q.sh.putScratch(buf)
	for len(out) > 0 {
		k := min(len(out), scratchEntries)
		b := buf[:k*EntrySize]
		pos := (from - f.start) * EntrySize
		if n, err := fd.ReadAt(b, pos); n < len(b) {
			return fmt.Errorf("consumequeue: %s: read %s at %d: %d of %d bytes: %w", q, f.path, pos, n, len(b), err)
		}
		for i := range k {
			out[i] = getEntry(b[i*EntrySize:])
		}
		out = out[k:]
		from += int64(k)
	}
	return nil
}

// OffsetByTime returns the first queue offset whose record was stored at or
// after unixMs, by binary search: storeTime returns the store timestamp (ms)
// of the record an entry points at, and must be non-decreasing along the
// queue. The result is in [MinOffset, MaxOffset]: MinOffset if every record
// is at or after unixMs, MaxOffset if none is. An error from storeTime or a
// read (e.g. retention moving MinOffset meanwhile) is returned as is.
func (q *Queue) OffsetByTime(unixMs int64, storeTime func(phys int64, size int32) (int64, error)) (int64, error) {
	q.mu.RLock()
	lo, hi := q.mu.min, q.mu.max
	closed := q.mu.closed
	q.mu.RUnlock()
	if closed {
		return 0, ErrClosed
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := q.Entry(mid)
		if err != nil {
			return 0, err
		}
		t, err := storeTime(e.PhysOffset, e.Size)
		if err != nil {
			return 0, err
		}
		if t >= unixMs {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}
