package consumequeue

import (
	"errors"
	"fmt"

	"github.com/samsamq/samsa/storage/vfs"
)

// Flush writes the buffered entries and syncs every file written since the
// last Flush (and, after MarkUnsynced, every file and the queue's
// directory): when it returns nil, every entry appended before the call is
// durable, names included. A failed write of the buffer is returned and
// changes nothing (the next Flush or Append writes it again); a failed
// fsync, of a file or of the directory, sticks (later Appends and Flushes
// return it).
func (q *Queue) Flush() error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	// A sealed file's sync may still run (startSeal): its failure must
	// be known before this Flush can say every entry is durable.
	q.waitSeal()
	q.structMu.RLock()
	defer q.structMu.RUnlock()

	q.mu.Lock()
	if q.mu.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if err := q.mu.err; err != nil || q.lateErr() != nil {
		q.mu.Unlock()
		if err == nil {
			err = q.lateErr()
		}
		return err
	}
	if err := q.writeBufLocked(); err != nil {
		q.mu.Unlock()
		return err
	}
	var dirty [4]*segFile
	toSync := dirty[:0]
	for _, f := range q.mu.files {
		if f.dirty.Swap(false) {
			toSync = append(toSync, f)
		}
	}
	syncDir := q.mu.dirDirty
	q.mu.dirDirty = false
	snap, seq := q.mu.max, q.mu.markSeq
	q.mu.snapAt = snap
	q.mu.Unlock()
	defer q.endFlush()

	for i, f := range toSync {
		fd, err := q.acquire(f)
		if err != nil {
			// Not open and no descriptor to open it (an evicted file is
			// synced before it is closed; this one was dirtied since):
			// nothing synced, nothing lost; the next Flush tries again.
			for _, g := range toSync[i:] {
				g.dirty.Store(true)
			}
			if syncDir {
				q.mu.Lock()
				q.mu.dirDirty = true
				q.mu.Unlock()
			}
			return err
		}
		err = fd.Sync()
		q.release(f)
		if err != nil {
			err = fmt.Errorf("consumequeue: %s: sync %s: %w", q, f.path, err)
			q.mu.Lock()
			if q.mu.err == nil {
				q.mu.err = err
			}
			q.mu.Unlock()
			return err
		}
	}
	if syncDir {
		if err := q.sh.h.syncDir(q.dir); err != nil {
			err = fmt.Errorf("consumequeue: %s: sync dir: %w", q, err)
			q.mu.Lock()
			if vfs.IsResourceError(err) {
				q.mu.dirDirty = true // not opened: nothing synced, nothing lost
			} else if q.mu.err == nil {
				q.mu.err = err
			}
			q.mu.Unlock()
			return err
		}
	}
	if err := q.lateErr(); err != nil {
		return err // an eviction's sync of one of these files failed
	}
	q.mu.Lock()
	q.noteSyncedLocked(snap, seq)
	q.mu.Unlock()
	return nil
}

// noteSyncedLocked records that a Flush made every entry below snap
// durable; seq is markSeq when it took snap. Callers hold mu (and flushMu,
// so the queue was not cut meanwhile).
func (q *Queue) noteSyncedLocked(snap int64, seq uint64) {
	if snap > q.mu.syncedTo {
		q.mu.syncedTo = snap
		if q.mu.max > snap {
			q.mu.pendPhys = q.mu.snapPhys
		}
	}
	if q.mu.markSeq == seq {
		q.mu.allDirty = false
	}
}

// endFlush ends a Flush's snapshot (snapAt), whatever it returned.
func (q *Queue) endFlush() {
	q.mu.Lock()
	q.mu.snapAt = -1
	q.mu.Unlock()
}

// pending returns how many entries of q are not known durable and the
// PhysOffset of the first of them (meaningless if n is 0); all says
// MarkUnsynced made the whole queue unsynced (n and phys then say nothing
// about the entries below syncedTo).
func (q *Queue) pending() (n, phys int64, all bool) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.mu.max - q.mu.syncedTo, q.mu.pendPhys, q.mu.allDirty
}

// MarkUnsynced makes the next Flush sync every file of the queue and, if
// the queue has a directory on disk, the directory. Recovery calls it
// after a crash: a dead process may have written entries it never synced,
// which re-indexing then finds in place (so writes nothing and marks
// nothing), and it may have died between creating a file and syncing the
// directory, leaving a file whose name only the page cache holds, which
// re-indexing then appends to without a Create (so syncs no directory). The
// checkpoint recovery writes must not call either durable before it is.
// (Table.MarkUnsynced also syncs the table's topic directories and root.)
func (q *Queue) MarkUnsynced() {
	q.appendMu.Lock() // for dirReady
	defer q.appendMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, f := range q.mu.files {
		f.dirty.Store(true)
	}
	q.mu.dirDirty = q.dirReady && q.nameErr == nil
	q.mu.allDirty = true
	q.mu.markSeq++
}

// close flushes and closes the queue's files; later calls return ErrClosed
// (Flush, Append) or nothing (close).
func (q *Queue) close() error {
	q.appendMu.Lock()
	defer q.appendMu.Unlock()
	q.waitSeal() // its failure is reported below (lateErr)
	q.retainMu.Lock()
	defer q.retainMu.Unlock()
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.structMu.Lock()
	defer q.structMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return nil
	}
	q.mu.closed = true
	var errs []error
	if q.mu.err == nil {
		if err := q.writeBufLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range q.mu.files {
		if f.dirty.Load() && q.mu.err == nil && len(errs) == 0 {
			fd, err := q.acquire(f)
			if err == nil {
				err = fd.Sync()
				q.release(f)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("consumequeue: %s: sync %s: %w", q, f.path, err))
			}
		}
		if err := q.sh.h.forget(f); err != nil {
			errs = append(errs, fmt.Errorf("consumequeue: %s: close %s: %w", q, f.path, err))
		}
	}
	q.mu.files = nil
	if q.mu.err != nil {
		errs = append(errs, q.mu.err)
	} else if err := q.lateErr(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
