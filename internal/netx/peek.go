package netx

import (
	"io"
	"net"
	"syscall"
	"time"
)

// peekFirst waits for the first byte of nc. A TCP connection is peeked
// (MSG_PEEK): the byte stays in the socket and nc is returned as it is,
// so a plain connection keeps writev. Other connections have the byte
// read and put back in front (prefixConn).
func peekFirst(nc net.Conn, timeout time.Duration, stop <-chan struct{}) (byte, net.Conn, error) {
	if timeout > 0 {
		_ = nc.SetReadDeadline(time.Now().Add(timeout))
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stop:
			_ = nc.SetReadDeadline(time.Unix(1, 0))
		case <-done:
		}
	}()
	var b [1]byte
	if sc, ok := nc.(syscall.Conn); ok {
		if n, err := peekSyscall(sc, b[:]); err != errNoPeek {
			_ = nc.SetReadDeadline(time.Time{})
			if err != nil {
				return 0, nil, err
			}
			if n == 0 {
				return 0, nil, io.EOF
			}
			return b[0], nc, nil
		}
	}
	if _, err := io.ReadFull(nc, b[:]); err != nil {
		return 0, nil, err
	}
	_ = nc.SetReadDeadline(time.Time{})
	return b[0], &prefixConn{Conn: nc, first: b[0], has: true}, nil
}

// prefixConn gives back a byte read before.
type prefixConn struct {
	net.Conn
	first byte
	has   bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.has && len(p) > 0 {
		p[0] = c.first
		c.has = false
		return 1, nil
	}
	return c.Conn.Read(p)
}
