package consumequeue

import (
	"errors"
	"fmt"
	"path/filepath"
)

// openQueue opens the queue in q.dir (which exists) and recovers it: every
// file but the last two must be whole (the newest sealed file is synced in
// the background, startSeal); the queue ends at the first entry that is
// zero, torn or out of order, and what follows is removed durably.
func openQueue(sh *shared, topic string, qid int32) (q *Queue, err error) {
	q = newQueue(sh, topic, qid)
	if q.nameErr != nil {
		return nil, q.nameErr
	}
	names, err := sh.fs.List(q.dir)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: %s: list: %w", q, err)
	}
	var starts []int64
	for _, name := range names {
		start, ok := parseFileName(name)
		if !ok {
			sh.log.Warn("consumequeue: ignoring unknown file", "queue", q.String(), "file", name)
			continue
		}
		starts = append(starts, start) // List is sorted; 20-digit names sort numerically
	}
	for i, s := range starts {
		if s != starts[0]+int64(i)*sh.perFile {
			return nil, fmt.Errorf("%w: %s: file %s does not follow %s (files of %d entries; did EntriesPerFile change?)",
				ErrCorrupt, q, fileName(s), fileName(starts[i-1]), sh.perFile)
		}
	}
	defer func(q *Queue) { // q itself: a failing return sets the named result to nil
		if err != nil {
			for _, f := range q.mu.files {
				_ = sh.h.forget(f)
			}
		}
	}(q)
	for _, s := range starts { // opened as recovery reads them (handles.go)
		q.mu.files = append(q.mu.files, q.newSegFile(s, filepath.Join(q.dir, fileName(s))))
	}
	q.dirReady = true
	if len(starts) == 0 {
		return q, nil
	}
	if err := q.recoverFiles(); err != nil {
		return nil, err
	}
	q.mu.min = q.mu.files[0].start
	q.mu.bufStart = q.mu.max
	q.mu.syncedTo = q.mu.max // on disk (MarkUnsynced says otherwise after a crash)
	if last := q.mu.files[len(q.mu.files)-1]; q.mu.max > last.start {
		q.mu.suspect = q.mu.max - 1
	}
	return q, nil
}

// recoverFiles finds the end of the queue, sets max and last, and cuts what
// follows.
func (q *Queue) recoverFiles() error {
	fileBytes := q.sh.perFile * EntrySize
	var prev *Entry
	for i, f := range q.mu.files {
		size, err := q.fileSize(f)
		if err != nil {
			return fmt.Errorf("consumequeue: %s: size of %s: %w", q, f.path, err)
		}
		if i < len(q.mu.files)-2 && size == fileBytes {
			// Sealed, and synced before the file after its successor was
			// created (finishSeal). Check its last entry only; the newest
			// sealed file is read whole, as the last one is.
			var one [1]Entry
			if err := q.readFile(f, f.start+q.sh.perFile-1, one[:]); err != nil {
				return err
			}
			if one[0].follows(prev) {
				e := one[0]
				prev = &e
				continue
			}
		}
		valid, last, err := q.scanFile(f, min(size, fileBytes)/EntrySize, prev)
		if err != nil {
			return err
		}
		if last != nil {
			prev = last
		}
		if valid == q.sh.perFile && i < len(q.mu.files)-1 {
			if size > fileBytes {
				if err := q.cutFile(f, size, fileBytes); err != nil {
					return err
				}
			}
			continue
		}
		// The queue ends in f.
		if err := q.removeFilesAfter(i); err != nil {
			return err
		}
		if err := q.cutFile(f, size, valid*EntrySize); err != nil {
			return err
		}
		break
	}
	lastFile := q.mu.files[len(q.mu.files)-1]
	size, err := q.fileSize(lastFile)
	if err != nil {
		return fmt.Errorf("consumequeue: %s: size of %s: %w", q, lastFile.path, err)
	}
	q.mu.max = lastFile.start + size/EntrySize
	if prev != nil {
		q.mu.last, q.mu.hasLast = *prev, true
	}
	return nil
}

// fileSize is the size of f's file.
func (q *Queue) fileSize(f *segFile) (int64, error) {
	fd, err := q.acquire(f)
	if err != nil {
		return 0, err
	}
	defer q.release(f)
	return fd.Size()
}

// scanFile returns how many of the first n entries of f form a valid chain
// after prev, and the last of them (nil if none).
func (q *Queue) scanFile(f *segFile, n int64, prev *Entry) (int64, *Entry, error) {
	fd, err := q.acquire(f)
	if err != nil {
		return 0, nil, err
	}
	defer q.release(f)
	buf := q.sh.getScratch()
	defer q.sh.putScratch(buf)
	var valid int64
	var last Entry
	have := false
	for valid < n {
		k := min(n-valid, scratchEntries)
		b := buf[:k*EntrySize]
		pos := valid * EntrySize
		if got, err := fd.ReadAt(b, pos); int64(got) < int64(len(b)) {
			return 0, nil, fmt.Errorf("consumequeue: %s: read %s at %d: %w", q, f.path, pos, err)
		}
		for i := range k {
			e := getEntry(b[i*EntrySize:])
			if !e.follows(prev) {
				if have {
					return valid, &last, nil
				}
				return valid, nil, nil
			}
			last, have = e, true
			prev = &last
			valid++
		}
	}
	if have {
		return valid, &last, nil
	}
	return valid, nil, nil
}

// cutFile truncates f from size to keep bytes, durably, if they differ.
func (q *Queue) cutFile(f *segFile, size, keep int64) error {
	if size == keep {
		return nil
	}
	q.sh.log.Warn("consumequeue: cutting invalid tail", "queue", q.String(), "file", filepath.Base(f.path),
		"size", size, "kept", keep)
	return q.truncateFile(f, keep)
}

// truncateFile truncates f's file to size bytes and syncs it.
func (q *Queue) truncateFile(f *segFile, size int64) error {
	fd, err := q.acquire(f)
	if err != nil {
		return err
	}
	defer q.release(f)
	if err := fd.Truncate(size); err != nil {
		return fmt.Errorf("consumequeue: %s: truncate %s: %w", q, f.path, err)
	}
	if err := fd.Sync(); err != nil {
		return fmt.Errorf("consumequeue: %s: sync %s: %w", q, f.path, err)
	}
	f.dirty.Store(false)
	return nil
}

// removeFilesAfter closes and removes files[i+1:], last first, syncing the
// directory after each so a crash leaves a contiguous run of files.
func (q *Queue) removeFilesAfter(i int) error {
	for j := len(q.mu.files) - 1; j > i; j-- {
		f := q.mu.files[j]
		q.sh.log.Warn("consumequeue: removing file past the queue's end", "queue", q.String(), "file", filepath.Base(f.path))
		if err := q.removeFile(f); err != nil {
			return err
		}
		q.mu.files[j] = nil
		q.mu.files = q.mu.files[:j]
	}
	return nil
}

// removeFile closes f, removes it and syncs the directory.
func (q *Queue) removeFile(f *segFile) error {
	cerr := q.sh.h.forget(f)
	if err := q.sh.fs.Remove(f.path); err != nil {
		return fmt.Errorf("consumequeue: %s: remove %s: %w", q, f.path, errors.Join(err, cerr))
	}
	if err := q.sh.h.syncDir(q.dir); err != nil {
		return fmt.Errorf("consumequeue: %s: sync dir: %w", q, err)
	}
	return nil
}
