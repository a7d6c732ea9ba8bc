package uring

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is wrapped by the error of Setup (and of SubmitAndWait)
// when the kernel refuses io_uring or lacks an operation this package needs.
var ErrUnavailable = fmt.Errorf("uring: io_uring unavailable: %w", errors.ErrUnsupported)

// Kernel constants (include/uapi/linux/io_uring.h).
const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	featSingleMmap = 1 << 0

	enterGetEvents = 1 << 0

	registerBuffers   = 0
	unregisterBuffers = 1
	registerProbe     = 8

	opSupported = 1 << 0
)

// sqringOffsets and cqringOffsets mirror io_sqring_offsets and
// io_cqring_offsets; params mirrors io_uring_params (120 bytes).
type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	resv2                                                           uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	resv2                                                           uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// Ring is one io_uring instance: its descriptor and the three mappings.
type Ring struct {
	fd       int
	features uint32
	sq       struct {
		head, tail, mask, dropped *uint32
		entries                   uint32
		array                     []uint32
		sqes                      []sqe
	}
	cq struct {
		head, tail, mask, overflow *uint32
		entries                    uint32
		cqes                       []cqe
	}
	ringMem, cqMem, sqeMem []byte // cqMem is nil with a single mapping

	gen      uint32 // batch number, in the top half of user_data
	broken   error  // a failed io_uring_enter leaves the ring unusable
	inflight []Op   // the batch being run: keeps its buffers on the heap and alive
	bufs     []unix.Iovec
}

// rawSetup is the io_uring_setup system call; a seam for tests.
type rawSetup func(entries uint32, p *params) (int, syscall.Errno)

func sysSetup(entries uint32, p *params) (int, syscall.Errno) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	return int(fd), errno
}

// Setup creates a ring with room for entries submissions (rounded up to a
// power of two by the kernel) and checks that the kernel supports the
// operations of this package.
func Setup(entries uint32) (*Ring, error) { return setupWith(entries, sysSetup) }

// FailingSetup returns a Setup whose system call fails with errno, for
// tests of the callers' handling of a refused io_uring. The error goes
// through the same classification as a real one.
func FailingSetup(errno syscall.Errno) func(entries uint32) (*Ring, error) {
	return func(entries uint32) (*Ring, error) {
		return setupWith(entries, func(uint32, *params) (int, syscall.Errno) { return -1, errno })
	}
}

func setupWith(entries uint32, setup rawSetup) (*Ring, error) {
	if entries == 0 || entries > 4096 {
		return nil, fmt.Errorf("uring: %d entries, want 1..4096", entries)
	}
	var p params
	fd, errno := setup(entries, &p)
	if errno != 0 {
		return nil, setupError(errno)
	}
	r := &Ring{fd: fd, features: p.features}
	if err := r.mapRings(&p); err != nil {
		_ = r.Close()
		return nil, err
	}
	if err := r.probe(OpNop, OpRead, OpWrite, OpReadFixed, OpWriteFixed, OpFsync); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// setupError says why io_uring_setup failed, marking refusals.
func setupError(errno syscall.Errno) error {
	switch errno {
	case unix.ENOSYS:
		return fmt.Errorf("%w: io_uring_setup: the kernel has no io_uring (%w)", ErrUnavailable, errno)
	case unix.EPERM, unix.EACCES:
		return fmt.Errorf("%w: io_uring_setup refused (%w): kernel.io_uring_disabled, kernel.io_uring_group or a seccomp filter (containers often block it)",
			ErrUnavailable, errno)
	}
	return os.NewSyscallError("io_uring_setup", errno)
}

func (r *Ring) mapRings(p *params) error {
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(cqe{}))
	if p.features&featSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	if r.ringMem, err = unix.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return os.NewSyscallError("mmap sq ring", err)
	}
	cqMem := r.ringMem
	if p.features&featSingleMmap == 0 {
		if r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
			return os.NewSyscallError("mmap cq ring", err)
		}
		cqMem = r.cqMem
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(sqe{}))
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, sqeSize, prot, flags); err != nil {
		return os.NewSyscallError("mmap sqes", err)
	}
	u32 := func(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	r.sq.head, r.sq.tail = u32(r.ringMem, p.sqOff.head), u32(r.ringMem, p.sqOff.tail)
	r.sq.mask, r.sq.dropped = u32(r.ringMem, p.sqOff.ringMask), u32(r.ringMem, p.sqOff.dropped)
	r.sq.entries = *u32(r.ringMem, p.sqOff.ringEntries)
	r.sq.array = unsafe.Slice(u32(r.ringMem, p.sqOff.array), p.sqEntries)
	r.sq.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cq.head, r.cq.tail = u32(cqMem, p.cqOff.head), u32(cqMem, p.cqOff.tail)
	r.cq.mask, r.cq.overflow = u32(cqMem, p.cqOff.ringMask), u32(cqMem, p.cqOff.overflow)
	r.cq.entries = *u32(cqMem, p.cqOff.ringEntries)
	r.cq.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&cqMem[p.cqOff.cqes])), p.cqEntries)
	return nil
}

// Entries is the number of submissions the ring holds: the largest batch.
func (r *Ring) Entries() int { return int(r.sq.entries) }

// Close unmaps the rings and closes the descriptor (which also drops
// registered buffers).
func (r *Ring) Close() error {
	var errs []error
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.ringMem} {
		if m != nil {
			if err := unix.Munmap(m); err != nil {
				errs = append(errs, os.NewSyscallError("munmap", err))
			}
		}
	}
	r.sqeMem, r.cqMem, r.ringMem = nil, nil, nil
	if r.fd >= 0 {
		if err := unix.Close(r.fd); err != nil {
			errs = append(errs, os.NewSyscallError("close", err))
		}
		r.fd = -1
	}
	if r.broken == nil {
		r.broken = errors.New("uring: ring closed")
	}
	return errors.Join(errs...)
}
