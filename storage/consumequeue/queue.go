package consumequeue

import (
	"cmp"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
	h       *handles  // the table's open files

	// newDirs are the directories that gained an entry (a topic's
	// directory in the root, a queue's in its topic's) since the last
	// Table.Flush, which syncs them: a queue's first file is created on
	// the dispatcher's path, and three directory syncs there per new queue
	// cost 10,000 new queues most of their first seconds.
	dirMu   sync.Mutex
	newDirs map[string]struct{}
}

// dirtyDir notes that dir gained an entry Table.Flush must make durable.
func (sh *shared) dirtyDir(dir string) {
	sh.dirMu.Lock()
	if sh.newDirs == nil {
		sh.newDirs = map[string]struct{}{}
	}
	sh.newDirs[dir] = struct{}{}
	sh.dirMu.Unlock()
}

// takeDirtyDirs returns the directories dirtyDir noted and forgets them,
// deepest first (a queue's before its topic's before the root).
func (sh *shared) takeDirtyDirs() []string {
	sh.dirMu.Lock()
	defer sh.dirMu.Unlock()
	out := make([]string, 0, len(sh.newDirs))
	for d := range sh.newDirs {
		out = append(out, d)
	}
	clear(sh.newDirs)
	slices.SortFunc(out, func(a, b string) int {
		if c := cmp.Compare(strings.Count(b, string(filepath.Separator)), strings.Count(a, string(filepath.Separator))); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return out
}

func (sh *shared) getScratch() *scratchBuf  { return sh.scratch.Get().(*scratchBuf) }
func (sh *shared) putScratch(b *scratchBuf) { sh.scratch.Put(b) }

// segFile is one file of a queue. start, path and q never change; its
// descriptor is opened on use and may be closed when idle (handles.go).
type segFile struct {
	start int64 // queue offset of the file's first entry
	path  string
	q     *Queue
	dirty atomic.Bool // written since its last Sync

	// See handles: the descriptor (nil when closed), the pins (with the
	// closing bit), used since the last sweep, openMu; gone (forgotten
	// for good) and the list links are guarded by handles.mu.
	cur        atomic.Pointer[fileBox]
	pins       atomic.Int64
	used       atomic.Bool
	openMu     sync.Mutex
	gone       bool
	prev, next *segFile

	// seal is the file's background sync once it was sealed (startSeal);
	// forget waits for it before it closes the descriptor.
	seal atomic.Pointer[sealJob]
}

// sealJob is the background sync of a sealed file (startSeal).
type sealJob struct {
	f    *segFile
	done chan struct{} // closed when the sync has ended
	// err: the file could not be opened (no descriptor free), so nothing
	// was synced and nothing lost: finishSeal syncs it. Set before done
	// is closed. A failed sync is the queue's sticky error instead.
	err error
}

// newSegFile is a file of q starting at queue offset start, not open.
func (q *Queue) newSegFile(start int64, path string) *segFile {
	return &segFile{start: start, path: path, q: q}
}

// acquire pins f's descriptor (opening it if needed) until release.
func (q *Queue) acquire(f *segFile) (vfs.File, error) {
	fd, err := q.sh.h.acquire(f)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: %s: %w", q, err)
	}
	return fd, nil
}

func (q *Queue) release(f *segFile) { q.sh.h.release(f) }

// failLate records a failed fsync found outside the queue's locks (closing
// an idle dirty file): it sticks as a Flush's would.
func (q *Queue) failLate(err error) {
	q.late.CompareAndSwap(nil, &err)
}

// lateErr is the sticky error failLate recorded, or nil.
func (q *Queue) lateErr() error {
	if p := q.late.Load(); p != nil {
		return *p
	}
	return nil
}

// Queue is the consume queue of one (topic, queue id). Get one from
// Table.Queue; all methods are safe for concurrent use.
type Queue struct {
	sh      *shared
	topic   string
	qid     int32
	dir     string
	nameErr error // non-nil if topic/qid cannot name a directory

	// appendMu serialises Append with itself and with the operations that
	// cut the tail (TruncateFromPhys, close): Append holds it throughout, so
	// it can sync a full file and create the next without holding mu.
	appendMu sync.Mutex
	// dirReady says the queue's directory exists durably. Guarded by
	// appendMu (set before the queue is shared by openQueue).
	dirReady bool
	// flushMu serialises Flush, TruncateFromPhys and close, so one Flush
	// returning means everything appended before it is synced.
	flushMu sync.Mutex
	// retainMu serialises DeleteBelowPhys, which removes files oldest first
	// outside the other locks.
	retainMu sync.Mutex
	// structMu guards the set of open files against being closed under a
	// reader: readers and Flush hold it shared while they use a file outside
	// mu; TruncateFromPhys, DeleteBelowPhys (to detach files) and close hold
	// it exclusively.
	// Lock order: appendMu, retainMu, flushMu, structMu, mu.
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
		// suspect is the offset of the last entry recovery found in the
		// last file (-1: none): a crash may have torn its trailing bytes
		// (tags code) undetectably, so a re-dispatch that disagrees with
		// it replaces it instead of failing with ErrConflict.
		suspect int64
		// dirDirty says the queue's directory may hold names no SyncDir
		// covered (a dead process created or removed a file and never
		// synced the directory): the next Flush syncs it. Set by
		// MarkUnsynced.
		dirDirty bool
		err      error // sticky fsync error (a failed write is only returned)
		closed   bool

		// What a lazy flush (Table.FlushSome) needs to know cheaply:
		// syncedTo is the queue offset below which every entry is durable
		// as far as this queue's files go (a Flush synced it, or it was
		// on disk when the queue was opened); pendPhys is the PhysOffset
		// of the entry at syncedTo, valid while max > syncedTo. snapAt is
		// a running Flush's snapshot of max (-1: none), and snapPhys the
		// PhysOffset of the entry appended there, which becomes pendPhys
		// when that Flush succeeds. allDirty (MarkUnsynced) says nothing
		// is known synced; markSeq counts MarkUnsynced calls, so a Flush
		// that ran across one does not clear it.
		syncedTo int64
		pendPhys int64
		snapAt   int64
		snapPhys int64
		allDirty bool
		markSeq  uint64
	}
	// late is a sticky fsync error met while closing an idle file
	// (failLate); usableLocked and Flush report it.
	late atomic.Pointer[error]
	// seal is the newest sealed file's sync, in flight or ended, until
	// finishSeal has seen it through (nil then).
	seal atomic.Pointer[sealJob]
}

func newQueue(sh *shared, topic string, qid int32) *Queue {
	q := &Queue{sh: sh, topic: topic, qid: qid}
	q.mu.suspect = -1
	q.mu.snapAt = -1
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
