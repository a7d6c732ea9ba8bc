package backend

import (
	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/storage/vfs"
)

// dupFd duplicates f's descriptor (close-on-exec).
func dupFd(f vfs.File) (int, error) {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return -1, ErrNoFile
	}
	return unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
}

// DupFile implements FileSource: bytes below onFile are in the file.
// bufMu is held shared across the dup: Close takes it (dropping the
// buffer) before it closes the file, so the descriptor duplicated is
// still this file's.
func (s *pwriteSegment) DupFile() (int, int64, error) {
	s.bufMu.RLock()
	defer s.bufMu.RUnlock()
	if s.closed.Load() {
		return -1, 0, ErrNoFile
	}
	fd, err := dupFd(s.f)
	return fd, s.onFile.Load(), err
}

// DupFile implements FileSource: every byte appended is in the mapping,
// whose pages are the file's page cache. The mapping's lock, held
// shared, keeps Close (and its close of the file) out.
func (s *mmapSegment) DupFile() (int, int64, error) {
	s.mapping.RLock()
	defer s.mapping.RUnlock()
	if s.mapping.data == nil {
		return -1, 0, ErrNoFile
	}
	fd, err := dupFd(s.f)
	return fd, s.written.Load(), err
}

// DupFile implements FileSource for odirect and uring: bytes below onDisk
// are in the file. Their descriptor is O_DIRECT, so a second, buffered
// one is opened for senders (read-only; the page cache is coherent with
// the direct writes, which invalidate what they overwrite). send's lock,
// held across the dup, keeps Close's close of it out.
func (s *directSegment) DupFile() (int, int64, error) {
	s.send.Lock()
	defer s.send.Unlock()
	if s.closed.Load() {
		return -1, 0, ErrNoFile
	}
	if s.send.f == nil {
		if s.f.Fd() == vfs.InvalidFd {
			return -1, 0, ErrNoFile
		}
		f, err := s.fs.Open(s.path, vfs.OpenOptions{ReadOnly: true})
		if err != nil {
			return -1, 0, err
		}
		s.send.f = f
	}
	fd, err := dupFd(s.send.f)
	return fd, s.onDisk.Load(), err
}

// closeSendFile closes DupFile's descriptor (Close, once closed is set).
func (s *directSegment) closeSendFile() error {
	s.send.Lock()
	defer s.send.Unlock()
	if s.send.f == nil {
		return nil
	}
	err := s.send.f.Close()
	s.send.f = nil
	return err
}

// CloseDup closes a descriptor DupFile returned.
func CloseDup(fd int) error { return unix.Close(fd) }
