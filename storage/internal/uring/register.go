package uring

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

func (r *Ring) register(opcode uintptr, arg unsafe.Pointer, nr int) unix.Errno {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), opcode, uintptr(arg), uintptr(nr), 0, 0)
	return errno
}

// RegisterBuffers registers bufs as fixed buffers 0..len-1 for
// OpReadFixed/OpWriteFixed: the kernel pins their pages once instead of on
// every operation. The memory must stay allocated and in place until the
// ring is closed or UnregisterBuffers (Go heap memory qualifies: the
// collector does not move it; the Ring keeps it reachable). Pinned memory
// counts against RLIMIT_MEMLOCK; ENOMEM says the limit is too low.
func (r *Ring) RegisterBuffers(bufs [][]byte) error {
	if len(bufs) == 0 {
		return fmt.Errorf("uring: no buffers to register")
	}
	iovs := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) == 0 {
			return fmt.Errorf("uring: buffer %d is empty", i)
		}
		iovs[i].Base = &b[0]
		iovs[i].SetLen(len(b))
	}
	if errno := r.register(registerBuffers, unsafe.Pointer(&iovs[0]), len(iovs)); errno != 0 {
		return os.NewSyscallError("io_uring_register(buffers)", errno)
	}
	r.bufs = iovs
	return nil
}

// UnregisterBuffers drops the registered buffers.
func (r *Ring) UnregisterBuffers() error {
	if errno := r.register(unregisterBuffers, nil, 0); errno != 0 {
		return os.NewSyscallError("io_uring_register(unregister buffers)", errno)
	}
	r.bufs = nil
	return nil
}

// probeOp and probe mirror io_uring_probe_op and io_uring_probe with room
// for every opcode.
type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

type probeArg struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
	ops    [256]probeOp
}

// probe checks that the kernel supports every op (IORING_REGISTER_PROBE,
// Linux 5.6, which is also when OpRead and OpWrite came).
func (r *Ring) probe(ops ...Opcode) error {
	var p probeArg
	if errno := r.register(registerProbe, unsafe.Pointer(&p), len(p.ops)); errno != 0 {
		if errno == unix.EINVAL {
			return fmt.Errorf("%w: the kernel predates IORING_REGISTER_PROBE (Linux 5.6): %w", ErrUnavailable, errno)
		}
		return os.NewSyscallError("io_uring_register(probe)", errno)
	}
	for _, op := range ops {
		if int(op) >= int(p.opsLen) || p.ops[op].flags&opSupported == 0 {
			return fmt.Errorf("%w: the kernel does not support io_uring op %s", ErrUnavailable, op)
		}
	}
	return nil
}
