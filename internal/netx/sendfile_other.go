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

// Cork does nothing here.
func Cork(sc syscall.Conn, on bool) error { return nil }
