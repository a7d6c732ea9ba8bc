package errorfs

import (
	"github.com/samsamq/samsa/storage/vfs"
)

// file wraps a vfs.File whose inner file is not a Mapper.
type file struct {
	fs    *FS
	inner vfs.File
	name  string
}

// mappedFile adds the inner file's Mapper and MapSyncer methods.
type mappedFile struct {
	file
	m vfs.Mapper
}

var (
	_ vfs.File      = (*file)(nil)
	_ vfs.Mapper    = (*mappedFile)(nil)
	_ vfs.MapSyncer = (*mappedFile)(nil)
)

func (f *FS) wrapFile(inner vfs.File, name string) vfs.File {
	fl := file{fs: f, inner: inner, name: name}
	if m, ok := inner.(vfs.Mapper); ok {
		return &mappedFile{file: fl, m: m}
	}
	return &fl
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if r := f.fs.check(OpRead, f.name); r != nil {
		return 0, injected(OpRead, f.name, r)
	}
	return f.inner.ReadAt(p, off)
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	r := f.fs.check(OpWrite, f.name)
	if r == nil {
		return f.inner.WriteAt(p, off)
	}
	if !r.Tear {
		return 0, injected(OpWrite, f.name, r)
	}
	k := min(max(r.TearAt, 0), len(p))
	n, err := f.inner.WriteAt(p[:k], off)
	if err != nil {
		return n, err
	}
	return n, injected(OpWrite, f.name, r)
}

func (f *file) Sync() error {
	if r := f.fs.check(OpSync, f.name); r != nil {
		return injected(OpSync, f.name, r)
	}
	return f.inner.Sync()
}

func (f *file) Allocate(off, n int64) error {
	if r := f.fs.check(OpAllocate, f.name); r != nil {
		return injected(OpAllocate, f.name, r)
	}
	return f.inner.Allocate(off, n)
}

func (f *file) Truncate(size int64) error {
	if r := f.fs.check(OpTruncate, f.name); r != nil {
		return injected(OpTruncate, f.name, r)
	}
	return f.inner.Truncate(size)
}

// Close closes the inner file in any case: a failing close(2) still
// releases the descriptor; what it reports is a write the kernel lost.
func (f *file) Close() error {
	err := f.inner.Close()
	if r := f.fs.check(OpClose, f.name); r != nil {
		return injected(OpClose, f.name, r)
	}
	return err
}

func (f *file) Size() (int64, error) { return f.inner.Size() }

// Fd hides the inner descriptor (vfs.InvalidFd): code that would use it
// directly (the uring backend's io_uring) then goes through the File
// methods, where the rules apply, instead of around them.
func (f *file) Fd() uintptr { return vfs.InvalidFd }

func (f *mappedFile) Map(size int) ([]byte, error) {
	if r := f.fs.check(OpMap, f.name); r != nil {
		return nil, injected(OpMap, f.name, r)
	}
	return f.m.Map(size)
}

func (f *mappedFile) Unmap(b []byte) error { return f.m.Unmap(b) }

// SyncMapped counts and fails as OpSync. If the inner file cannot sync a
// range, it syncs the whole file.
func (f *mappedFile) SyncMapped(m []byte, off, n int64) error {
	if r := f.fs.check(OpSync, f.name); r != nil {
		return injected(OpSync, f.name, r)
	}
	if ms, ok := f.inner.(vfs.MapSyncer); ok {
		return ms.SyncMapped(m, off, n)
	}
	return f.inner.Sync()
}
