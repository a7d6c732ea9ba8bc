//go:build unix

package netx

import (
	"errors"
	"syscall"
)

var errNoPeek = errors.New("netx: cannot peek")

// peekSyscall reads the socket's first byte without consuming it,
// waiting in the runtime poller (read deadlines apply).
func peekSyscall(sc syscall.Conn, b []byte) (int, error) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, errNoPeek
	}
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr = syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK)
		return rerr != syscall.EAGAIN && rerr != syscall.EINTR
	})
	if err != nil {
		return 0, err
	}
	return n, rerr
}
