package backend

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/samsamq/samsa/storage/internal/uring"
)

// batchRing runs a batch of operations: *uring.Ring, or emulRing for
// files without a descriptor.
type batchRing interface {
	SubmitAndWait(ops []uring.Op, res []int32) (enters int, err error)
	Entries() int
	Close() error
}

// uringIO is the uring executor: a flush's writes, linked in order, and a
// linked fdatasync, submitted and reaped as one batch.
type uringIO struct {
	ring  batchRing
	fd    int
	c     *segCounters
	bufs  [][]byte // the segment's buffers, registered as 0.. when fixed
	fixed bool
	ops   []uring.Op
	res   []int32
}

func (x *uringIO) write(ws []blockWrite, sync bool) error {
	ops := x.ops[:0]
	for _, w := range ws {
		op := uring.Op{Code: uring.OpWrite, Fd: x.fd, Buf: w.buf, Off: w.off, Link: true}
		if i, ok := x.fixedIndex(w.buf); ok {
			op.Code, op.BufIndex = uring.OpWriteFixed, i
		}
		ops = append(ops, op)
	}
	if sync {
		ops = append(ops, uring.Op{Code: uring.OpFsync, Fd: x.fd, Flags: uring.FsyncDatasync})
	}
	x.ops = ops[:0]
	if len(ops) == 0 {
		return nil
	}
	// Batches larger than the ring go in parts, each checked before the
	// next, so the fsync (in the last part) still follows every write.
	max := x.ring.Entries()
	for len(ops) > 0 {
		part := ops[:min(len(ops), max)]
		ops = ops[len(part):]
		part[len(part)-1].Link = false
		if err := x.run(part); err != nil {
			return err
		}
	}
	return nil
}

// run submits one part and checks every completion.
func (x *uringIO) run(ops []uring.Op) error {
	if cap(x.res) < len(ops) {
		x.res = make([]int32, len(ops))
	}
	res := x.res[:len(ops)]
	enters, err := x.ring.SubmitAndWait(ops, res)
	x.c.writeCalls.Add(int64(enters))
	if err != nil {
		return err
	}
	var first, cancelled error
	for i, op := range ops {
		if op.Code == uring.OpFsync && res[i] != -int32(syscall.ECANCELED) {
			x.c.fsyncs.Add(1)
		}
		if res[i] > 0 {
			x.c.bytesWritten.Add(int64(res[i]))
		}
		if err := uring.Result(res[i], len(op.Buf)); err != nil {
			err = fmt.Errorf("io_uring %v: %w", op, err)
			if errors.Is(err, syscall.ECANCELED) {
				cancelled = cmpOr(cancelled, err)
			} else {
				first = cmpOr(first, err)
			}
		}
	}
	return cmpOr(first, cancelled)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// fixedIndex finds the registered buffer holding b.
func (x *uringIO) fixedIndex(b []byte) (uint16, bool) {
	if !x.fixed || len(b) == 0 {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	for i, r := range x.bufs {
		lo := uintptr(unsafe.Pointer(&r[0]))
		if p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(r)) {
			return uint16(i), true
		}
	}
	return 0, false
}

func (x *uringIO) release() {
	if r, ok := x.ring.(*uring.Ring); ok && x.fixed {
		_ = r.UnregisterBuffers() // on failure the kernel keeps them pinned until Close
	}
	if e, ok := x.ring.(*emulRing); ok {
		e.bufs = nil
	}
	x.bufs, x.fixed = nil, false
}

func (x *uringIO) close() error { return x.ring.Close() }
