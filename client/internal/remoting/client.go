package remoting

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
)

// Options configure a Client. Zero fields take the defaults given.
type Options struct {
	// Serialize is the header encoding of requests (default
	// protocol.SerializeJSON, the zero value; the client package asks for
	// RocketMQ's binary one).
	Serialize protocol.SerializeType
	// Timeout bounds a request whose context has no deadline (default 3 s).
	Timeout time.Duration
	// DialTimeout bounds connecting (default 3 s).
	DialTimeout time.Duration
	// WriteTimeout bounds one write to the socket; a peer that stops
	// reading for this long fails the connection (default 10 s).
	WriteTimeout time.Duration
	// MaxFrame limits a received frame (default protocol.DefaultMaxFrame).
	MaxFrame int
	// MaxPending bounds the bytes queued for the writer per connection;
	// senders wait (within their context) when it is full (default 64 MiB).
	MaxPending int
	// SweepInterval is how often a connection looks for requests made with
	// InvokeAsyncDeadline that passed their deadline: such a timeout is
	// reported up to this late (default 20 ms).
	SweepInterval time.Duration
	// OnRequest serves requests the peer sends (code, ext fields, body).
	// It runs in a goroutine of its own per request; its answer, when the
	// request is not one-way, is sent back (a nil answer sends
	// REQUEST_CODE_NOT_SUPPORTED). Nil: every request is answered so.
	OnRequest func(addr string, req *protocol.Command) *protocol.Command
	// Logger receives connection events (default: discard).
	Logger *slog.Logger
	// TLS, if set, makes every connection TLS (the handshake is bounded
	// by DialTimeout). Its ServerName defaults to the host dialed.
	TLS *tls.Config
	// IdleClose closes a connection with no request sent and none
	// pending for this long (default 90 s, under the servers' 120 s idle
	// timeout, so the client, not the server, ends an idle connection and
	// the next request dials a fresh one; negative: never).
	IdleClose time.Duration
	// RPCHook, when set, sees every request just before it is queued
	// (after its Opaque is set): the client signs requests with it
	// (SignWith). It must not block.
	RPCHook func(req *protocol.Command)
}

// SignWith is an RPCHook that signs each request with an account, as
// RocketMQ's AclClientRPCHook does (package acl).
func SignWith(accessKey, secretKey, securityToken string) func(req *protocol.Command) {
	return func(req *protocol.Command) { acl.SignCommand(req, accessKey, secretKey, securityToken) }
}

func (o *Options) ensureDefaults() {
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = protocol.DefaultMaxFrame
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 64 << 20
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = 20 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.IdleClose == 0 {
		o.IdleClose = 90 * time.Second
	}
}

// Client keeps one connection per peer address and multiplexes requests
// on it. Safe for concurrent use.
type Client struct {
	opts   Options
	opaque atomic.Int32
	wg     sync.WaitGroup // connection goroutines and request handlers

	mu struct {
		sync.Mutex
		closed bool
		conns  map[string]*connEntry
	}
}

// connEntry is a connection being dialed (ready open) or up.
type connEntry struct {
	ready chan struct{} // closed when the dial ended
	conn  *conn         // set before ready closes, nil if the dial failed
	err   error
}

// New returns a Client; it dials nothing until the first request.
func New(opts Options) *Client {
	opts.ensureDefaults()
	c := &Client{opts: opts}
	c.mu.conns = map[string]*connEntry{}
	return c
}

// Invoke sends req to addr and waits for the response, until ctx ends (or
// Options.Timeout, when ctx has no deadline). It sets req's Opaque and
// Serialize. A response is returned whatever its code.
func (c *Client) Invoke(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	type result struct {
		resp *protocol.Command
		err  error
	}
	ch := make(chan result, 1)
	c.InvokeAsync(ctx, addr, req, func(resp *protocol.Command, err error) { ch <- result{resp, err} })
	r := <-ch
	return r.resp, r.err
}

// InvokeAsync sends req to addr and calls done exactly once with the
// response or the error, from another goroutine (or from this one, when
// the request cannot be sent). It returns once the request is queued for
// the writer: it may block while dialing, or while the connection's write
// queue is full. The caller must not change req.Body until done is called.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *protocol.Command, done func(*protocol.Command, error)) {
	cn, err := c.conn(ctx, addr)
	if err != nil {
		done(nil, err)
		return
	}
	req.Opaque = c.opaque.Add(1)
	req.Serialize = c.serializeFor(req.Code)
	req.Flag &^= protocol.FlagOneway | protocol.FlagResponse
	cl := &call{done: done}
	if err := cn.register(req.Opaque, cl); err != nil {
		done(nil, err)
		return
	}
	var cancel context.CancelFunc
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
	}
	opaque, code := req.Opaque, req.Code
	stop := context.AfterFunc(ctx, func() {
		if cn.unregister(opaque) {
			cl.finish(nil, ctxError(ctx, fmt.Sprintf("%s code %d", addr, code)))
		}
	})
	cl.setStop(stop, cancel)
	if c.opts.RPCHook != nil {
		c.opts.RPCHook(req)
	}
	if err := cn.enqueue(ctx, time.Time{}, req, false); err != nil {
		if cn.unregister(opaque) {
			cl.finish(nil, err)
		}
	}
}

