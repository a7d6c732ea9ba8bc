package ctlclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
)

// conn is one connection to one controller replica, carrying one request
// at a time (mu); it redials after an error.
type conn struct {
	addr        string
	dialTimeout time.Duration
	maxFrame    int
	tls         *tls.Config // nil: plain TCP

	mu     sync.Mutex // held by a request from dial to answer
	nc     net.Conn
	br     *bufio.Reader
	opaque int32

	// live is the open connection, for close without waiting for mu.
	live struct {
		sync.Mutex
		nc     net.Conn
		closed bool
	}
}

// defaultCallTimeout bounds a request whose ctx has no deadline.
const defaultCallTimeout = 30 * time.Second

func (c *conn) do(ctx context.Context, req *protocol.Command) (*protocol.Command, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc == nil {
		d := net.Dialer{Timeout: c.dialTimeout}
		nc, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return nil, err
		}
		if c.tls != nil {
			timeout := c.dialTimeout
			if dl, ok := ctx.Deadline(); ok {
				timeout = min(timeout, time.Until(dl))
			}
			if nc, err = netx.ClientHandshake(nc, c.addr, c.tls, timeout); err != nil {
				return nil, err
			}
		}
		c.live.Lock()
		if c.live.closed {
			c.live.Unlock()
			_ = nc.Close() // unused: nothing written on it yet
			return nil, ErrClosed
		}
		c.live.nc = nc
		c.live.Unlock()
		c.nc, c.br = nc, bufio.NewReader(nc)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultCallTimeout)
	}
	// A ctx cancelled without a deadline ends the wait by closing the
	// deadline early.
	nc := c.nc
	// SetDeadline fails only on a closed connection, whose read fails anyway.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer func() {
		if !stop() {
			// The ctx ended: the deadline it set would hit the next
			// request on this connection, so the connection goes.
			c.dropLocked()
		}
	}()
	if err := nc.SetDeadline(deadline); err != nil {
		c.dropLocked()
		return nil, fmt.Errorf("ctlclient: %s: %w", c.addr, err)
	}
	c.opaque++
	req.Opaque = c.opaque
	buf, err := protocol.AppendCommand(nil, req)
	if err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(buf); err != nil {
		c.dropLocked()
		return nil, err
	}
	for range 16 { // skip stray answers of earlier, abandoned requests
		resp, err := protocol.ReadCommand(c.br, c.maxFrame, nil)
		if err != nil {
			c.dropLocked()
			return nil, err
		}
		if resp.IsResponse() && resp.Opaque == req.Opaque {
			return resp, nil
		}
	}
	c.dropLocked()
	return nil, fmt.Errorf("ctlclient: %s: no answer to request %d", c.addr, req.Opaque)
}

func (c *conn) dropLocked() {
	if c.nc != nil {
		_ = c.nc.Close() // dropped for a failed or abandoned request, already reported
		c.nc, c.br = nil, nil
	}
}

// close closes the connection at once; a request in progress fails.
func (c *conn) close() {
	c.live.Lock()
	defer c.live.Unlock()
	c.live.closed = true
	if c.live.nc != nil {
		_ = c.live.nc.Close() // a request in progress sees the close as its error
	}
}
