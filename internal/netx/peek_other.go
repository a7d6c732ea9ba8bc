//go:build !unix

package netx

import (
	"errors"
	"syscall"
)

var errNoPeek = errors.New("netx: cannot peek")

func peekSyscall(syscall.Conn, []byte) (int, error) { return 0, errNoPeek }
