package consumequeue

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/samsamq/samsa/storage/vfs"
)

// Append stores the entry for queueOffset, which must be MaxOffset(): the
// entry is readable when Append returns, durable once Flush returns. An
// offset below MaxOffset whose stored entry is identical is a no-op (a
// re-dispatch after a crash); a different stored entry is ErrConflict, except
// for the last entry recovery found, which a crash may have torn: that one is
// replaced (the entry is truncated durably, then appended). An offset past
// MaxOffset is ErrGap. size must be positive and the record must start at or
// after the end of the previous one (ErrInvalidEntry).
//
// An error means the entry was not stored. A write error (ENOSPC, EIO from
// WriteAt, Create or MkdirAll) leaves the queue as it was: the entries
// buffered before it are kept and written again by the next Append or
// Flush, so the caller retries the same Append once the disk has room. An
// fsync error sticks: every later Append and Flush returns it.
func (q *Queue) Append(queueOffset, physOffset int64, size int32, tagsCode int64) error {
	e := Entry{PhysOffset: physOffset, Size: size, TagsCode: tagsCode}
	q.appendMu.Lock()
	defer q.appendMu.Unlock()
	for {
		err := q.append(queueOffset, e)
		switch err {
		case errNeedFile:
			err = q.addFile()
		case errTornTail:
			err = q.replaceSuspect(queueOffset)
		default:
			return err
		}
		if err != nil {
			return err
		}
	}
}

// Prepare creates the queue's directory and first file now, if it has
// none, rather than at its first Append: a broker creating a topic calls
// it, so the dispatcher, which indexes every queue in turn, does not stop
// for a mkdir and a create when a new queue's first record comes (at
// 10,000 new queues, about 4 s of its time). The names are made durable by
// the next Table.Flush.
func (q *Queue) Prepare() error {
	q.appendMu.Lock()
	defer q.appendMu.Unlock()
	q.mu.RLock()
	err := q.usableLocked()
	n := len(q.mu.files)
	q.mu.RUnlock()
	if err != nil || n > 0 {
		return err
	}
	return q.addFile()
}

// StartAt makes a queue that has no entry yet begin at queue offset off:
// MinOffset and MaxOffset become off and its first file is named for off.
// It is for a replica whose CommitLog begins after the queue's first
// records (they lie below it). An empty first file (Prepare's) is removed
// first, durably; a queue with an entry refuses with ErrConflict.
func (q *Queue) StartAt(off int64) error {
	q.appendMu.Lock()
	defer q.appendMu.Unlock()
	if err := q.dropEmptyFile(off); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.usableLocked(); err != nil {
		return err
	}
	switch {
	case len(q.mu.files) > 0:
		return fmt.Errorf("%w: %s: start at offset %d: the queue has files (offsets [%d, %d))", ErrConflict, q, off, q.mu.min, q.mu.max)
	case off < 0:
		return fmt.Errorf("%w: %s: start at offset %d", ErrInvalidEntry, q, off)
	}
	q.mu.min, q.mu.max, q.mu.bufStart, q.mu.syncedTo = off, off, off, off
	return nil
}

