package uring

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxBusyRetries bounds the io_uring_enter retries on EAGAIN/EBUSY (the
// kernel out of request memory): a stuck kernel is an error, not a spin.
const maxBusyRetries = 1000

// SubmitAndWait runs a batch: it queues every op, submits them and waits
// for all their completions, calling io_uring_enter as few times as it
// can (once, unless a signal interrupts the wait). It stores each op's
// result in res (the CQE's res: bytes for reads and writes, 0 for fsync,
// -errno on failure, -ECANCELED for a link successor of a failure) and
// returns how many io_uring_enter calls it made.
//
// The error is about the ring, not the operations: the caller checks res.
// After an error the ring is unusable (operations may be in flight).
func (r *Ring) SubmitAndWait(ops []Op, res []int32) (enters int, err error) {
	if r.broken != nil {
		return 0, r.broken
	}
	n := uint32(len(ops))
	switch {
	case n == 0:
		return 0, nil
	case n > r.sq.entries:
		return 0, fmt.Errorf("uring: batch of %d exceeds the ring's %d entries", n, r.sq.entries)
	case len(res) < len(ops):
		return 0, fmt.Errorf("uring: %d results for %d ops", len(res), n)
	}
	for i := range ops {
		if uint64(len(ops[i].Buf)) > 1<<31 {
			return 0, fmt.Errorf("uring: op %d: %d-byte buffer too large", i, len(ops[i].Buf))
		}
	}
	tail := atomic.LoadUint32(r.sq.tail)
	if used := tail - atomic.LoadUint32(r.sq.head); used != 0 {
		return 0, fmt.Errorf("uring: %d submissions left over", used)
	}
	r.gen++
	mask := atomic.LoadUint32(r.sq.mask)
	for i := range ops {
		idx := (tail + uint32(i)) & mask
		r.sq.sqes[idx].fill(&ops[i], uint64(r.gen)<<32|uint64(i))
		r.sq.array[idx] = idx
	}
	r.inflight = ops
	defer func() { r.inflight = nil }()
	atomic.StoreUint32(r.sq.tail, tail+n) // publishes the entries

	done, busy := uint32(0), 0
	for done < n {
		toSubmit := tail + n - atomic.LoadUint32(r.sq.head)
		_, errno := enter(r.fd, toSubmit, n-done, enterGetEvents)
		enters++
		done += r.reap(res[:n])
		switch errno {
		case 0, unix.EINTR:
		case unix.EAGAIN, unix.EBUSY:
			if busy++; busy > maxBusyRetries {
				r.broken = os.NewSyscallError("io_uring_enter", errno)
				return enters, r.broken
			}
		case unix.ENOSYS, unix.EPERM:
			r.broken = fmt.Errorf("%w: io_uring_enter refused (%w)", ErrUnavailable, errno)
			return enters, r.broken
		default:
			r.broken = os.NewSyscallError("io_uring_enter", errno)
			return enters, r.broken
		}
	}
	runtime.KeepAlive(ops)
	return enters, nil
}

func enter(fd int, toSubmit, minComplete, flags uint32) (int, syscall.Errno) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), uintptr(minComplete),
		uintptr(flags), 0, 0)
	return int(n), errno
}

// reap consumes every available completion of the current batch, storing
// results by op index, and returns how many it consumed.
func (r *Ring) reap(res []int32) uint32 {
	head := atomic.LoadUint32(r.cq.head)
	tail := atomic.LoadUint32(r.cq.tail) // entries below it are written
	mask := atomic.LoadUint32(r.cq.mask)
	var got uint32
	for ; head != tail; head++ {
		c := &r.cq.cqes[head&mask]
		if uint32(c.userData>>32) == r.gen && int(uint32(c.userData)) < len(res) {
			res[uint32(c.userData)] = c.res
			got++
		}
	}
	atomic.StoreUint32(r.cq.head, head) // hands the entries back
	return got
}

// Result turns an op's result into an error: nil when it did all of want
// bytes (want 0: any non-negative result).
func Result(res int32, want int) error {
	if res < 0 {
		return syscall.Errno(-res)
	}
	if want > 0 && int(res) != want {
		return fmt.Errorf("short transfer: %d of %d bytes", res, want)
	}
	return nil
}
