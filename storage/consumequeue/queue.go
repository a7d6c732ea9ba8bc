package consumequeue

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/samsamq/samsa/storage/vfs"
)

// writeBufEntries is how many appended entries a queue keeps in memory before
// writing them to its file in one WriteAt (5,120 bytes).
const writeBufEntries = 256

// scratchEntries is how many entries a reader decodes per ReadAt: a request
// for more is served in chunks of this many (64 KiB reads).
const scratchEntries = 3276

type scratchBuf [scratchEntries * EntrySize]byte

// shared is what every queue of a table shares.
type shared struct {
	fs      vfs.FS
	root    string
	perFile int64 // entries per file
	log     *slog.Logger
	scratch sync.Pool // of *scratchBuf
}

func (sh *shared) getScratch() *scratchBuf  { return sh.scratch.Get().(*scratchBuf) }
func (sh *shared) putScratch(b *scratchBuf) { sh.scratch.Put(b) }

// segFile is one file of a queue. start and f never change; dirty is guarded
// by the queue's mu.
type segFile struct {
	start int64 // queue offset of the file's first entry
	path  string
	f     vfs.File
	dirty bool // written since its last Sync
}

// Queue is the consume queue of one (topic, queue id). Get one from
// Table.Queue; all methods are safe for concurrent use.
type Queue struct {
	sh      *shared
	topic   string
	qid     int32
	dir     string
	nameErr error // non-nil if topic/qid cannot name a directory

	// flushMu serialises Flush, TruncateFromPhys and Close, so one Flush
	// returning means everything appended before it is synced.
	flushMu sync.Mutex
	// structMu guards the set of open files against being closed under a
	// reader: readers and Flush hold it shared while they use a file outside
	// mu; TruncateFromPhys, DeleteBelowPhys and Close hold it exclusively.
	// Lock order: flushMu, structMu, mu.
	structMu sync.RWMutex

	mu struct {
		sync.RWMutex
		// files are contiguous: files[i].start == files[0].start + i*perFile.
		// The file bytes of entries below bufStart are written and never
		// change until TruncateFromPhys; the last file holds no bytes at or
		// past bufStart.
		files []*segFile
		min   int64 // first readable queue offset
		max   int64 // next queue offset to assign
		// wbuf holds the encoded entries [bufStart, max), all in the last file.
		bufStart int64
		wbuf     []byte
		last     Entry // the entry at max-1, if hasLast
		hasLast  bool
		dirReady bool  // the queue's directory exists durably
		err      error // sticky write or sync error
		closed   bool
	}
}

func newQueue(sh *shared, topic string, qid int32) *Queue {
	q := &Queue{sh: sh, topic: topic, qid: qid}
	if err := checkName(topic, qid); err != nil {
		q.nameErr = err
	} else {
		q.dir = filepath.Join(sh.root, topic, strconv.FormatInt(int64(qid), 10))
	}
	return q
}

// checkName rejects a topic or queue id that cannot be a directory name.
func checkName(topic string, qid int32) error {
	if topic == "" || topic == "." || topic == ".." || strings.ContainsAny(topic, "/\\\x00") || len(topic) > 255 {
		return fmt.Errorf("%w: topic %q", ErrInvalidName, topic)
	}
	if qid < 0 {
		return fmt.Errorf("%w: queue id %d", ErrInvalidName, qid)
	}
	return nil
}

// Topic returns the queue's topic.
func (q *Queue) Topic() string { return q.topic }

// QueueID returns the queue's id.
func (q *Queue) QueueID() int32 { return q.qid }

func (q *Queue) String() string { return fmt.Sprintf("%s/%d", q.topic, q.qid) }

// MinOffset returns the first queue offset that can be read.
func (q *Queue) MinOffset() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.mu.min
}

// MaxOffset returns the next queue offset to be assigned: one past the last
// entry.
func (q *Queue) MaxOffset() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.mu.max
}

// LastEntry returns the entry at MaxOffset()-1, or false if the queue has no
// readable entry.
func (q *Queue) LastEntry() (Entry, bool) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if !q.mu.hasLast || q.mu.max <= q.mu.min {
		return Entry{}, false
	}
	return q.mu.last, true
}