// InvokeAsyncDeadline is InvokeAsync bounded by a deadline instead of a
// context, for hot paths: no context and no timer per request. A request
// still unanswered at the deadline fails with ErrTimeout when the
// connection's sweeper next looks (every SweepInterval); the wait to queue
// it, on a full connection, is bounded by the deadline too.
func (c *Client) InvokeAsyncDeadline(addr string, req *protocol.Command, deadline time.Time, done func(*protocol.Command, error)) {
	cn, err := c.conn(context.Background(), addr)
	if err != nil {
		done(nil, err)
		return
	}
	req.Opaque = c.opaque.Add(1)
	req.Serialize = c.serializeFor(req.Code)
	req.Flag &^= protocol.FlagOneway | protocol.FlagResponse
	cl := &call{done: done, deadline: deadline, addr: addr, code: req.Code}
	if err := cn.register(req.Opaque, cl); err != nil {
		done(nil, err)
		return
	}
	if c.opts.RPCHook != nil {
		c.opts.RPCHook(req)
	}
	//lint:ignore SA1012 a nil ctx means "until deadline": enqueue makes a context only when it must wait, none on the fast path
	if err := cn.enqueue(nil, deadline, req, false); err != nil {
		if cn.unregister(req.Opaque) {
			cl.finish(nil, err)
		}
	}
}

// InvokeOneway sends req to addr marked one-way and returns once it is
// queued; no response comes. The body is copied when it is queued by
// reference, so the caller may reuse it at once.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *protocol.Command) error {
	cn, err := c.conn(ctx, addr)
	if err != nil {
		return err
	}
	req.Opaque = c.opaque.Add(1)
	req.Serialize = c.serializeFor(req.Code)
	req.Flag = req.Flag&^protocol.FlagResponse | protocol.FlagOneway
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	if c.opts.RPCHook != nil {
		c.opts.RPCHook(req)
	}
	return cn.enqueue(ctx, time.Time{}, req, true)
}

// conn returns the connection to addr, dialing it if there is none.
func (c *Client) conn(ctx context.Context, addr string) (*conn, error) {
	for {
		c.mu.Lock()
		if c.mu.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		e := c.mu.conns[addr]
		if e == nil {
			e = &connEntry{ready: make(chan struct{})}
			c.mu.conns[addr] = e
			c.mu.Unlock()
			c.dial(addr, e)
		} else {
			c.mu.Unlock()
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctxError(ctx, "dial "+addr)
		}
		if e.err != nil {
			return nil, e.err
		}
		if !e.conn.dead() {
			return e.conn, nil
		}
		// Dead: it removes itself from the map; dial again.
		c.remove(addr, e)
	}
}

// dial connects e to addr, bounded by DialTimeout whatever the caller's
// context (other callers may be waiting on the same dial).
func (c *Client) dial(addr string, e *connEntry) {
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	nc, err := d.Dial("tcp", addr)
	if err == nil {
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true) // best effort (Go's default already)
		}
		if c.opts.TLS != nil {
			nc, err = netx.ClientHandshake(nc, addr, c.opts.TLS, c.opts.DialTimeout)
		}
	}
	if err != nil {
		e.err = fmt.Errorf("%w: dial %s: %v", ErrConnection, addr, err)
		c.remove(addr, e)
		close(e.ready)
		return
	}
	c.mu.Lock()
	closed := c.mu.closed
	if !closed {
		c.wg.Add(3)
	}
	c.mu.Unlock()
	if closed {
		_ = nc.Close() // not used: the client closed meanwhile
		e.err = ErrClosed
		close(e.ready)
		return
	}
	e.conn = newConn(c, addr, nc, e)
	close(e.ready)
	c.opts.Logger.Debug("remoting: connected", "addr", addr, "local", nc.LocalAddr().String())
	go e.conn.readLoop()
	go e.conn.writeLoop()
	go e.conn.sweepLoop()
}

// remove drops e from the map if it is still addr's entry.
func (c *Client) remove(addr string, e *connEntry) {
	c.mu.Lock()
	if c.mu.conns[addr] == e {
		delete(c.mu.conns, addr)
	}
	c.mu.Unlock()
}

// CloseConn drops the connection to addr (if any), failing its pending
// requests with ErrConnection; the next request dials again.
func (c *Client) CloseConn(addr string) {
	c.mu.Lock()
	e := c.mu.conns[addr]
	c.mu.Unlock()
	if e == nil {
		return
	}
	<-e.ready
	if e.conn != nil {
		e.conn.fail(fmt.Errorf("%w: %s closed by the client", ErrConnection, addr))
	}
}

// Addrs returns the addresses with a live connection.
func (c *Client) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for a, e := range c.mu.conns {
		select {
		case <-e.ready:
			if e.conn != nil && !e.conn.dead() {
				out = append(out, a)
			}
		default:
		}
	}
	return out
}

// Close fails every pending request with ErrClosed, closes the
// connections and waits for their goroutines.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	entries := make([]*connEntry, 0, len(c.mu.conns))
	for _, e := range c.mu.conns {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	for _, e := range entries {
		<-e.ready
		if e.conn != nil {
			e.conn.fail(ErrClosed)
		}
	}
	c.wg.Wait()
	return nil
}

// serializeFor is the header encoding of a request with code: the
// configured one, but JSON for a code the binary header's int16 cannot
// carry (RocketMQ 5's POP family), as RocketMQ's own clients send them.
func (c *Client) serializeFor(code int32) protocol.SerializeType {
	if code != int32(int16(code)) {
		return protocol.SerializeJSON
	}
	return c.opts.Serialize
}
