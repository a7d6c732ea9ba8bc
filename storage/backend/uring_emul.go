package backend

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"unsafe"

	"github.com/samsamq/samsa/storage/internal/uring"
	"github.com/samsamq/samsa/storage/vfs"
)

// emulRing runs a uring batch against a vfs.File that has no OS
// descriptor (MemFS, errorfs), one operation at a time in order, as the
// kernel would report it: each op's result is bytes done or -errno; a
// short or failed op whose Link is set cancels the rest of its chain with
// -ECANCELED; fixed ops must lie inside their registered buffer (-EFAULT
// otherwise). It exists so the crash and fault suites exercise the uring
// backend's batches on the crashable file system; it is never used for an
// OS file (those get a kernel ring or an error).
type emulRing struct {
	f       vfs.File
	entries int
	bufs    [][]byte // "registered" buffers
}

func (e *emulRing) Entries() int { return e.entries }
func (e *emulRing) Close() error { return nil }

// SubmitAndWait runs ops in order and counts as one io_uring_enter.
func (e *emulRing) SubmitAndWait(ops []uring.Op, res []int32) (int, error) {
	if len(ops) > e.entries {
		return 0, fmt.Errorf("uring emulation: batch of %d exceeds %d entries", len(ops), e.entries)
	}
	if len(res) < len(ops) {
		return 0, fmt.Errorf("uring emulation: %d results for %d ops", len(res), len(ops))
	}
	cancel := false
	for i, op := range ops {
		if cancel {
			res[i] = -int32(syscall.ECANCELED)
		} else {
			res[i] = e.do(op)
		}
		failed := res[i] < 0 || (isRW(op.Code) && int(res[i]) != len(op.Buf))
		cancel = op.Link && (cancel || failed)
	}
	return 1, nil
}

func isRW(c uring.Opcode) bool {
	return c == uring.OpRead || c == uring.OpWrite || c == uring.OpReadFixed || c == uring.OpWriteFixed
}

func (e *emulRing) do(op uring.Op) int32 {
	if (op.Code == uring.OpReadFixed || op.Code == uring.OpWriteFixed) && !e.inRegistered(op) {
		return -int32(syscall.EFAULT)
	}
	var n int
	var err error
	switch op.Code {
	case uring.OpNop:
	case uring.OpWrite, uring.OpWriteFixed:
		n, err = e.f.WriteAt(op.Buf, op.Off)
	case uring.OpRead, uring.OpReadFixed:
		n, err = e.f.ReadAt(op.Buf, op.Off)
	case uring.OpFsync:
		err = e.f.Sync()
	default:
		return -int32(syscall.EINVAL)
	}
	if n > 0 || err == nil {
		return int32(n) // a short transfer reports what it did, as the kernel does
	}
	return -int32(errnoOf(err))
}

func (e *emulRing) inRegistered(op uring.Op) bool {
	if int(op.BufIndex) >= len(e.bufs) || len(op.Buf) == 0 {
		return false
	}
	r := e.bufs[op.BufIndex]
	p, lo := uintptr(unsafe.Pointer(&op.Buf[0])), uintptr(unsafe.Pointer(&r[0]))
	return p >= lo && p+uintptr(len(op.Buf)) <= lo+uintptr(len(r))
}

// errnoOf is the errno a kernel would have returned for err.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		return errno
	case errors.Is(err, fs.ErrClosed):
		return syscall.EBADF
	}
	return syscall.EIO
}
