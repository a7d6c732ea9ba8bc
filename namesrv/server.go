package namesrv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
)

// ErrClosed: the server was closed.
var ErrClosed = errors.New("namesrv: server closed")

// Server is a name server: a RouteTable behind a TCP listener. Its methods
// are safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger
	tls  *netx.TLSServer

	// mu guards the route table; handlers take it for each request.
	mu struct {
		sync.RWMutex
		routes *RouteTable
	}

	// state guards the listener and the open connections.
	state struct {
		sync.Mutex
		ln      *netx.Listener
		conns   map[*conn]struct{}
		started bool
		closed  bool
	}

	nextConn atomic.Uint64
	stop     chan struct{} // closed by Close: ends the scan loop
	acl      *nsACL        // access control (acl.go); nil when off
	wg       sync.WaitGroup
	closing  sync.Once
}

// New makes a server; Start listens.
func New(opts Options) (*Server, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger.With("component", "namesrv"), stop: make(chan struct{})}
	ts, err := netx.NewTLSServer(opts.TLS)
	if err != nil {
		return nil, fmt.Errorf("namesrv: %w", err)
	}
	s.tls = ts
	if s.acl, err = openACL(&opts); err != nil {
		return nil, err
	}
	s.mu.routes = NewRouteTable(opts.Clock, opts.BrokerExpiry)
	s.state.conns = map[*conn]struct{}{}
	return s, nil
}

// Options are the options the server runs with, defaults filled in.
func (s *Server) Options() Options { return s.opts }

// Start listens on Options.Listen and serves until Close. It starts two
// long-lived goroutines: the accept loop (woken by connections, ended by
// closing the listener) and the scan loop (woken every ScanInterval, ended
// by Close); each connection gets a reader goroutine of its own.
func (s *Server) Start() error {
	s.state.Lock()
	defer s.state.Unlock()
	if s.state.closed {
		return ErrClosed
	}
	if s.state.started {
		return errors.New("namesrv: already started")
	}
	raw, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("namesrv: listen: %w", err)
	}
	ln := netx.NewListener(raw, netx.Limits{MaxConns: s.opts.MaxConns, MaxPerAddr: s.opts.MaxConnsPerAddr}, s.log, "namesrv")
	s.state.ln, s.state.started = ln, true
	s.log.Info("listening", "addr", ln.Addr().String(), "options", s.opts.String())
	s.wg.Add(2)
	go s.acceptLoop(ln)
	go s.scanLoop()
	return nil
}

// Addr is the address the server listens on ("" before Start).
func (s *Server) Addr() string {
	s.state.Lock()
	defer s.state.Unlock()
	if s.state.ln == nil {
		return ""
	}
	return s.state.ln.Addr().String()
}

// Close stops listening, closes every connection and waits for every
// goroutine of the server to end. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closing.Do(func() {
		s.state.Lock()
		s.state.closed = true
		if s.state.ln != nil {
			err = s.state.ln.Close()
		}
		for c := range s.state.conns {
			_ = c.nc.Close() // ends its reader; the server is going away
		}
		s.state.Unlock()
		close(s.stop)
		s.wg.Wait()
		s.acl.close()
		s.log.Info("closed")
	})
	return err
}

// Refused counts the connections refused over MaxConns or
// MaxConnsPerAddr.
func (s *Server) Refused() int64 {
	s.state.Lock()
	defer s.state.Unlock()
	if s.state.ln == nil {
		return 0
	}
	return s.state.ln.Refused()
}

// ScanNow drops the brokers silent past their expiry, as the scan loop does
// every ScanInterval; tests with a fake clock call it.
func (s *Server) ScanNow() []protocol.UnregisterBrokerRequestHeader {
	s.mu.Lock()
	gone := s.mu.routes.ScanNotActive()
	s.mu.Unlock()
	for _, h := range gone {
		s.log.Warn("broker expired", "cluster", h.ClusterName, "broker", h.BrokerName, "id", h.BrokerID, "addr", h.BrokerAddr)
	}
	return gone
}

// Inspect calls f with the route table under the read lock; f must not keep
// it or change it.
func (s *Server) Inspect(f func(*RouteTable)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f(s.mu.routes)
}

func (s *Server) scanLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.ScanNow()
		}
	}
}

