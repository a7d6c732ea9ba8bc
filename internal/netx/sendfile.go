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

// WriteMore writes bufs to the socket of sc with sendmsg(2) and
// MSG_MORE: the kernel holds a last partial packet for what the caller
// sends next (a frame's header then leaves with the first bytes of its
// body, sent by SendFile), as TCP_CORK would without two setsockopt calls
// around every answer. It waits for room as a Write does, under the
// connection's write deadline, and returns the bytes written. The caller
// must send more right after: what MSG_MORE held goes out with it.
func WriteMore(sc syscall.Conn, bufs [][]byte) (int64, error) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("netx: sendmsg: %w", err)
	}
	for len(bufs) > 0 && len(bufs[0]) == 0 {
		bufs = bufs[1:]
	}
	var sent int64
	var serr error
	werr := rc.Write(func(sock uintptr) bool {
		for len(bufs) > 0 {
			k, err := unix.SendmsgBuffers(int(sock), bufs, nil, nil, unix.MSG_MORE)
			if k > 0 {
				sent += int64(k)
				bufs = consume(bufs, k)
			}
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // wait until the socket has room
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				serr = err
				return true
			}
		}
		return true
	})
	if serr == nil {
		serr = werr
	}
	if serr != nil {
		return sent, fmt.Errorf("netx: sendmsg: %w", serr)
	}
	return sent, nil
}

// consume drops the first n bytes of bufs, and the buffers left empty.
func consume(bufs [][]byte, n int) [][]byte {
	for n > 0 && len(bufs) > 0 {
		if n < len(bufs[0]) {
			bufs[0] = bufs[0][n:]
			return bufs
		}
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	for len(bufs) > 0 && len(bufs[0]) == 0 {
		bufs = bufs[1:]
	}
	return bufs
}