// Append stores the entry for queueOffset, which must be MaxOffset(): the
// entry is readable when Append returns, durable once Flush returns. An
// offset below MaxOffset whose stored entry is identical is a no-op (a
// re-dispatch after a crash); a different stored entry is ErrConflict, an
// offset past MaxOffset is ErrGap. size must be positive and the record must
// start at or after the end of the previous one (ErrInvalidEntry). A write
// error is returned and sticks: every later Append and Flush returns it.
func (q *Queue) Append(queueOffset, physOffset int64, size int32, tagsCode int64) error {
	e := Entry{PhysOffset: physOffset, Size: size, TagsCode: tagsCode}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.mu.closed:
		return ErrClosed
	case q.nameErr != nil:
		return q.nameErr
	case q.mu.err != nil:
		return q.mu.err
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
	if err := q.ensureTailLocked(); err != nil {
		q.mu.err = err
		return err
	}
	if q.mu.wbuf == nil {
		q.mu.wbuf = make([]byte, 0, writeBufEntries*EntrySize)
	}
	n := len(q.mu.wbuf)
	q.mu.wbuf = q.mu.wbuf[:n+EntrySize]
	putEntry(q.mu.wbuf[n:], e)
	q.mu.max++
	q.mu.last, q.mu.hasLast = e, true
	if len(q.mu.wbuf) == cap(q.mu.wbuf) {
		if err := q.writeBufLocked(); err != nil {
			q.mu.err = err
			return err
		}
	}
	return nil
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
	if got != e {
		return fmt.Errorf("%w: %s offset %d: stored %v, appending %v", ErrConflict, q, off, got, e)
	}
	return nil
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

// ensureTailLocked makes sure the last file has room for the entry at max:
// it creates the queue's first file, or seals a full last file (writes the
// buffer, syncs it) and creates the next.
func (q *Queue) ensureTailLocked() error {
	if n := len(q.mu.files); n > 0 {
		last := q.mu.files[n-1]
		if q.mu.max < last.start+q.sh.perFile {
			return nil
		}
		if err := q.writeBufLocked(); err != nil {
			return err
		}
		if last.dirty {
			if err := last.f.Sync(); err != nil {
				return fmt.Errorf("consumequeue: %s: sync %s: %w", q, last.path, err)
			}
			last.dirty = false
		}
	} else if err := q.ensureDirLocked(); err != nil {
		return err
	}
	return q.createFileLocked(q.mu.max)
}

// ensureDirLocked creates the queue's directory durably.
func (q *Queue) ensureDirLocked() error {
	if q.mu.dirReady {
		return nil
	}
	fs := q.sh.fs
	topicDir := filepath.Dir(q.dir)
	if err := fs.MkdirAll(q.dir); err != nil {
		return fmt.Errorf("consumequeue: %s: mkdir: %w", q, err)
	}
	if err := fs.SyncDir(q.sh.root); err != nil {
		return fmt.Errorf("consumequeue: %s: sync dir: %w", q, err)
	}
	if err := fs.SyncDir(topicDir); err != nil {
		return fmt.Errorf("consumequeue: %s: sync dir: %w", q, err)
	}
	q.mu.dirReady = true
	return nil
}

// createFileLocked creates the file starting at queue offset start (== max,
// with an empty write buffer) and syncs the directory.
func (q *Queue) createFileLocked(start int64) error {
	path := filepath.Join(q.dir, fileName(start))
	f, err := q.sh.fs.Create(path, vfs.OpenOptions{})
	if err != nil {
		return fmt.Errorf("consumequeue: %s: create: %w", q, err)
	}
	if err := q.sh.fs.SyncDir(q.dir); err != nil {
		f.Close()
		return fmt.Errorf("consumequeue: %s: sync dir: %w", q, err)
	}
	q.mu.files = append(q.mu.files, &segFile{start: start, path: path, f: f})
	q.mu.bufStart = start
	return nil
}

// writeBufLocked writes the buffered entries to the last file.
func (q *Queue) writeBufLocked() error {
	if len(q.mu.wbuf) == 0 {
		return nil
	}
	last := q.mu.files[len(q.mu.files)-1]
	if _, err := last.f.WriteAt(q.mu.wbuf, (q.mu.bufStart-last.start)*EntrySize); err != nil {
		return fmt.Errorf("consumequeue: %s: write %s: %w", q, last.path, err)
	}
	last.dirty = true
	q.mu.bufStart = q.mu.max
	q.mu.wbuf = q.mu.wbuf[:0]
	return nil
}

// Flush writes the buffered entries and syncs every file written since the
// last Flush: when it returns nil, every entry appended before the call is
// durable. A failure sticks (later Appends and Flushes return it).
func (q *Queue) Flush() error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.structMu.RLock()
	defer q.structMu.RUnlock()

	q.mu.Lock()
	if q.mu.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if q.mu.err != nil {
		err := q.mu.err
		q.mu.Unlock()
		return err
	}
	if err := q.writeBufLocked(); err != nil {
		q.mu.err = err
		q.mu.Unlock()
		return err
	}
	var dirty [4]*segFile
	toSync := dirty[:0]
	for _, f := range q.mu.files {
		if f.dirty {
			f.dirty = false
			toSync = append(toSync, f)
		}
	}
	q.mu.Unlock()

	for _, f := range toSync {
		if err := f.f.Sync(); err != nil {
			err = fmt.Errorf("consumequeue: %s: sync %s: %w", q, f.path, err)
			q.mu.Lock()
			if q.mu.err == nil {
				q.mu.err = err
			}
			q.mu.Unlock()
			return err
		}
	}
	return nil
}

// close flushes and closes the queue's files; later calls return ErrClosed
// (Flush, Append) or nothing (close).
func (q *Queue) close() error {
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
		if f.dirty && q.mu.err == nil && len(errs) == 0 {
			if err := f.f.Sync(); err != nil {
				errs = append(errs, fmt.Errorf("consumequeue: %s: sync %s: %w", q, f.path, err))
			}
		}
		if err := f.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("consumequeue: %s: close %s: %w", q, f.path, err))
		}
	}
	q.mu.files = nil
	if q.mu.err != nil {
		errs = append(errs, q.mu.err)
	}
	return errors.Join(errs...)
}
