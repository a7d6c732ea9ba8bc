package linkdelay

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// DefaultRing is the ring one direction of a proxied connection buffers
// in. A direction moves at most DefaultRing per oneWay: 4 MiB per 2 ms is
// 2 GiB/s, well above what the lab's replication link carries.
const DefaultRing = 4 << 20

// dialTimeout bounds the proxy's connection to its target.
const dialTimeout = 10 * time.Second

// Proxy is a TCP proxy on loopback that delays every byte by a fixed
// one-way time in each direction, so a request and its answer take at
// least 2×oneWay more than without it. Order is kept and nothing is
// rate-limited beyond the ring (DefaultRing per oneWay and direction).
//
// The connection set-up itself is not delayed: a client's connect
// completes with the proxy at once, and the proxy connects to the target
// then. Netem delays the handshake too; experiments measure after it.
type Proxy struct {
	ln     *net.TCPListener
	target string
	oneWay time.Duration
	ring   int

	closing   chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and every connection's serve

	mu struct {
		sync.Mutex
		conns map[*proxyConn]struct{}
	}
}

// NewProxy listens on listen (host:port; port 0 picks one) and forwards
// each connection to target with oneWay added in both directions.
func NewProxy(listen, target string, oneWay time.Duration) (*Proxy, error) {
	return newProxy(listen, target, oneWay, DefaultRing)
}

func newProxy(listen, target string, oneWay time.Duration, ring int) (*Proxy, error) {
	if oneWay < 0 {
		return nil, fmt.Errorf("linkdelay: negative delay %v", oneWay)
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("linkdelay: target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln.(*net.TCPListener), target: target, oneWay: oneWay, ring: ring, closing: make(chan struct{})}
	p.mu.conns = map[*proxyConn]struct{}{}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops listening, tears down every connection (both sides, at
// once, without delivering what is still delayed) and waits until all of
// the proxy's goroutines have returned. A second Close returns nil.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.closing)
		err = p.ln.Close()
		p.mu.Lock()
		for c := range p.mu.conns {
			c.close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return err
}

// acceptLoop is the proxy's accept goroutine; Close ends it by closing
// the listener.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := p.ln.AcceptTCP()
		if err != nil {
			select {
			case <-p.closing:
				return
			case <-time.After(backoff): // e.g. out of file descriptors
				backoff = min(2*backoff, time.Second)
				continue
			}
		}
		backoff = 5 * time.Millisecond
		pc := &proxyConn{client: c, done: make(chan struct{})}
		p.mu.Lock()
		select {
		case <-p.closing:
			p.mu.Unlock()
			_ = c.Close() // closing: turned away unserved
			return
		default:
		}
		p.mu.conns[pc] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(pc)
	}
}

// proxyConn is one client connection and its connection to the target.
type proxyConn struct {
	client, server *net.TCPConn
	done           chan struct{} // closed by close
	mu             sync.Mutex    // guards server against close during the dial
	closed         bool
}

// close tears the pair down: both sockets close, both directions stop.
func (c *proxyConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	close(c.done)
	// A proxy has nothing to flush: the Close errors change nothing.
	_ = c.client.Close()
	if c.server != nil {
		_ = c.server.Close()
	}
}

// serve runs in one goroutine per connection: it dials the target and
// runs both directions until both have ended, then closes the pair.
func (p *Proxy) serve(c *proxyConn) {
	defer p.wg.Done()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.mu.conns, c)
		p.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	go func() { // Close during the dial cancels it; ends with the dial
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var d net.Dialer
	sc, err := d.DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = sc.Close() // unused: the client side is gone
		return
	}
	c.server = sc.(*net.TCPConn)
	c.mu.Unlock()

	up := newPipe(c.client, c.server, p.oneWay, p.ring, c.done)
	down := newPipe(c.server, c.client, p.oneWay, p.ring, c.done)
	var wg sync.WaitGroup
	for _, dir := range []*pipe{up, down} {
		wg.Go(dir.readLoop)
		wg.Go(func() {
			if err := dir.writeLoop(); err != nil {
				c.close() // a reset or a failed write ends both directions
			}
		})
	}
	wg.Wait()
}