// dropEmptyFile removes the queue's only file if it holds no entry and is
// not named for off, and syncs the directory: a crash must not leave it
// beside the file StartAt names next (recovery wants contiguous files).
// Callers hold appendMu.
func (q *Queue) dropEmptyFile(off int64) error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.structMu.Lock()
	defer q.structMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.usableLocked(); err != nil {
		return err
	}
	if len(q.mu.files) != 1 || q.mu.max != q.mu.files[0].start || q.mu.min != q.mu.max || q.mu.files[0].start == off {
		return nil
	}
	f := q.mu.files[0]
	if err := q.sh.fs.Remove(f.path); err != nil {
		return fmt.Errorf("consumequeue: %s: remove %s: %w", q, f.path, err) // nothing changed
	}
	q.mu.files = nil
	var errs []error
	if err := q.sh.h.forget(f); err != nil {
		errs = append(errs, fmt.Errorf("consumequeue: %s: close %s: %w", q, f.path, err))
	}
	if err := q.sh.h.syncDir(q.dir); err != nil {
		err = fmt.Errorf("consumequeue: %s: sync dir: %w", q, err)
		q.mu.err = err // the removal may not be durable: stop here, as a failed fsync does
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// append's answers that Append resolves outside mu, then calls it again.
var (
	// errNeedFile: the last file is full (its buffer written) or there is none.
	errNeedFile = errors.New("consumequeue: need a new file")
	// errTornTail: e disagrees with the suspect entry.
	errTornTail = errors.New("consumequeue: re-dispatch disagrees with the recovered last entry")
)

// append stores e at queueOffset if it is max and the last file has room.
// Callers hold appendMu.
func (q *Queue) append(queueOffset int64, e Entry) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.usableLocked(); err != nil {
		return err
	}
	switch {
	case queueOffset > q.mu.max:
		return fmt.Errorf("%w: %s: offset %d, max offset %d", ErrGap, q, queueOffset, q.mu.max)
	case queueOffset < q.mu.max:
		return q.checkStoredLocked(queueOffset, e)
	}
	var prev *Entry
	if q.mu.hasLast {
		prev = &q.mu.last
	}
	if !e.follows(prev) {
		return fmt.Errorf("%w: %s offset %d: %v after %v", ErrInvalidEntry, q, queueOffset, e, q.mu.last)
	}
	n := len(q.mu.files)
	if n == 0 || q.mu.max == q.mu.files[n-1].start+q.sh.perFile {
		if err := q.writeBufLocked(); err != nil {
			return err // not stored; the buffer is kept for the retry
		}
		return errNeedFile
	}
	if q.mu.wbuf == nil {
		q.mu.wbuf = make([]byte, 0, writeBufEntries*EntrySize)
	}
	if len(q.mu.wbuf) == cap(q.mu.wbuf) {
		// The write of the full buffer failed after an earlier Append
		// stored its entry: try again before taking this one.
		if err := q.writeBufLocked(); err != nil {
			return err
		}
	}
	b := len(q.mu.wbuf)
	q.mu.wbuf = q.mu.wbuf[:b+EntrySize]
	putEntry(q.mu.wbuf[b:], e)
	switch queueOffset {
	case q.mu.syncedTo:
		q.mu.pendPhys = e.PhysOffset
	case q.mu.snapAt:
		q.mu.snapPhys = e.PhysOffset
	}
	q.mu.max++
	q.mu.last, q.mu.hasLast = e, true
	if len(q.mu.wbuf) == cap(q.mu.wbuf) {
		// The entry is stored (readable from the buffer) whatever this
		// write does; a failure is retried by the next Append or Flush.
		_ = q.writeBufLocked()
	}
	return nil
}

// usableLocked says why nothing can be appended (closed, a name that
// cannot be a directory, a sticky fsync error), or nil. Callers hold mu.
func (q *Queue) usableLocked() error {
	switch {
	case q.mu.closed:
		return ErrClosed
	case q.nameErr != nil:
		return q.nameErr
	case q.mu.err != nil:
		return q.mu.err
	}
	return q.lateErr()
}

// checkStoredLocked compares e with the stored entry at off < max.
func (q *Queue) checkStoredLocked(off int64, e Entry) error {
	if len(q.mu.files) == 0 || off < q.mu.files[0].start {
		return fmt.Errorf("%w: %s: re-append at %d below the first file", ErrOffsetTooSmall, q, off)
	}
	got, err := q.entryLocked(off)
	if err != nil {
		return err
	}
	if got == e {
		if off == q.mu.suspect {
			q.mu.suspect = -1 // confirmed by the CommitLog
		}
		return nil
	}
	if off == q.mu.suspect {
		return errTornTail
	}
	return fmt.Errorf("%w: %s offset %d: stored %v, appending %v", ErrConflict, q, off, got, e)
}

// entryLocked reads the entry at off, which must be in [files[0].start, max).
// Callers hold mu (either way) or structMu exclusively.
func (q *Queue) entryLocked(off int64) (Entry, error) {
	if off >= q.mu.bufStart {
		i := (off - q.mu.bufStart) * EntrySize
		return getEntry(q.mu.wbuf[i : i+EntrySize]), nil
	}
	var one [1]Entry
	err := q.readFile(q.fileFor(q.mu.files, off), off, one[:])
	return one[0], err
}

// fileFor returns the file holding queue offset off.
func (q *Queue) fileFor(files []*segFile, off int64) *segFile {
	return files[(off-files[0].start)/q.sh.perFile]
}

// addFile seals the full last file and creates the next one, or creates
// the queue's directory and first file. The sealed file is synced in the
// background while the next one takes entries (startSeal), and the file
// sealed before it must have been synced first (finishSeal): after a
// crash every file but the last two is whole. It does the I/O without
// mu, so readers and Flush go on meanwhile. Callers hold appendMu; the
// buffer is empty.
func (q *Queue) addFile() error {
	q.mu.RLock()
	start := q.mu.max
	var last *segFile
	if n := len(q.mu.files); n > 0 {
		last = q.mu.files[n-1]
	}
	q.mu.RUnlock()
	err := q.sealAndCreate(last, start)
	var se syncError
	if errors.As(err, &se) {
		q.mu.Lock()
		if q.mu.err == nil {
			q.mu.err = err
		}
		q.mu.Unlock()
	}
	return err
}

// syncError marks a failed fsync (of a file or a directory): it sticks,
// where a failed mkdir, create or write is only returned.
type syncError struct{ error }

func (e syncError) Unwrap() error { return e.error }

