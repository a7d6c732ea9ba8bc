// Package vfs is the file-system seam of the storage engine.
//
// Every byte the storage engine reads or writes goes through FS and File, so
// tests can swap the operating system for an in-memory file system that can
// crash (MemFS: a power loss keeps synced data plus a random share of
// unsynced 4 KiB blocks, a process crash everything handed to it) or for a
// wrapper that injects errors (package errorfs).
//
// Implementations: Default (the operating system, Linux), NewMem (MemFS),
// errorfs.Wrap (over either) and countfs.Wrap (counts syncs and writes at
// the file system, for tests that check batching from outside the store). Optional interfaces a File may have:
// Mapper (memory mapping) and MapSyncer (flush part of a mapping).
//
// Contract:
//   - File methods are safe for concurrent use where the OS's are: ReadAt and
//     WriteAt on disjoint ranges may run concurrently; Sync may run
//     concurrently with WriteAt (it makes durable at least what was written
//     before it started).
//   - Sync makes a file's data durable; it does not make the file's name
//     durable. A newly created, renamed or removed name is durable only after
//     SyncDir on its parent directory.
//   - Errors wrap the OS errors (errors.Is(err, syscall.ENOSPC) and
//     errors.Is(err, fs.ErrNotExist) hold on every implementation).
package vfs

import (
	"errors"
	"io"
	"syscall"
)

// ErrDirectUnsupported is wrapped by the error of a Create or Open with
// OpenOptions.Direct on a file system that refuses O_DIRECT (the kernel
// answers EINVAL on open, e.g. tmpfs on older kernels). Callers can fall
// back to a buffered backend with a clear message.
var ErrDirectUnsupported = errors.New("vfs: O_DIRECT not supported by this file system")

// OpenOptions say how a file is opened.
type OpenOptions struct {
	// Direct opens the file with O_DIRECT: every WriteAt and ReadAt must use
	// a buffer address, length and offset aligned to DirectAlignment.
	// Implementations that cannot honour it return an error wrapping
	// ErrDirectUnsupported, never a silently buffered file.
	Direct bool
	// ReadOnly opens the file for reading only.
	ReadOnly bool
}

// DirectAlignment is the alignment O_DIRECT I/O needs here: buffer address,
// length and file offset. 4 KiB covers every disk with 512 B or 4 KiB sectors.
const DirectAlignment = 4096

// File is an open file.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer

	// Sync makes every byte written before the call durable (fdatasync).
	Sync() error
	// Allocate reserves the byte range [off, off+n) on disk (fallocate mode
	// 0), growing the file if needed, so later writes there cannot fail for
	// lack of space.
	Allocate(off, n int64) error
	// Truncate sets the file's size.
	Truncate(size int64) error
	// Size returns the file's current size in bytes.
	Size() (int64, error)
	// Fd returns the OS file descriptor, or InvalidFd when the file is not
	// backed by one (MemFS). Backends that need a descriptor (io_uring) use it.
	Fd() uintptr
}

// InvalidFd is what File.Fd returns for files without an OS descriptor.
const InvalidFd = ^uintptr(0)

// Mapper is implemented by files that can be memory-mapped read-write. The
// mmap backend uses it; File.Sync flushes the mapped bytes too.
type Mapper interface {
	// Map maps the first size bytes of the file, which must be at least
	// size bytes long, shared and read-write.
	Map(size int) ([]byte, error)
	// Unmap releases the mapping returned by Map.
	Unmap(b []byte) error
}

// MapSyncer is implemented by Mappers that can make part of a mapping
// durable. The mmap backend prefers it to File.Sync: it flushes only the
// range it names (msync(MS_SYNC) on Linux, which also commits the metadata
// needed to read it back, like fdatasync) and reads nothing outside it, so
// writes into the mapping beyond the range may run concurrently.
type MapSyncer interface {
	// SyncMapped makes the bytes [off, off+n) of the file durable, written
	// through m, a mapping of the file's start returned by Map.
	SyncMapped(m []byte, off, n int64) error
}

// FS is a file system.
type FS interface {
	// Create creates or truncates the named file and opens it read-write.
	Create(name string, opts OpenOptions) (File, error)
	// Open opens an existing file (read-write unless opts.ReadOnly).
	Open(name string, opts OpenOptions) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename renames oldname to newname, replacing newname if it exists.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string) error
	// List returns the names (not paths) in a directory, sorted.
	List(dir string) ([]string, error)
	// Stat returns the size of the named file; the error wraps
	// fs.ErrNotExist when there is none.
	Stat(name string) (size int64, err error)
	// SyncDir makes the directory's entries (creates, renames, removes)
	// durable.
	SyncDir(dir string) error
	// Lock takes an exclusive advisory lock on the named file, creating it;
	// Close releases it. It stops two processes from opening one store.
	Lock(name string) (io.Closer, error)
	// DiskUsage reports the bytes of the file system holding dir that
	// this process can use (total: used plus free) and of those the free
	// ones, as df counts them: blocks reserved for root and not available
	// to us count in neither, so 1-free/total is df's Use% and reaches 1
	// when a write would meet ENOSPC.
	DiskUsage(dir string) (total, free uint64, err error)
}

// IsResourceError says err is a lack of a kernel resource an open, create,
// mmap or io_uring setup needs: no descriptor free (EMFILE, ENFILE) or no
// memory (ENOMEM). Nothing was done, so nothing was lost; the same call
// may succeed later. fsync(2) never answers these, so a failed sync is
// never one.
func IsResourceError(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOMEM)
}
