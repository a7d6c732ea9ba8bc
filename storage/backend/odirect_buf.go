package backend

import (
	"fmt"
	"unsafe"

	"github.com/samsamq/samsa/storage/vfs"
)

// Aligned memory and the append ring of the odirect and uring segments.

const blockSize = vfs.DirectAlignment

func alignDown(off int64) int64 { return off &^ (blockSize - 1) }
func alignUp(off int64) int64   { return (off + blockSize - 1) &^ (blockSize - 1) }

// alignedBytes returns n zero bytes at a blockSize-aligned address, from
// the Go heap (over-allocated and sliced): the race detector sees every
// access, and the garbage collector never moves heap memory, so the kernel
// may read it during a system call or an io_uring operation.
func alignedBytes(n int) []byte {
	b := make([]byte, n+blockSize)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & (blockSize - 1))
	return b[off : off+n : off+n]
}

// blockWrite is one aligned write of a batch.
type blockWrite struct {
	buf []byte
	off int64
}

func (w blockWrite) String() string { return fmt.Sprintf("%d@%d", len(w.buf), w.off) }

// appendRing holds the file bytes [lo, hi) of a segment at buf[off % len]:
// the segment tracks lo (onDisk) and hi (Written); the ring only maps
// offsets to memory.
type appendRing struct {
	buf []byte // aligned, len a multiple of blockSize
}

func (r appendRing) size() int64 { return int64(len(r.buf)) }

// copyIn stores p at file offset off.
func (r appendRing) copyIn(off int64, p []byte) {
	pos := off % r.size()
	n := copy(r.buf[pos:], p)
	copy(r.buf, p[n:])
}

// copyOut loads len(p) bytes at file offset off into p.
func (r appendRing) copyOut(p []byte, off int64) {
	pos := off % r.size()
	n := copy(p, r.buf[pos:])
	copy(p[n:], r.buf)
}

// writes appends to ws the ring's memory for the block-aligned file range
// [from, to): one write, or two where the range wraps.
func (r appendRing) writes(ws []blockWrite, from, to int64) []blockWrite {
	for from < to {
		pos := from % r.size()
		n := min(to-from, r.size()-pos)
		ws = append(ws, blockWrite{buf: r.buf[pos : pos+n : pos+n], off: from})
		from += n
	}
	return ws
}
