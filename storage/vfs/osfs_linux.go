package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"
)

// Default is the file system of the operating system (Linux): buffered or
// O_DIRECT files, fdatasync, fallocate, flock, statfs, mmap. It holds no
// state; it is a variable only so that it has the FS type.
var Default FS = osFS{}

type osFS struct{}

var _ FS = osFS{}

func openFlags(opts OpenOptions) int {
	flags := os.O_RDWR
	if opts.ReadOnly {
		flags = os.O_RDONLY
	}
	if opts.Direct {
		flags |= syscall.O_DIRECT
	}
	return flags | syscall.O_CLOEXEC
}

func (osFS) Create(name string, opts OpenOptions) (File, error) {
	return openOS(name, openFlags(OpenOptions{Direct: opts.Direct})|os.O_CREATE|os.O_TRUNC, opts)
}

func (osFS) Open(name string, opts OpenOptions) (File, error) {
	return openOS(name, openFlags(opts), opts)
}

func openOS(name string, flags int, opts OpenOptions) (File, error) {
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		if opts.Direct && errors.Is(err, syscall.EINVAL) {
			return nil, fmt.Errorf("open %s: %w: %w", name, ErrDirectUnsupported, err)
		}
		return nil, err
	}
	return &osFile{f: f, fd: int(f.Fd()), name: name}, nil
}

func (osFS) Remove(name string) error             { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string) error            { return os.MkdirAll(dir, 0o755) }

func (osFS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) Stat(name string) (int64, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := unix.Fsync(int(d.Fd())); err != nil {
		_ = d.Close()
		return &fs.PathError{Op: "fsync", Path: dir, Err: err}
	}
	return d.Close()
}

func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &fs.PathError{Op: "lock", Path: name, Err: fmt.Errorf("held by another process: %w", err)}
		}
		return nil, &fs.PathError{Op: "flock", Path: name, Err: err}
	}
	return osLock{f}, nil
}

type osLock struct{ f *os.File }

// Close releases the lock (closing the descriptor drops the flock).
func (l osLock) Close() error { return l.f.Close() }

func (osFS) DiskUsage(dir string) (total, free uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, &fs.PathError{Op: "statfs", Path: dir, Err: err}
	}
	// df's arithmetic: used = blocks-bfree, usable = used+bavail. Taking
	// blocks as the total counted the reserved blocks (bfree-bavail) as
	// used: on a file system with a large reservation a disk df shows 42%
	// used read as 79%, and retention deleted unexpired segments.
	bs := uint64(st.Bsize)
	used := (st.Blocks - st.Bfree) * bs
	return used + st.Bavail*bs, st.Bavail * bs, nil
}

// osFile is an *os.File plus the raw descriptor for the calls os does not
// offer (fdatasync, fallocate, mmap).
type osFile struct {
	f    *os.File
	fd   int
	name string
}

var (
	_ File      = (*osFile)(nil)
	_ Mapper    = (*osFile)(nil)
	_ MapSyncer = (*osFile)(nil)
)

func (f *osFile) ReadAt(p []byte, off int64) (int, error)  { return f.f.ReadAt(p, off) }
func (f *osFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }
func (f *osFile) Close() error                             { return f.f.Close() }
func (f *osFile) Truncate(size int64) error                { return f.f.Truncate(size) }
func (f *osFile) Fd() uintptr                              { return uintptr(f.fd) }

func (f *osFile) Sync() error {
	for {
		err := unix.Fdatasync(f.fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "fdatasync", Path: f.name, Err: err}
		}
		return nil
	}
}

func (f *osFile) Allocate(off, n int64) error {
	for {
		err := unix.Fallocate(f.fd, 0, off, n)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "fallocate", Path: f.name, Err: err}
		}
		return nil
	}
}

func (f *osFile) Size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (f *osFile) Map(size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("vfs: map %s: size %d must be positive", f.name, size)
	}
	if have, err := f.Size(); err != nil {
		return nil, err
	} else if have < int64(size) {
		// Touching a mapped page past the end of the file is SIGBUS.
		return nil, fmt.Errorf("vfs: map %s: file is %d bytes, shorter than %d", f.name, have, size)
	}
	b, err := unix.Mmap(f.fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, &fs.PathError{Op: "mmap", Path: f.name, Err: err}
	}
	return b, nil
}

func (f *osFile) Unmap(b []byte) error {
	if err := unix.Munmap(b); err != nil {
		return &fs.PathError{Op: "munmap", Path: f.name, Err: err}
	}
	return nil
}

func (f *osFile) SyncMapped(m []byte, off, n int64) error {
	if off < 0 || n < 0 || off+n > int64(len(m)) {
		return &fs.PathError{Op: "msync", Path: f.name, Err: unix.EINVAL}
	}
	if n == 0 {
		return nil
	}
	// msync wants a page-aligned start.
	start := off &^ int64(unix.Getpagesize()-1)
	for {
		err := unix.Msync(m[start:off+n], unix.MS_SYNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "msync", Path: f.name, Err: err}
		}
		return nil
	}
}

// FileLimit returns the process's soft limit on open descriptors
// (RLIMIT_NOFILE), or 0 if it cannot be read or is unlimited. Callers size
// their descriptor caches below it.
func FileLimit() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY || lim.Cur > 1<<30 {
		return 0
	}
	return int(lim.Cur)
}
