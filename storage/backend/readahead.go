package backend

import (
	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/storage/vfs"
)

// ReadAdviser is implemented by the segments whose reads go through the
// page cache (pwrite, mmap). AdviseRead asks the kernel to start reading
// [off, off+n) of the segment into the page cache and returns without
// waiting for it (posix_fadvise POSIX_FADV_WILLNEED): a consumer far
// behind the tail then finds the records it reads next in memory instead
// of waiting for the disk at each small read. Several consumers reading
// one segment through one descriptor at different places defeat the
// kernel's own sequential read-ahead, which is kept per descriptor. A
// file without a descriptor (MemFS) ignores it.
type ReadAdviser interface {
	AdviseRead(off, n int64)
}

// adviseWillNeed is AdviseRead on f. A failure is only a hint lost.
func adviseWillNeed(f vfs.File, off, n int64) {
	if fd := f.Fd(); fd != vfs.InvalidFd && n > 0 {
		_ = unix.Fadvise(int(fd), off, n, unix.FADV_WILLNEED)
	}
}

// AdviseRead implements ReadAdviser.
func (s *pwriteSegment) AdviseRead(off, n int64) {
	if !s.closed.Load() {
		adviseWillNeed(s.f, off, n)
	}
}

// AdviseRead implements ReadAdviser (the mapping shares the file's pages).
func (s *mmapSegment) AdviseRead(off, n int64) {
	s.mapping.RLock()
	defer s.mapping.RUnlock()
	if s.mapping.data != nil {
		adviseWillNeed(s.f, off, n)
	}
}
