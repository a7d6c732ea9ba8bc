package vfs

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// memBlock is MemFS's unit of dirtiness and of loss at a crash.
const memBlock = 4096

// memData is a MemFS file's content, guarded by MemFS.mu.
type memData struct {
	cur    []byte   // current bytes (what reads see)
	dur    []byte   // bytes as of the last Sync: what survives a crash
	minLen int      // smallest len(cur) since the last Sync (an unsynced truncation)
	dirty  blockSet // blocks written since the last Sync
	backed int64    // bytes of space held (written or allocated), for capacity
	maps   int      // live mappings
	mapLen int      // longest live mapping: that range is possibly dirty
}

type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	direct   bool
	readOnly bool
	closed   atomic.Bool
}

var (
	_ File      = (*memFile)(nil)
	_ Mapper    = (*memFile)(nil)
	_ MapSyncer = (*memFile)(nil)
)

// check validates a read or write of p at off on this handle.
func (f *memFile) check(op string, p []byte, off int64, write bool) error {
	if f.closed.Load() {
		return pathErr(op, f.name, fs.ErrClosed)
	}
	if write && f.readOnly {
		return pathErr(op, f.name, syscall.EBADF)
	}
	if off < 0 {
		return pathErr(op, f.name, syscall.EINVAL)
	}
	if f.direct {
		addr := uintptr(0)
		if len(p) > 0 {
			addr = uintptr(unsafe.Pointer(&p[0]))
		}
		if off%DirectAlignment != 0 || len(p)%DirectAlignment != 0 || addr%DirectAlignment != 0 {
			return pathErr(op, f.name, fmt.Errorf("O_DIRECT needs %d-byte alignment (off %d, len %d, addr %#x): %w",
				DirectAlignment, off, len(p), addr, syscall.EINVAL))
		}
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", p, off, false); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	cur := f.n.file.cur
	if off >= int64(len(cur)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, cur[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write", p, off, true); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	end := off + int64(len(p))
	d := &f.n.file
	if err := d.canGrowLocked(end); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	if err := f.fs.reserveLocked(f.n, end); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	d.growLocked(end)
	copy(d.cur[off:], p)
	d.dirty.addRange(off, end)
	return len(p), nil
}

// reserveLocked makes n hold space up to end, or fails with ENOSPC.
func (m *MemFS) reserveLocked(n *memNode, end int64) error {
	need := end - n.file.backed
	if need <= 0 {
		return nil
	}
	if m.mu.used+need > m.mu.capacity {
		return syscall.ENOSPC
	}
	m.mu.used += need
	n.file.backed = end
	return nil
}

// canGrowLocked says whether cur can grow to size: a mapped file cannot
// move, so it may grow only within the array it already has.
func (d *memData) canGrowLocked(size int64) error {
	if d.maps > 0 && size > int64(cap(d.cur)) {
		return fmt.Errorf("MemFS cannot grow a mapped file past %d bytes: %w", cap(d.cur), syscall.EBUSY)
	}
	return nil
}

// growLocked extends cur with zeros to size (after canGrowLocked).
func (d *memData) growLocked(size int64) {
	if size > int64(len(d.cur)) {
		d.cur = resizeZero(d.cur, int(size))
	}
}

// resizeZero returns b resized to n bytes, new bytes zero.
func resizeZero(b []byte, n int) []byte {
	if n <= len(b) {
		return b[:n]
	}
	if n <= cap(b) {
		old := len(b)
		b = b[:n]
		clear(b[old:])
		return b
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	return nil
}

func (f *memFile) Sync() error {
	if f.closed.Load() {
		return pathErr("fsync", f.name, fs.ErrClosed)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	d := &f.n.file
	d.syncSizeLocked()
	d.dirty.each(func(b int64) { d.syncRangeLocked(b*memBlock, (b+1)*memBlock) })
	d.mappedDirtyLocked(func(b int64) { d.syncRangeLocked(b*memBlock, (b+1)*memBlock) })
	d.dirty.reset()
	return nil
}

// syncSizeLocked makes the file's current size durable.
func (d *memData) syncSizeLocked() {
	d.dur = resizeZero(d.dur[:min(len(d.dur), d.minLen)], len(d.cur))
	d.minLen = len(d.cur)
}

// syncRangeLocked copies [s, e) (clipped to the file) to the durable copy;
// the size must be durable already.
func (d *memData) syncRangeLocked(s, e int64) {
	e = min(e, int64(len(d.cur)))
	if s < e {
		copy(d.dur[s:e], d.cur[s:e])
	}
}

// mappedDirtyLocked calls fn for every block of the mapped range whose
// current bytes differ from the durable ones.
func (d *memData) mappedDirtyLocked(fn func(b int64)) {
	if d.maps == 0 {
		return
	}
	end := min(d.mapLen, len(d.cur))
	for s := 0; s < end; s += memBlock {
		e := min(s+memBlock, end)
		if e > len(d.dur) || !bytes.Equal(d.cur[s:e], d.dur[s:e]) {
			fn(int64(s / memBlock))
		}
	}
}

func (f *memFile) Allocate(off, n int64) error {
	if f.closed.Load() {
		return pathErr("fallocate", f.name, fs.ErrClosed)
	}
	if off < 0 || n <= 0 {
		return pathErr("fallocate", f.name, syscall.EINVAL)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	d := &f.n.file
	if err := d.canGrowLocked(off + n); err != nil {
		return pathErr("fallocate", f.name, err)
	}
	if err := f.fs.reserveLocked(f.n, off+n); err != nil {
		return pathErr("fallocate", f.name, err)
	}
	d.growLocked(off + n)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if f.closed.Load() {
		return pathErr("truncate", f.name, fs.ErrClosed)
	}
	if size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	d := &f.n.file
	if d.maps > 0 && size < int64(d.mapLen) {
		return pathErr("truncate", f.name, fmt.Errorf("MemFS will not cut a live mapping: %w", syscall.EBUSY))
	}
	if err := d.canGrowLocked(size); err != nil {
		return pathErr("truncate", f.name, err)
	}
	d.growLocked(size)
	f.fs.truncateLocked(f.n, size)
	return nil
}

// truncateLocked cuts n's file to size if it is longer.
func (m *MemFS) truncateLocked(n *memNode, size int64) {
	d := &n.file
	if size >= int64(len(d.cur)) {
		return
	}
	d.cur = d.cur[:size]
	d.minLen = min(d.minLen, int(size))
	if d.backed > size {
		m.mu.used -= d.backed - size
		d.backed = size
	}
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return int64(len(f.n.file.cur)), nil
}

func (f *memFile) Fd() uintptr { return InvalidFd }

// Map returns a slice aliasing the file's first size bytes.
func (f *memFile) Map(size int) ([]byte, error) {
	if f.closed.Load() {
		return nil, pathErr("mmap", f.name, fs.ErrClosed)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	d := &f.n.file
	if size <= 0 || size > len(d.cur) {
		return nil, pathErr("mmap", f.name, fmt.Errorf("map %d bytes of a %d-byte file: %w", size, len(d.cur), syscall.EINVAL))
	}
	d.maps++
	d.mapLen = max(d.mapLen, size)
	return d.cur[:size:size], nil
}

func (f *memFile) Unmap(b []byte) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	d := &f.n.file
	if d.maps == 0 || len(b) == 0 || len(d.cur) == 0 || &b[0] != &d.cur[0] {
		return pathErr("munmap", f.name, syscall.EINVAL)
	}
	if d.maps == 1 {
		// Remember what the mapping dirtied before forgetting its range.
		d.mappedDirtyLocked(func(b int64) { d.dirty.add(b) })
		d.mapLen = 0
	}
	d.maps--
	return nil
}

// SyncMapped makes [off, off+n) durable, reading only that range.
func (f *memFile) SyncMapped(m []byte, off, n int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	d := &f.n.file
	if d.maps == 0 || len(m) == 0 || &m[0] != &d.cur[0] || off < 0 || n < 0 || off+n > int64(len(m)) {
		return pathErr("msync", f.name, syscall.EINVAL)
	}
	d.syncSizeLocked()
	d.syncRangeLocked(off, off+n)
	return nil
}

// blockSet is a bitset of block numbers.
type blockSet []uint64

func (s *blockSet) add(b int64) {
	w := int(b / 64)
	if w >= len(*s) {
		*s = append(*s, make([]uint64, w+1-len(*s))...)
	}
	(*s)[w] |= 1 << (uint(b) % 64)
}

// addRange marks every block touching [off, end).
func (s *blockSet) addRange(off, end int64) {
	for b := off / memBlock; b <= (end-1)/memBlock; b++ {
		s.add(b)
	}
}

// each calls fn for every block in the set, ascending.
func (s blockSet) each(fn func(b int64)) {
	for w, word := range s {
		for word != 0 {
			i := bits.TrailingZeros64(word)
			fn(int64(w*64 + i))
			word &^= 1 << uint(i)
		}
	}
}

func (s *blockSet) reset() {
	clear(*s)
	*s = (*s)[:0]
}
