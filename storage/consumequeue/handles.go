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
// write, a sync) and stays open, most recently used first, while fewer than
// Options.MaxOpenFiles are; opening one more closes the least recently used
// file no one is using.
//
// A file in use is pinned: acquire counts a reference, release drops it, and
// only a file with none is closed, so a reader or writer never sees its
// descriptor closed under it (a busy table may briefly hold more than the
// cap open). A dirty file (written since its last sync) is synced before it
// is closed: after close, no descriptor could report a write-back error the
// kernel found later. A failed sync there is the queue's sticky fsync error,
// as a failed Flush would be (lateErr).
//
// Locks: handles.mu guards every segFile's f, refs, gone and list links and
// is held only for bookkeeping, never for I/O. A segFile's openMu is held
// while it is opened, or synced and closed by eviction, so that the two
// never overlap and a file is never open twice; an evictor takes it with
// TryLock only (it skips a file being opened), so no lock order with the
// queues' locks exists: handles never takes a queue lock.
type handles struct {
	fs  vfs.FS
	max int

	mu   sync.Mutex
	open int      // files with a descriptor
	head *segFile // most recently used; the list holds exactly the open files
	tail *segFile

	opens     atomic.Int64 // descriptors opened (reopens included)
	evictions atomic.Int64 // descriptors closed to stay under max
}

// acquire returns sf's descriptor, opening it if needed, and pins it until
// release. The error of a failed open wraps the OS error (EMFILE: no
// descriptor free; the caller retries later).
func (h *handles) acquire(sf *segFile) (vfs.File, error) {
	h.mu.Lock()
	if f := sf.f; f != nil {
		sf.refs++
		h.touchLocked(sf)
		h.mu.Unlock()
		return f, nil
	}
	h.mu.Unlock()
	return h.openPinned(sf)
}

// release drops a reference acquire took.
func (h *handles) release(sf *segFile) {
	h.mu.Lock()
	sf.refs--
	h.mu.Unlock()
}

// openPinned is acquire's slow path: open sf, pinned, and close what is
// over the cap.
func (h *handles) openPinned(sf *segFile) (vfs.File, error) {
	sf.openMu.Lock()
	h.mu.Lock()
	if f := sf.f; f != nil { // opened meanwhile
		sf.refs++
		h.touchLocked(sf)
		h.mu.Unlock()
		sf.openMu.Unlock()
		return f, nil
	}
	if sf.gone {
		h.mu.Unlock()
		sf.openMu.Unlock()
		return nil, ErrClosed
	}
	h.mu.Unlock()
	f, err := h.withRoom(func() (vfs.File, error) { return h.fs.Open(sf.path, vfs.OpenOptions{}) })
	if err != nil {
		sf.openMu.Unlock()
		return nil, fmt.Errorf("open %s: %w", sf.path, err)
	}
	h.mu.Lock()
	sf.f, sf.refs = f, 1
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
	h.mu.Lock()
	sf.f = f
	h.pushLocked(sf)
	victims := h.victimsLocked()
	h.mu.Unlock()
	h.evict(victims)
}

// forget closes sf's descriptor for good (the file is removed or its queue
// closed); a later acquire returns ErrClosed. Nothing may hold sf: callers
// exclude its readers and writers. It waits for an eviction of sf under way.
func (h *handles) forget(sf *segFile) error {
	sf.openMu.Lock()
	defer sf.openMu.Unlock()
	h.mu.Lock()
	sf.gone = true
	f := sf.f
	if f != nil {
		h.unlinkLocked(sf)
		sf.f = nil
	}
	h.mu.Unlock()
	if f == nil {
		return nil
	}
	return f.Close()
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

// victimsLocked takes out of the list the least recently used unpinned
// files until at most max are open, and returns them with their openMu
// held, for evict.
func (h *handles) victimsLocked() []victim { return h.victimsOverLocked(h.max) }

// victimsOverLocked is victimsLocked down to limit open files.
func (h *handles) victimsOverLocked(limit int) []victim {
	var out []victim
	for sf := h.tail; h.open > limit && sf != nil; {
		prev := sf.prev
		if sf.refs == 0 && sf.openMu.TryLock() {
			out = append(out, victim{sf, sf.f})
			h.unlinkLocked(sf)
			sf.f = nil
		}
		sf = prev
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

// touchLocked moves an open sf to the front.
func (h *handles) touchLocked(sf *segFile) {
	if h.head == sf {
		return
	}
	h.unlinkLocked(sf)
	h.pushLocked(sf)
}