// sealAndCreate does addFile's I/O. A failed fsync comes back as a
// syncError; any other failure leaves nothing to undo (a created file that
// is not in files is created again, truncated, by the retry).
func (q *Queue) sealAndCreate(last *segFile, start int64) error {
	fs := q.sh.fs
	if last != nil {
		// Only the newest sealed file may be unsynced.
		if err := q.finishSeal(); err != nil {
			return err
		}
	} else if !q.dirReady {
		if err := fs.MkdirAll(q.dir); err != nil {
			return fmt.Errorf("consumequeue: %s: mkdir: %w", q, err)
		}
		// The new names are made durable by the next Table.Flush (which
		// the checkpoint waits for before it counts any entry here as
		// indexed), not on the dispatcher's path.
		q.sh.dirtyDir(q.sh.root)
		q.sh.dirtyDir(filepath.Dir(q.dir))
		q.dirReady = true
	}
	path := filepath.Join(q.dir, fileName(start))
	f, err := q.sh.h.withRoom(func() (vfs.File, error) { return fs.Create(path, vfs.OpenOptions{}) })
	if err != nil {
		return fmt.Errorf("consumequeue: %s: create: %w", q, err)
	}
	sf := q.newSegFile(start, path)
	q.sh.h.adopt(sf, f)
	var j *sealJob
	if last != nil {
		j = &sealJob{f: last, done: make(chan struct{})}
		last.seal.Store(j) // before anyone can see it sealed (and forget it)
	}
	q.mu.Lock()
	q.mu.files = append(q.mu.files, sf)
	q.mu.bufStart = start
	q.mu.dirDirty = true // the file's name: synced by the next Flush
	q.mu.Unlock()
	if j != nil {
		q.startSeal(j)
	}
	return nil
}

// startSeal syncs j's sealed file in a goroutine of its own, so the
// dispatcher goes on indexing meanwhile: with the log being written, a
// file's fdatasync waits for the file system's journal, which took 0.1 to
// 0.3 s here at 700k appends a second, and every queue's entries waited
// behind it. A Flush may be syncing the file too, or have cleared dirty
// before its own sync finished: it is synced regardless (once per file).
// A failed sync sticks (failLate), as a Flush's would. Callers hold
// appendMu and have made j the file's seal.
func (q *Queue) startSeal(j *sealJob) {
	q.seal.Store(j)
	go func() {
		defer close(j.done)
		j.err = q.syncSealed(j.f)
	}()
}

// syncSealed syncs the sealed file f. It returns the error of an open
// that failed (nothing synced and nothing lost: the caller tries again);
// a failed sync sticks (failLate), so it returns nil and the queue's
// error says it from then on.
func (q *Queue) syncSealed(f *segFile) error {
	fd, err := q.acquire(f)
	if err != nil {
		return err
	}
	err = fd.Sync()
	q.release(f)
	if err != nil {
		q.failLate(syncError{fmt.Errorf("consumequeue: %s: sync %s: %w", q, f.path, err)})
		return nil
	}
	f.dirty.Store(false) // nothing writes a full file
	return nil
}

// waitSeal waits for the newest sealed file's sync, if one runs.
func (q *Queue) waitSeal() {
	if j := q.seal.Load(); j != nil {
		<-j.done
	}
}

// finishSeal sees the newest sealed file's sync through: it waits for it,
// syncs the file here if the sync could not open it, and returns the
// queue's sticky error if a sync failed. Callers hold appendMu.
func (q *Queue) finishSeal() error {
	if j := q.seal.Load(); j != nil {
		<-j.done
		if j.err != nil && q.lateErr() == nil && q.hasFile(j.f) {
			if err := q.syncSealed(j.f); err != nil {
				return err // still no descriptor: the next addFile tries again
			}
		}
		q.seal.CompareAndSwap(j, nil)
	}
	return q.lateErr()
}

// writeBufLocked writes the buffered entries to the last file.
func (q *Queue) writeBufLocked() error {
	if len(q.mu.wbuf) == 0 {
		return nil
	}
	last := q.mu.files[len(q.mu.files)-1]
	f, err := q.acquire(last)
	if err != nil {
		return err
	}
	// Dirty before the write, while pinned: even a failed write may have
	// put bytes in the file, and an eviction after release syncs them.
	last.dirty.Store(true)
	_, err = f.WriteAt(q.mu.wbuf, (q.mu.bufStart-last.start)*EntrySize)
	q.release(last)
	if err != nil {
		return fmt.Errorf("consumequeue: %s: write %s: %w", q, last.path, err)
	}
	q.mu.bufStart = q.mu.max
	q.mu.wbuf = q.mu.wbuf[:0]
	return nil
}

// hasFile says whether f is still one of the queue's files (a cut or a
// trim may have removed it).
func (q *Queue) hasFile(f *segFile) bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return slices.Contains(q.mu.files, f)
}
