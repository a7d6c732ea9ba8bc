package backend

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/storage/vfs"
)

// Cold reads: a consumer far behind the tail reads a backlog the page
// cache no longer holds. A buffered read of it fills the page cache with
// bytes read once (the pollution that hurts Kafka and RocketMQ under cold
// reads) and costs a page-cache page per 4 KiB on the way. A cold read
// first asks the kernel which of its pages are in the page cache
// (cachestat, Linux 6.5; it reads nothing and starts no read-ahead, which
// a preadv2 RWF_NOWAIT probe does): when all are, or any is dirty or
// under writeback (a direct read would make the kernel write it first),
// the bytes are read from the page cache as before; else from the disk
// with O_DIRECT into the caller's buffer, around the page cache.

// pageSize is the system page size (cachestat counts pages).
var pageSize = unix.Getpagesize()

// DirectAlign is what a cold read's buffer address, offset and length
// must be multiples of (O_DIRECT's logical block, at most a page).
const DirectAlign = 4096

// ErrNoColdRead says a segment cannot read cold here: no descriptor
// (MemFS), a read not aligned to DirectAlign, bytes not all in the file
// yet, or a kernel or file system that refuses cachestat or O_DIRECT.
// The caller reads with ReadAt instead.
var ErrNoColdRead = errors.New("backend: cold read not possible here")

// ColdReader is implemented by segments that can read around the page
// cache (pwrite on an OS file).
type ColdReader interface {
	// ReadCold reads len(p) bytes at off into p (address, off and
	// len(p) multiples of DirectAlign): from the page cache when all of
	// them are there, else from the disk with O_DIRECT (direct true).
	ReadCold(p []byte, off int64) (n int, direct bool, err error)
}

// AlignedBlock returns an n-byte buffer whose address is a multiple of
// DirectAlign.
func AlignedBlock(n int) []byte {
	b := make([]byte, n+DirectAlign)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) & (DirectAlign - 1)); r != 0 {
		off = DirectAlign - r
	}
	return b[off : off+n : off+n]
}

// noColdRead: the kernel or the file system refused cachestat or an
// O_DIRECT read once; the process stops trying. (A segment whose O_DIRECT
// descriptor would not open reads through the page cache alone.)
var noColdRead atomic.Bool

// directFile is a segment's second descriptor, opened with O_DIRECT for
// cold reads on first use and closed with the segment.
type directFile struct {
	mu     sync.RWMutex
	opened bool
	fd     int
	err    error
}

// get returns the O_DIRECT descriptor for the file whose descriptor is
// fd, read-locked (release it with mu.RUnlock), or an error.
func (d *directFile) get(fd uintptr) (int, error) {
	d.mu.RLock()
	if d.opened {
		if d.err != nil {
			d.mu.RUnlock()
			return -1, d.err
		}
		return d.fd, nil
	}
	d.mu.RUnlock()
	d.mu.Lock()
	if !d.opened {
		d.opened = true
		// The same file, whatever its path is now.
		d.fd, d.err = unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
		if d.err != nil {
			d.fd = -1
		}
	}
	d.mu.Unlock()
	return d.get(fd)
}

// close closes the descriptor if it was opened; later gets fail.
func (d *directFile) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	open := d.opened && d.err == nil // the zero value's fd 0 is not ours
	fd := d.fd
	d.opened, d.fd, d.err = true, -1, errSegmentClosed
	if open {
		return unix.Close(fd)
	}
	return nil
}

// readCold is ReadCold for a file f whose bytes below inFile are in it.
func readCold(f vfs.File, d *directFile, p []byte, off, inFile int64) (int, bool, error) {
	fd := f.Fd()
	if noColdRead.Load() || fd == vfs.InvalidFd || len(p) == 0 || off%DirectAlign != 0 || len(p)%DirectAlign != 0 ||
		uintptr(unsafe.Pointer(&p[0]))%DirectAlign != 0 || off+int64(len(p)) > inFile {
		return 0, false, ErrNoColdRead
	}
	var cs unix.Cachestat_t
	err := unix.Cachestat(uint(fd), &unix.CachestatRange{Off: uint64(off), Len: uint64(len(p))}, &cs, 0)
	for err == unix.EINTR {
		err = unix.Cachestat(uint(fd), &unix.CachestatRange{Off: uint64(off), Len: uint64(len(p))}, &cs, 0)
	}
	if err == unix.ENOSYS || err == unix.EOPNOTSUPP || err == unix.EINVAL || err == unix.EPERM {
		noColdRead.Store(true)
		return 0, false, ErrNoColdRead
	}
	if err != nil {
		return 0, false, err
	}
	if cs.Cache*uint64(pageSize) >= uint64(len(p)) || cs.Dirty+cs.Writeback > 0 {
		// All there, or some not yet on the disk (a direct read would
		// make the kernel write it first): from the page cache.
		n, err := f.ReadAt(p, off)
		if n == len(p) {
			err = nil
		} else if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, false, err
	}
	dfd, err := d.get(fd)
	if err != nil {
		if err != errSegmentClosed {
			// This segment reads through the page cache from now on; a
			// refusal that may pass (EMFILE) does not stop the others.
			err = ErrNoColdRead
		}
		return 0, false, err
	}
	defer d.mu.RUnlock()
	done := 0
	for done < len(p) {
		n, err := unix.Pread(dfd, p[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err == unix.EINVAL && done == 0 { // O_DIRECT alignment this file system will not take
			noColdRead.Store(true)
			return 0, false, ErrNoColdRead
		}
		if err != nil {
			return done, true, err
		}
		if n == 0 {
			return done, true, io.ErrUnexpectedEOF
		}
		done += n
	}
	return done, true, nil
}

// ReadCold implements ColdReader: bytes below onFile are in the file.
func (s *pwriteSegment) ReadCold(p []byte, off int64) (int, bool, error) {
	if s.closed.Load() {
		return 0, false, errSegmentClosed
	}
	n, direct, err := readCold(s.f, &s.direct, p, off, s.onFile.Load())
	if err != nil && err != ErrNoColdRead {
		err = fmt.Errorf("backend: pwrite cold read %s at %d: %w", s.path, off+int64(n), err)
	}
	return n, direct, err
}
