package broker

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
)

// rpcClient sends the broker's own requests (to name servers): one
// connection per address, one request at a time on it (registration is
// rare), reconnecting after any error. Safe for concurrent use.
type rpcClient struct {
	maxFrame int
	tls      *tls.Config
	// accessKey and secretKey sign every request when set (signedBy).
	accessKey, secretKey string
	mu                   struct {
		sync.Mutex
		conns  map[string]*rpcConn
		closed bool
	}
}

type rpcConn struct {
	mu     sync.Mutex
	nc     net.Conn
	br     *bufio.Reader
	opaque int32
}

// newRPCClient dials with TLS when tlsCfg is set (tlsEnable).
func newRPCClient(maxFrame int, tlsCfg *tls.Config) *rpcClient {
	r := &rpcClient{maxFrame: maxFrame, tls: tlsCfg}
	r.mu.conns = make(map[string]*rpcConn)
	return r
}

func (r *rpcClient) conn(addr string) (*rpcConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return nil, ErrClosed
	}
	c := r.mu.conns[addr]
	if c == nil {
		c = &rpcConn{}
		r.mu.conns[addr] = c
	}
	return c, nil
}

// signedBy makes r sign its requests with the account (none when
// accessKey is empty).
func (r *rpcClient) signedBy(accessKey, secretKey string) *rpcClient {
	r.accessKey, r.secretKey = accessKey, secretKey
	return r
}

// call sends req to addr and waits up to timeout for its response.
func (r *rpcClient) call(addr string, req *protocol.Command, timeout time.Duration) (*protocol.Command, error) {
	c, err := r.conn(addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	deadline := time.Now().Add(timeout)
	reused := c.nc != nil
	resp, err := c.roundTrip(r, addr, req, deadline)
	if err != nil && reused && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		// The server closed the kept connection while it was idle
		// (serverChannelMaxIdleTimeSeconds): dial again, once. Every
		// request sent here (registration, metadata reads) may be repeated.
		resp, err = c.roundTrip(r, addr, req, deadline)
	}
	return resp, err
}

// roundTrip sends req on c (dialing when c has no connection) and reads
// its answer; an error closes the connection.
func (c *rpcConn) roundTrip(r *rpcClient, addr string, req *protocol.Command, deadline time.Time) (*protocol.Command, error) {
	timeout := time.Until(deadline)
	if c.nc == nil {
		nc, err := netx.ClientConn(&net.Dialer{Timeout: timeout}, addr, r.tls)
		if err != nil {
			return nil, err
		}
		c.nc, c.br = nc, bufio.NewReader(nc)
	}
	fail := func(err error) (*protocol.Command, error) {
		_ = c.nc.Close() // dropped for err, which is returned
		c.nc, c.br = nil, nil
		return nil, err
	}
	c.opaque++
	req.Opaque = c.opaque
	if r.accessKey != "" {
		acl.SignCommand(req, r.accessKey, r.secretKey, "")
	}
	frame, err := protocol.AppendCommand(nil, req)
	if err != nil {
		return nil, err
	}
	_ = c.nc.SetDeadline(deadline)
	if _, err := c.nc.Write(frame); err != nil {
		return fail(err)
	}
	if req.IsOneway() {
		return nil, nil
	}
	for {
		resp, err := protocol.ReadCommand(c.br, r.maxFrame, nil)
		if err != nil {
			return fail(err)
		}
		if resp.IsResponse() && resp.Opaque == req.Opaque {
			return resp, nil
		}
		if !resp.IsResponse() {
			return fail(fmt.Errorf("broker: %s sent a request (code %d) on a client connection", addr, resp.Code))
		}
	}
}

// close closes every connection; later calls fail with ErrClosed.
func (r *rpcClient) close() {
	r.mu.Lock()
	r.mu.closed = true
	conns := r.mu.conns
	r.mu.conns = nil
	r.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		if c.nc != nil {
			_ = c.nc.Close() // a call in progress sees the close as its error
			c.nc = nil
		}
		c.mu.Unlock()
	}
}