func (s *Server) acceptLoop(ln *netx.Listener) {
	defer s.wg.Done()
	for {
		// The listener waits out transient failures (out of
		// descriptors) itself; an error means it closed.
		raw, err := ln.Accept()
		if err != nil {
			return
		}
		s.state.Lock()
		if s.state.closed {
			s.state.Unlock()
			_ = raw.Close()
			return
		}
		s.wg.Add(1)
		s.state.Unlock()
		go s.acceptConn(raw)
	}
}

// acceptConn applies the TLS mode to a new connection and serves it.
func (s *Server) acceptConn(raw net.Conn) {
	nc, _, err := s.tls.Server(raw, s.opts.FrameTimeout, s.stop)
	if err != nil {
		s.log.Debug("connection closed before its first byte", "remote", raw.RemoteAddr().String(), "err", err)
		_ = raw.Close()
		s.wg.Done()
		return
	}
	c := &conn{id: ConnID(s.nextConn.Add(1)), nc: nc, sem: make(chan struct{}, s.opts.MaxInflight)}
	s.state.Lock()
	if s.state.closed {
		s.state.Unlock()
		_ = nc.Close()
		s.wg.Done()
		return
	}
	s.state.conns[c] = struct{}{}
	s.state.Unlock()
	s.serveConn(c)
}

// conn is one client connection.
type conn struct {
	id  ConnID
	nc  net.Conn
	sem chan struct{} // one token per request being answered

	// w guards writing: one response frame at a time, from a reused buffer.
	w struct {
		sync.Mutex
		buf []byte
	}
}

// serveConn is a connection's reader goroutine: it reads frames until the
// peer goes or sends something bad, and starts a handler per request.
func (s *Server) serveConn(c *conn) {
	defer s.wg.Done()
	log := s.log.With("conn", uint64(c.id), "remote", c.nc.RemoteAddr().String())
	log.Debug("connection open")
	var handlers sync.WaitGroup
	defer func() {
		_ = c.nc.Close()
		handlers.Wait()
		s.state.Lock()
		delete(s.state.conns, c)
		s.state.Unlock()
		if !s.opts.KeepRegistrationOnClose {
			s.mu.Lock()
			gone := s.mu.routes.ConnClosed(c.id)
			s.mu.Unlock()
			for _, h := range gone {
				log.Info("broker unregistered: its connection closed", "cluster", h.ClusterName, "broker", h.BrokerName, "id", h.BrokerID, "addr", h.BrokerAddr)
			}
		}
	}()
	dl := &netx.Deadlines{Conn: c.nc, R: c.nc, Idle: s.opts.IdleTimeout, Frame: s.opts.FrameTimeout,
		Busy: func() bool { return len(c.sem) > 0 }}
	br := bufio.NewReaderSize(dl, 64<<10)
	scratch := make([]byte, 0, 64<<10)
	for {
		cmd, err := protocol.ReadCommand(br, s.opts.MaxFrame, scratch)
		if err == nil {
			dl.Boundary(br.Buffered())
		}
		if err != nil {
			switch {
			case errors.Is(err, netx.ErrIdle), errors.Is(err, netx.ErrFrameTimeout):
				log.Info("closing the connection", "reason", err.Error())
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
				log.Debug("connection closed")
			case errors.Is(err, protocol.ErrFrameTooLarge), errors.Is(err, protocol.ErrBadHeaderLength), errors.Is(err, protocol.ErrBadHeader):
				log.Warn("bad frame, closing the connection", "err", err)
			default:
				log.Info("connection lost", "err", err)
			}
			return
		}
		if cmd.IsResponse() { // we send no requests; a stray response is dropped
			log.Debug("unexpected response dropped", "cmd", cmd.String())
			continue
		}
		c.sem <- struct{}{}
		handlers.Add(1)
		go func() {
			defer func() { <-c.sem; handlers.Done() }()
			resp := s.handle(c, cmd)
			if cmd.IsOneway() || resp == nil {
				return
			}
			if err := s.write(c, resp); err != nil {
				log.Info("write failed, closing the connection", "err", err)
				_ = c.nc.Close()
			}
		}()
	}
}

func (s *Server) write(c *conn, resp *protocol.Command) error {
	c.w.Lock()
	defer c.w.Unlock()
	buf, err := protocol.AppendCommand(c.w.buf[:0], resp)
	if err != nil {
		return err
	}
	if cap(buf) <= 1<<20 { // keep a modest buffer, not the largest ever
		c.w.buf = buf
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout)); err != nil {
		return err
	}
	_, err = c.nc.Write(buf)
	return err
}
