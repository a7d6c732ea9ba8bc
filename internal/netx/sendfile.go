//go:build linux

package netx

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// FileConn returns the descriptor-backed side of nc that sendfile(2) can
// write to (a plain TCP connection), or nil: a TLS connection, or one
// without a descriptor, must have its bytes written through it.
func FileConn(nc any) syscall.Conn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	return sc
}

// SendFile writes n bytes of the file open as fd, from off, to the
// socket of sc with sendfile(2): the kernel moves them from the page
// cache, the process never holds them. It waits for room in the socket
// as a Write does, under the connection's write deadline, and returns
// the bytes sent.
func SendFile(sc syscall.Conn, fd int, off int64, n int) (int64, error) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("netx: sendfile: %w", err)
	}
	var sent int64
	var serr error
	werr := rc.Write(func(sock uintptr) bool {
		for n > 0 {
			k, err := unix.Sendfile(int(sock), fd, &off, n) // advances off
			if k > 0 {
				sent += int64(k)
				n -= k
			}
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // wait until the socket has room
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				serr = err
				return true
			case k == 0:
				serr = io.ErrUnexpectedEOF // the file ends before the piece does
				return true
			}
		}
		return true
	})
	if serr == nil {
		serr = werr
	}
	if serr != nil {
		return sent, fmt.Errorf("netx: sendfile: %w", serr)
	}
	return sent, nil
}

// Cork holds (on) or releases (off) the socket's partial frames
// (TCP_CORK): a frame's header written before its body goes out by
// sendfile then leaves in the body's packets, not a packet of its own
// that wakes the reader once more.
func Cork(sc syscall.Conn, on bool) error {
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	v := 0
	if on {
		v = 1
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, v)
	}); err != nil {
		return err
	}
	return serr
}
