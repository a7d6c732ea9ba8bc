package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PageCacheDrop is what DropDirCache did: the files it dropped from the
// page cache and how much of them was resident before and after (mincore),
// so a result shows the cold read really was cold.
type PageCacheDrop struct {
	// Method is "fadvise": fdatasync then posix_fadvise(DONTNEED) on each
	// file (dirty pages are not dropped, hence the sync first).
	Method         string `json:"method"`
	Files          int    `json:"files"`
	Bytes          int64  `json:"bytes"`
	ResidentBefore int64  `json:"resident_before_bytes"`
	ResidentAfter  int64  `json:"resident_after_bytes"`
}

// DropFileCache writes back path's dirty pages and asks the kernel to drop
// its pages from the page cache. Writers may still be appending to the
// file: their new pages stay (they are dirty, or written after).
func DropFileCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // opened read-only
	fd := int(f.Fd())
	if err := unix.Fdatasync(fd); err != nil {
		return fmt.Errorf("bench: fdatasync %s: %w", path, err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("bench: fadvise DONTNEED %s: %w", path, err)
	}
	return nil
}

// Resident is how many of path's bytes are in the page cache (mincore of a
// read-only mapping), rounded to pages; 0 for an empty file.
func Resident(path string) (resident, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }() // opened read-only
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size = st.Size()
	if size == 0 {
		return 0, 0, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, size, fmt.Errorf("bench: mmap %s: %w", path, err)
	}
	defer func() { _ = unix.Munmap(m) }() // a read-only mapping: nothing to write back
	page := int64(os.Getpagesize())
	vec := make([]byte, (size+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, size, fmt.Errorf("bench: mincore %s: %w", path, e)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident += page
		}
	}
	return min(resident, size), size, nil
}

// DropDirCache drops every regular file under dir from the page cache
// (DropFileCache), measuring residency before and after. A file that
// vanishes meanwhile (a segment deleted) is passed over; other errors are
// returned with the figures so far.
func DropDirCache(dir string) (PageCacheDrop, error) {
	return walkResident(dir, true)
}

// ResidentDir is how much of the regular files under dir is in the page
// cache (ResidentBefore; nothing is dropped, Method is empty).
func ResidentDir(dir string) (PageCacheDrop, error) {
	return walkResident(dir, false)
}

func walkResident(dir string, drop bool) (PageCacheDrop, error) {
	var d PageCacheDrop
	if drop {
		d.Method = "fadvise"
	}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		before, size, err := Resident(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		after := before
		if drop {
			if err := DropFileCache(p); errors.Is(err, fs.ErrNotExist) {
				return nil
			} else if err != nil {
				return err
			}
			if after, _, err = Resident(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		d.Files++
		d.Bytes += size
		d.ResidentBefore += before
		d.ResidentAfter += after
		return nil
	})
	return d, err
}
