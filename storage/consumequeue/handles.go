package consumequeue

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/samsamq/samsa/storage/vfs"
)

// handles bounds the open files of a table: 10,000 queues must not need
// 10,000 descriptors. A queue's file is opened on first use (a read, a
// write, a sync) and stays open while fewer than Options.MaxOpenFiles are;
// opening one more closes an idle file not used lately (CLOCK: a file used
// since the last sweep gets a second chance).
//
// A file in use is pinned: acquire counts a pin, release drops it, and only
// a file with none is closed, so a reader or writer never sees its
// descriptor closed under it (a busy table may briefly hold more than the
// cap open). A dirty file (written since its last sync) is synced before it
// is closed: after close, no descriptor could report a write-back error the
// kernel found later. A failed sync there is the queue's sticky fsync error,
// as a failed Flush would be (lateErr).
//
// The hot path (acquire and release of an open file) is two atomic
// operations on the file: pins counts the pins, and its closing bit, set by
// a compare-and-swap from zero pins, keeps new pins out while the file is
// closed. handles.mu guards the open-file list, gone and the count, and is
// held only for bookkeeping, never for I/O. A segFile's openMu is held
// while it is opened, or synced and closed by eviction or forget, so that
// these never overlap and a file is never open twice; an evictor takes it
// with TryLock only (it skips a file being opened), so no lock order with
// the queues' locks exists: handles never takes a queue lock.
type handles struct {
	fs  vfs.FS
	max int

	mu   sync.Mutex
	open int      // files with a descriptor
	head *segFile // newest opened; the list holds exactly the open files
	tail *segFile

	opens     atomic.Int64 // descriptors opened (reopens included)
	evictions atomic.Int64 // descriptors closed to stay under max
}

// closing is segFile.pins's bit that keeps new pins out.
const closing = int64(1) << 62

// fileBox holds a descriptor for an atomic pointer.
type fileBox struct{ f vfs.File }

// acquire returns sf's descriptor, opening it if needed, and pins it until
// release. The error of a failed open wraps the OS error (EMFILE: no
// descriptor free; the caller retries later).
func (h *handles) acquire(sf *segFile) (vfs.File, error) {
	for {
		p := sf.pins.Load()
		if p&closing != 0 || sf.cur.Load() == nil {
			break
		}
		if sf.pins.CompareAndSwap(p, p+1) {
			// Pinned with no closing bit: the file stays open until
			// release (an evictor's CAS from 0 fails now).
			if b := sf.cur.Load(); b != nil {
				if !sf.used.Load() {
					sf.used.Store(true)
				}
				return b.f, nil
			}
			sf.pins.Add(-1) // closed before the pin: open it again
			break
		}
	}
	return h.openPinned(sf)
}

// release drops a pin acquire took.
func (h *handles) release(sf *segFile) { sf.pins.Add(-1) }

// openPinned is acquire's slow path: open sf, pinned, and close what is
// over the cap.
func (h *handles) openPinned(sf *segFile) (vfs.File, error) {
	sf.openMu.Lock()
	if b := sf.cur.Load(); b != nil { // opened meanwhile; none can close it: we hold openMu
		sf.pins.Add(1)
		sf.openMu.Unlock()
		return b.f, nil
	}
	h.mu.Lock()
	gone := sf.gone
	h.mu.Unlock()
	if gone {
		sf.openMu.Unlock()
		return nil, ErrClosed
	}
	f, err := h.withRoom(func() (vfs.File, error) { return h.fs.Open(sf.path, vfs.OpenOptions{}) })
	if err != nil {
		sf.openMu.Unlock()
		return nil, fmt.Errorf("open %s: %w", sf.path, err)
	}
	sf.pins.Add(1)
	sf.cur.Store(&fileBox{f})
	h.mu.Lock()
	h.pushLocked(sf)
	victims := h.victimsLocked()
	h.mu.Unlock()
	sf.openMu.Unlock()
	h.evict(victims)
	return f, nil
}

// roomTries bounds withRoom's retries: each closes one idle file.
const roomTries = 8

// withRoom runs open (an Open or Create). If the process is out of
// descriptors (EMFILE, ENFILE) it closes the least recently used idle file,
// whatever the cap, and tries again, a few times: a cap above what the
// process may open (RLIMIT_NOFILE, descriptors the rest of the process
// holds) shrinks to fit instead of failing. The error, if it still fails,
// wraps the OS's.
func (h *handles) withRoom(open func() (vfs.File, error)) (vfs.File, error) {
	var f vfs.File
	err := h.withRoomDo(func() (err error) {
		f, err = open()
		return err
	})
	if err != nil {
		return nil, err
	}
	h.opens.Add(1)
	return f, nil
}

