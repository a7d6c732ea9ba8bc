// Package countfs wraps a vfs.FS and counts the calls that reach the file
// system: file syncs (fsync/fdatasync, and msync of a mapped range),
// directory syncs, writes and the bytes written. Tests use it to check a
// claim from outside the code that makes it — "N concurrent sync appends
// cost far fewer than N fsyncs" read at the file system, not from the
// store's own metric, which a bug could keep reporting while each waiter
// paid its own fsync.
//
// Counting is per file-name filter (Wrap's match; nil counts every file).
// Like errorfs, a wrapped file hides its descriptor (Fd answers
// vfs.InvalidFd), so a backend that would sync through the descriptor
// itself (io_uring) goes through the File methods, where they are counted.
//
// All methods are safe for concurrent use; counters are atomic.
package countfs

import (
	"io"
	"sync/atomic"

	"github.com/samsamq/samsa/storage/vfs"
)

// FS is a counting vfs.FS.
type FS struct {
	inner vfs.FS
	match func(name string) bool

	syncs      atomic.Int64
	dirSyncs   atomic.Int64
	writes     atomic.Int64
	written    atomic.Int64
	allocates  atomic.Int64
	truncates  atomic.Int64
	creates    atomic.Int64
	concurrent atomic.Int64 // syncs running now
	maxConc    atomic.Int64 // most syncs seen running at once
}

// Wrap returns a counting FS over inner. match selects the files whose
// operations are counted (by the name given to Create or Open); nil counts
// every file. Directory syncs are always counted.
func Wrap(inner vfs.FS, match func(name string) bool) *FS {
	return &FS{inner: inner, match: match}
}

// Counts is a snapshot of the counters.
type Counts struct {
	Syncs         int64 // File.Sync and MapSyncer.SyncMapped calls on matching files
	MaxConcurrent int64 // most of those running at one moment
	DirSyncs      int64 // FS.SyncDir calls
	Writes        int64 // File.WriteAt calls on matching files
	BytesWritten  int64 // bytes those calls wrote
	Allocates     int64 // File.Allocate calls on matching files
	Truncates     int64 // File.Truncate calls on matching files
	Creates       int64 // FS.Create calls for matching names
}

// Counts returns the counters now.
func (f *FS) Counts() Counts {
	return Counts{
		Syncs: f.syncs.Load(), MaxConcurrent: f.maxConc.Load(), DirSyncs: f.dirSyncs.Load(),
		Writes: f.writes.Load(), BytesWritten: f.written.Load(), Allocates: f.allocates.Load(),
		Truncates: f.truncates.Load(), Creates: f.creates.Load(),
	}
}

func (f *FS) counts(name string) bool { return f.match == nil || f.match(name) }

func (f *FS) wrap(inner vfs.File, name string) vfs.File {
	if !f.counts(name) {
		return inner
	}
	fl := file{fs: f, inner: inner}
	if m, ok := inner.(vfs.Mapper); ok {
		return &mappedFile{file: fl, m: m}
	}
	return &fl
}

// Create creates the file through the inner FS.
func (f *FS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	fl, err := f.inner.Create(name, o)
	if err != nil {
		return nil, err
	}
	if f.counts(name) {
		f.creates.Add(1)
	}
	return f.wrap(fl, name), nil
}

// Open opens the file through the inner FS.
func (f *FS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	fl, err := f.inner.Open(name, o)
	if err != nil {
		return nil, err
	}
	return f.wrap(fl, name), nil
}

// Remove, Rename, MkdirAll, List, Stat, Lock and DiskUsage pass through
// to the inner FS, uncounted.
func (f *FS) Remove(name string) error                     { return f.inner.Remove(name) }
func (f *FS) Rename(oldname, newname string) error         { return f.inner.Rename(oldname, newname) }
func (f *FS) MkdirAll(dir string) error                    { return f.inner.MkdirAll(dir) }
func (f *FS) List(dir string) ([]string, error)            { return f.inner.List(dir) }
func (f *FS) Stat(name string) (int64, error)              { return f.inner.Stat(name) }
func (f *FS) Lock(name string) (io.Closer, error)          { return f.inner.Lock(name) }
func (f *FS) DiskUsage(dir string) (uint64, uint64, error) { return f.inner.DiskUsage(dir) }

// BootID is the inner file system's (vfs.Booter).
func (f *FS) BootID() (string, error) { return vfs.InnerBootID(f.inner) }

// SyncDir syncs the directory through the inner FS, counted.
func (f *FS) SyncDir(dir string) error {
	f.dirSyncs.Add(1)
	return f.inner.SyncDir(dir)
}

var (
	_ vfs.FS        = (*FS)(nil)
	_ vfs.File      = (*file)(nil)
	_ vfs.Mapper    = (*mappedFile)(nil)
	_ vfs.MapSyncer = (*mappedFile)(nil)
)

// file counts the operations on a matching file.
type file struct {
	fs    *FS
	inner vfs.File
}

// mappedFile adds the inner file's Mapper and MapSyncer methods.
type mappedFile struct {
	file
	m vfs.Mapper
}

// sync runs do as one counted sync.
func (f *file) sync(do func() error) error {
	f.fs.syncs.Add(1)
	n := f.fs.concurrent.Add(1)
	for {
		m := f.fs.maxConc.Load()
		if n <= m || f.fs.maxConc.CompareAndSwap(m, n) {
			break
		}
	}
	err := do()
	f.fs.concurrent.Add(-1)
	return err
}

func (f *file) ReadAt(p []byte, off int64) (int, error) { return f.inner.ReadAt(p, off) }

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	f.fs.writes.Add(1)
	n, err := f.inner.WriteAt(p, off)
	f.fs.written.Add(int64(n))
	return n, err
}

func (f *file) Sync() error { return f.sync(f.inner.Sync) }

func (f *file) Allocate(off, n int64) error {
	f.fs.allocates.Add(1)
	return f.inner.Allocate(off, n)
}

func (f *file) Truncate(size int64) error {
	f.fs.truncates.Add(1)
	return f.inner.Truncate(size)
}

func (f *file) Close() error         { return f.inner.Close() }
func (f *file) Size() (int64, error) { return f.inner.Size() }

// Fd hides the inner descriptor (vfs.InvalidFd), so every sync goes
// through the counted methods.
func (f *file) Fd() uintptr { return vfs.InvalidFd }

func (f *mappedFile) Map(size int) ([]byte, error) { return f.m.Map(size) }
func (f *mappedFile) Unmap(b []byte) error         { return f.m.Unmap(b) }

// SyncMapped counts as a sync. If the inner file cannot sync a range, it
// syncs the whole file.
func (f *mappedFile) SyncMapped(m []byte, off, n int64) error {
	return f.sync(func() error {
		if ms, ok := f.inner.(vfs.MapSyncer); ok {
			return ms.SyncMapped(m, off, n)
		}
		return f.inner.Sync()
	})
}
