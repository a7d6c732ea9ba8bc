//go:build !linux

package netx

import (
	"errors"
	"syscall"
)

// FileConn returns nil here: sendfile is used on Linux only.
func FileConn(nc any) syscall.Conn { return nil }

// SendFile is not available here (FileConn returns nil).
func SendFile(sc syscall.Conn, fd int, off int64, n int) (int64, error) {
	return 0, errors.New("netx: sendfile: not on this system")
}

// WriteMore is not available here.
func WriteMore(sc syscall.Conn, bufs [][]byte) (int64, error) {
	return 0, errors.New("netx: sendmsg with MSG_MORE: not on this system")
}