// syncDir is fs.SyncDir(dir), which opens the directory, withRoom.
func (h *handles) syncDir(dir string) error {
	return h.withRoomDo(func() error { return h.fs.SyncDir(dir) })
}

// withRoomDo is withRoom for any call that opens a descriptor.
func (h *handles) withRoomDo(do func() error) error {
	for try := 0; ; try++ {
		err := do()
		if err == nil || try == roomTries || !(errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) {
			return err
		}
		h.mu.Lock()
		vs := h.victimsOverLocked(h.open - 1)
		h.mu.Unlock()
		if len(vs) == 0 {
			return err // every open file is in use
		}
		h.evict(vs)
	}
}

// adopt makes f, just created, sf's descriptor (unpinned) and closes what
// is over the cap.
func (h *handles) adopt(sf *segFile, f vfs.File) {
	sf.cur.Store(&fileBox{f})
	h.mu.Lock()
	h.pushLocked(sf)
	victims := h.victimsLocked()
	h.mu.Unlock()
	h.evict(victims)
}

// forget closes sf's descriptor for good (the file is removed or its queue
// closed); a later acquire returns ErrClosed. Nothing may hold sf: callers
// exclude its readers and writers. It waits for an eviction of sf under way.
func (h *handles) forget(sf *segFile) error {
	if j := sf.seal.Load(); j != nil {
		<-j.done // before openMu: the sync may be opening the file
	}
	sf.openMu.Lock()
	defer sf.openMu.Unlock()
	h.mu.Lock()
	sf.gone = true
	b := sf.cur.Load()
	if b != nil {
		h.unlinkLocked(sf)
	}
	h.mu.Unlock()
	sf.pins.Or(closing) // for good: every acquire takes the slow path
	sf.cur.Store(nil)
	if b == nil {
		return nil
	}
	return b.f.Close()
}

// Open returns how many queue files have a descriptor now.
func (h *handles) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
}

type victim struct {
	sf *segFile
	f  vfs.File
}

// victimsLocked takes out of the list idle files until at most max are
// open, and returns them closed to new pins, with their openMu held, for
// evict.
func (h *handles) victimsLocked() []victim { return h.victimsOverLocked(h.max) }

// victimsOverLocked is victimsLocked down to limit open files. It sweeps
// from the oldest: a file used since the last sweep moves to the front
// (its second chance); an unpinned one is taken. At most two passes.
func (h *handles) victimsOverLocked(limit int) []victim {
	var out []victim
	for n := 2 * h.open; h.open > limit && n > 0 && h.tail != nil; n-- {
		sf := h.tail
		if sf.used.Load() {
			sf.used.Store(false)
			h.unlinkLocked(sf)
			h.pushLocked(sf)
			continue
		}
		if !sf.openMu.TryLock() { // being opened or closed
			h.unlinkLocked(sf)
			h.pushLocked(sf)
			continue
		}
		if !sf.pins.CompareAndSwap(0, closing) { // pinned
			sf.openMu.Unlock()
			h.unlinkLocked(sf)
			h.pushLocked(sf)
			continue
		}
		b := sf.cur.Load()
		sf.cur.Store(nil)
		h.unlinkLocked(sf)
		out = append(out, victim{sf, b.f})
	}
	return out
}

// evict syncs (if dirty) and closes the victims, then lets them be opened
// again.
func (h *handles) evict(vs []victim) {
	for _, v := range vs {
		if v.sf.dirty.Load() {
			if err := v.f.Sync(); err != nil {
				v.sf.q.failLate(fmt.Errorf("consumequeue: %s: sync %s before closing it: %w", v.sf.q, v.sf.path, err))
			} else {
				v.sf.dirty.Store(false)
			}
		}
		if err := v.f.Close(); err != nil {
			v.sf.q.sh.log.Warn("consumequeue: close", "file", v.sf.path, "err", err)
		}
		h.evictions.Add(1)
		v.sf.pins.Add(-closing) // open to pins again (acquire reopens it)
		v.sf.openMu.Unlock()
	}
}

func (h *handles) pushLocked(sf *segFile) {
	sf.prev, sf.next = nil, h.head
	if h.head != nil {
		h.head.prev = sf
	}
	h.head = sf
	if h.tail == nil {
		h.tail = sf
	}
	h.open++
}

func (h *handles) unlinkLocked(sf *segFile) {
	if sf.prev != nil {
		sf.prev.next = sf.next
	} else {
		h.head = sf.next
	}
	if sf.next != nil {
		sf.next.prev = sf.prev
	} else {
		h.tail = sf.prev
	}
	sf.prev, sf.next = nil, nil
	h.open--
}
