package raftctl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
)

// server is a replica's TCP server for brokers and tools: remoting frames
// in, one handler goroutine per request (at most MaxInflight per
// connection), answers written one at a time per connection.
type server struct {
	n    *Node
	opts Options
	log  *slog.Logger
	tls  *netx.TLSServer
	ln   *netx.Listener
	stop chan struct{}
	wg   sync.WaitGroup

	// mu guards the open connections and closed.
	mu struct {
		sync.Mutex
		conns  map[*sconn]struct{}
		closed bool
	}
	closing sync.Once
}

type sconn struct {
	nc  net.Conn
	sem chan struct{}
	w   sync.Mutex // one answer at a time
}

func newServer(n *Node, o Options) (*server, error) {
	s := &server{n: n, opts: o, log: n.log.With("part", "server"), stop: make(chan struct{})}
	ts, err := netx.NewTLSServer(o.TLS)
	if err != nil {
		if o.Listener != nil {
			_ = o.Listener.Close() // nothing was served on it
		}
		return nil, fmt.Errorf("raftctl: %w", err)
	}
	s.tls = ts
	raw := o.Listener
	if raw == nil {
		self, _ := o.self()
		if raw, err = net.Listen("tcp", self.RPCAddr); err != nil {
			return nil, fmt.Errorf("raftctl: listen: %w", err)
		}
	}
	s.ln = netx.NewListener(raw, netx.Limits{MaxConns: o.MaxConns, MaxPerAddr: o.MaxConnsPerAddr}, s.log, "controller")
	s.mu.conns = map[*sconn]struct{}{}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

func (s *server) addr() string { return s.ln.Addr().String() }

// close stops accepting, closes every connection and waits for every
// goroutine of the server.
func (s *server) close() {
	s.closing.Do(func() {
		s.mu.Lock()
		s.mu.closed = true
		// Shutting down: a close error leaves nothing to do.
		_ = s.ln.Close()
		for c := range s.mu.conns {
			_ = c.nc.Close()
		}
		s.mu.Unlock()
		close(s.stop)
		s.wg.Wait()
	})
}

// acceptLoop is woken by connections and ended by closing the listener.
func (s *server) acceptLoop() {
	defer s.wg.Done()
	for {
		raw, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			_ = raw.Close() // shutting down: turned away unserved
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(raw)
	}
}

// serve is a connection's reader goroutine.
func (s *server) serve(raw net.Conn) {
	defer s.wg.Done()
	nc, _, err := s.tls.Server(raw, s.opts.FrameTimeout, s.stop)
	if err != nil {
		_ = raw.Close() // the handshake failed: nothing was served
		return
	}
	c := &sconn{nc: nc, sem: make(chan struct{}, s.opts.MaxInflight)}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		_ = nc.Close() // shutting down: turned away unserved
		return
	}
	s.mu.conns[c] = struct{}{}
	s.mu.Unlock()
	var handlers sync.WaitGroup
	defer func() {
		_ = nc.Close() // the reader is done; a handler writing after this logs its failure
		handlers.Wait()
		s.mu.Lock()
		delete(s.mu.conns, c)
		s.mu.Unlock()
	}()
	log := s.log.With("remote", nc.RemoteAddr().String())
	dl := &netx.Deadlines{Conn: nc, R: nc, Idle: s.opts.IdleTimeout, Frame: s.opts.FrameTimeout,
		Busy: func() bool { return len(c.sem) > 0 }}
	br := bufio.NewReaderSize(dl, 16<<10)
	for {
		cmd, err := protocol.ReadCommand(br, s.opts.MaxFrame, nil)
		if err != nil {
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
			case errors.Is(err, protocol.ErrFrameTooLarge), errors.Is(err, protocol.ErrBadHeaderLength), errors.Is(err, protocol.ErrBadHeader):
				log.Warn("bad frame, closing the connection", "err", err)
			default:
				log.Debug("connection closed", "err", err)
			}
			return
		}
		dl.Boundary(br.Buffered())
		if cmd.IsResponse() {
			continue
		}
		read := time.Now()
		c.sem <- struct{}{}
		handlers.Add(1)
		go func() {
			defer func() { <-c.sem; handlers.Done() }()
			start := time.Now()
			resp := s.aclCheck(c, cmd)
			if resp == nil {
				resp = s.handle(cmd)
			}
			handled := time.Now()
			var err error
			if !cmd.IsOneway() && resp != nil {
				if err = s.write(c, resp); err != nil {
					log.Info("write failed, closing the connection", "err", err)
					_ = nc.Close() // already broken; the error above is logged
				}
			}
			if took := time.Since(read); took >= s.opts.SlowThreshold {
				log.Warn("slow request", "code", cmd.Code, "opaque", cmd.Opaque, "took", took.Round(time.Millisecond),
					"queued", start.Sub(read).Round(time.Millisecond), "handled", handled.Sub(start).Round(time.Millisecond),
					"written", time.Since(handled).Round(time.Millisecond), "writeErr", err != nil)
			}
		}()
	}
}

func (s *server) write(c *sconn, resp *protocol.Command) error {
	buf, err := protocol.AppendCommand(nil, resp)
	if err != nil {
		return err
	}
	c.w.Lock()
	defer c.w.Unlock()
	if err := c.nc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout)); err != nil {
		return err
	}
	_, err = c.nc.Write(buf)
	return err
}
