package consumequeue

import (
	"errors"
	"path/filepath"
)

// TruncateFromPhys drops the trailing entries whose PhysOffset >= phys (the
// CommitLog was cut there by recovery), durably: when it returns nil the
// files end at the new MaxOffset on disk. Files left empty are removed, all
// but the first. MinOffset drops to MaxOffset if it was above.
func (q *Queue) TruncateFromPhys(phys int64) error {
	q.appendMu.Lock()
	defer q.appendMu.Unlock()
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.structMu.Lock()
	defer q.structMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.mu.closed:
		return ErrClosed
	case q.mu.err != nil:
		return q.mu.err
	case !q.mu.hasLast || q.mu.last.PhysOffset < phys || len(q.mu.files) == 0:
		return nil
	}
	// Entries' PhysOffsets increase: find the first at or past phys.
	lo, hi := q.mu.files[0].start, q.mu.max
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := q.entryLocked(mid)
		if err != nil {
			return err
		}
		if e.PhysOffset >= phys {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if err := q.truncateLocked(lo); err != nil {
		q.mu.err = err
		return err
	}
	q.sh.log.Info("consumequeue: truncated", "queue", q.String(), "phys", phys, "maxOffset", lo)
	return nil
}

// replaceSuspect drops the suspect entry at off and what follows (an
// Append found it disagrees with the CommitLog). Callers hold appendMu.
func (q *Queue) replaceSuspect(off int64) error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.structMu.Lock()
	defer q.structMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.mu.closed:
		return ErrClosed
	case q.mu.err != nil:
		return q.mu.err
	case off != q.mu.suspect || off >= q.mu.max:
		return nil // resolved meanwhile; append again decides
	}
	q.sh.log.Warn("consumequeue: replacing torn last entry", "queue", q.String(), "offset", off)
	if err := q.truncateLocked(off); err != nil {
		q.mu.err = err
		return err
	}
	q.mu.suspect = -1
	return nil
}

// truncateLocked makes newMax (in [files[0].start, max)) the queue's end.
// Callers hold appendMu, flushMu, structMu and mu.
func (q *Queue) truncateLocked(newMax int64) error {
	if newMax >= q.mu.bufStart { // only buffered entries go
		q.mu.wbuf = q.mu.wbuf[:(newMax-q.mu.bufStart)*EntrySize]
	} else {
		q.mu.wbuf = q.mu.wbuf[:0]
		k := int((newMax - q.mu.files[0].start) / q.sh.perFile)
		if k > 0 && newMax == q.mu.files[k].start {
			k-- // newMax ends file k-1 exactly: keep it whole, drop file k
		}
		if err := q.removeFilesAfter(k); err != nil {
			return err
		}
		f := q.mu.files[k]
		if err := q.truncateFile(f, (newMax-f.start)*EntrySize); err != nil {
			return err
		}
		q.mu.bufStart = newMax
	}
	q.mu.max = newMax
	q.mu.min = min(q.mu.min, newMax)
	q.mu.syncedTo = min(q.mu.syncedTo, newMax) // the entry at syncedTo, if kept, is unchanged
	if q.mu.suspect >= newMax {
		q.mu.suspect = -1
	}
	q.mu.hasLast = false
	if newMax > q.mu.files[0].start {
		e, err := q.entryLocked(newMax - 1)
		if err != nil {
			return err
		}
		q.mu.last, q.mu.hasLast = e, true
	}
	return nil
}

// DeleteBelowPhys applies CommitLog retention: phys is the CommitLog's new
// min offset. It removes, oldest first, every file but the last whose entries
// all point below phys, and moves MinOffset up to the first entry at or past
// phys (MaxOffset if there is none). After a restart MinOffset is the first
// file's start until DeleteBelowPhys is called again.
func (q *Queue) DeleteBelowPhys(phys int64) error {
	q.retainMu.Lock()
	defer q.retainMu.Unlock()
	if q.retained(phys) {
		return nil
	}
	gone, err := q.detachBelow(phys)
	// The detached files are out of every reader's sight (detachBelow waited
	// for readers with structMu), and the appender only uses the last file,
	// which never goes: remove them without holding a lock.
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, f := range gone {
		q.sh.log.Info("consumequeue: retention removes file", "queue", q.String(), "file", filepath.Base(f.path), "belowPhys", phys)
		if err := q.removeFile(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// retained reports, under shared locks only, that DeleteBelowPhys(phys)
// has nothing to do: the entry at min is at or past phys (so is every file's
// last entry), or the queue is down to one file with nothing readable.
func (q *Queue) retained(phys int64) bool {
	q.structMu.RLock()
	defer q.structMu.RUnlock()
	q.mu.RLock()
	defer q.mu.RUnlock()
	switch {
	case q.mu.closed:
		return false // let detachBelow say so
	case q.mu.min == q.mu.max:
		return len(q.mu.files) <= 1
	}
	e, err := q.entryLocked(q.mu.min)
	return err == nil && e.PhysOffset >= phys
}

// detachBelow takes out of the queue, oldest first, every file but the last
// whose last entry is below phys, raises min, and returns the files.
func (q *Queue) detachBelow(phys int64) ([]*segFile, error) {
	q.structMu.Lock()
	defer q.structMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return nil, ErrClosed
	}
	files := q.mu.files
	drop := 0
	for drop < len(files)-1 {
		f := files[drop]
		e, err := q.entryLocked(f.start + q.sh.perFile - 1) // sealed files are full
		if err != nil {
			return nil, err
		}
		if e.PhysOffset >= phys {
			break
		}
		drop++
	}
	var gone []*segFile
	if drop > 0 {
		gone = append(gone, files[:drop]...)
		q.mu.files = append(files[:0:0], files[drop:]...)
	}
	return gone, q.raiseMinLocked(phys)
}

// raiseMinLocked moves min up to the first entry with PhysOffset >= phys.
// Every entry below the first file's last one is known to be < phys or the
// file is the last: search the first file only.
func (q *Queue) raiseMinLocked(phys int64) error {
	if len(q.mu.files) == 0 {
		return nil
	}
	first := q.mu.files[0]
	// Entries below the first file are gone whatever the search below
	// finds (or fails to: a read error must not leave min under it).
	q.mu.min = max64(q.mu.min, first.start)
	lo := max64(q.mu.min, first.start)
	hi := min(q.mu.max, first.start+q.sh.perFile)
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := q.entryLocked(mid)
		if err != nil {
			return err
		}
		if e.PhysOffset >= phys {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	q.mu.min = max64(q.mu.min, lo)
	if q.mu.min > q.mu.syncedTo {
		// Retention stops below the checkpoint's dispatched offset, which
		// no unsynced entry lies below, so this is not expected; if it
		// happens, say nothing is known synced (FlushSome then flushes
		// the queue) rather than keep a PhysOffset that is gone.
		q.mu.syncedTo = q.mu.min
		q.mu.allDirty = true
	}
	return nil
}
