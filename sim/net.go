package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Net is an in-memory network between named nodes: listeners by address,
// connections as in-memory pipes (net.Pipe: deadlines work, and under
// testing/synctest every wait is on the bubble's virtual clock), and
// faults a schedule applies: a partition between two nodes closes their
// connections and refuses new ones until healed; a one-way cut (Drop)
// holds what one side sends while the other's arrives; a delay slows a
// link. Linked answers for calls made in process across the network (the
// controller's, in package sim).
type Net struct {
	mu struct {
		sync.Mutex
		listeners map[string]*listener // by address
		cut       map[[2]string]bool   // partitioned pairs, sorted
		drop      map[[2]string]bool   // one-way cuts: from, to
		delay     map[[2]string]time.Duration
		conns     []*pipeEnd
	}
}

// NewNet returns a network with no listeners and no faults.
func NewNet() *Net {
	n := &Net{}
	n.mu.listeners = map[string]*listener{}
	n.mu.cut = map[[2]string]bool{}
	n.mu.drop = map[[2]string]bool{}
	n.mu.delay = map[[2]string]time.Duration{}
	return n
}

// ErrRefused is a dial to an address nobody listens on, or across a
// partition.
var ErrRefused = errors.New("sim: connection refused")

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Listen listens on addr for node. The address must be free.
func (n *Net) Listen(node, addr string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.mu.listeners[addr]; ok {
		return nil, fmt.Errorf("sim: listen %s: address in use", addr)
	}
	l := &listener{net: n, node: node, addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
	n.mu.listeners[addr] = l
	return l, nil
}

// Dialer returns from's dial function (ha.SlaveConfig.Dial's shape).
func (n *Net) Dialer(from string) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		n.mu.Lock()
		l := n.mu.listeners[addr]
		if l == nil || !n.linkedLocked(from, l.node) || !n.linkedLocked(l.node, from) {
			n.mu.Unlock()
			return nil, fmt.Errorf("sim: dial %s from %s: %w", addr, from, ErrRefused)
		}
		c, s := net.Pipe()
		ce := &pipeEnd{Conn: c, net: n, a: from, b: l.node, closed: make(chan struct{})}
		se := &pipeEnd{Conn: s, net: n, a: l.node, b: from, closed: make(chan struct{})}
		n.mu.conns = append(n.mu.conns, ce, se)
		n.mu.Unlock()
		select {
		case l.conns <- se:
			return ce, nil
		case <-l.done:
		case <-ctx.Done():
		}
		_ = ce.Close()
		_ = se.Close()
		return nil, fmt.Errorf("sim: dial %s from %s: %w", addr, from, ErrRefused)
	}
}

// Partition cuts a from b: their connections close, new ones are refused.
func (n *Net) Partition(a, b string) {
	n.mu.Lock()
	n.mu.cut[pair(a, b)] = true
	var doomed []*pipeEnd
	live := n.mu.conns[:0]
	for _, c := range n.mu.conns {
		if pair(c.a, c.b) == pair(a, b) {
			doomed = append(doomed, c)
		} else {
			live = append(live, c)
		}
	}
	n.mu.conns = live
	n.mu.Unlock()
	for _, c := range doomed {
		_ = c.Close()
	}
}

// Heal lifts every partition, one-way cut and delay.
func (n *Net) Heal() {
	n.mu.Lock()
	clear(n.mu.cut)
	clear(n.mu.drop)
	clear(n.mu.delay)
	n.mu.Unlock()
}

// Drop cuts the way from a to b only, until Heal: what a sends b is held
// (a socket whose peer's window never opens: the writer's kernel takes
// the bytes, nothing arrives), what b sends a arrives. A new connection
// either way is refused (TCP's handshake needs both ways). Connections
// stay open: each end finds the silence by its own timeouts.
func (n *Net) Drop(a, b string) {
	n.mu.Lock()
	n.mu.drop[[2]string{a, b}] = true
	n.mu.Unlock()
}

// Linked reports whether what a sends b arrives now: no partition
// between them and no one-way cut from a to b.
func (n *Net) Linked(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.linkedLocked(a, b)
}

func (n *Net) linkedLocked(a, b string) bool {
	return !n.mu.cut[pair(a, b)] && !n.mu.drop[[2]string{a, b}]
}

// Delay makes every write between a and b arrive d later (a slow or
// congested link: TCP keeps the order, so nothing is reordered), until
// Heal.
func (n *Net) Delay(a, b string, d time.Duration) {
	n.mu.Lock()
	n.mu.delay[pair(a, b)] = d
	n.mu.Unlock()
}

func (n *Net) delayOf(a, b string) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.delay[pair(a, b)]
}

// Isolate closes every connection of node (its process died: the peers
// see their connections reset); the node's listeners must be closed by
// its owner.
func (n *Net) Isolate(node string) {
	n.mu.Lock()
	var doomed []*pipeEnd
	live := n.mu.conns[:0]
	for _, c := range n.mu.conns {
		if c.a == node || c.b == node {
			doomed = append(doomed, c)
		} else {
			live = append(live, c)
		}
	}
	n.mu.conns = live
	n.mu.Unlock()
	for _, c := range doomed {
		_ = c.Close()
	}
}

// pipeEnd is one end of a connection from a to b.
type pipeEnd struct {
	net.Conn
	net  *Net
	a, b string
	// While the link is slowed, writes queue here (copied, answered at
	// once, as a kernel's socket buffer would) and a relay goroutine
	// sends each after the delay, in order; a writer never sleeps
	// holding its own locks (under synctest a goroutine waiting for a
	// mutex would stop the clock).
	mu       sync.Mutex
	q        [][]byte
	relaying bool
	err      error // the relay's write error, returned by later writes
	closed   chan struct{}
	once     sync.Once
}

// Close closes the end and stops its relay.
func (p *pipeEnd) Close() error {
	p.once.Do(func() { close(p.closed) })
	return p.Conn.Close()
}

func (p *pipeEnd) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// Write sends b now, or queues it behind the link's delay or one-way cut.
func (p *pipeEnd) Write(b []byte) (int, error) {
	d := p.net.delayOf(p.a, p.b)
	stalled := !p.net.Linked(p.a, p.b)
	p.mu.Lock()
	if p.err != nil {
		err := p.err
		p.mu.Unlock()
		return 0, err
	}
	if d == 0 && !stalled && !p.relaying {
		p.mu.Unlock()
		return p.Conn.Write(b)
	}
	p.q = append(p.q, append([]byte(nil), b...))
	if !p.relaying {
		p.relaying = true
		go p.relay()
	}
	p.mu.Unlock()
	return len(b), nil
}

// relay sends the queued writes, each after the link's delay, until the
// queue is empty or a write fails.
func (p *pipeEnd) relay() {
	for {
		p.mu.Lock()
		if len(p.q) == 0 {
			p.relaying = false
			p.mu.Unlock()
			return
		}
		b := p.q[0]
		p.q = p.q[1:]
		p.mu.Unlock()
		if d := p.net.delayOf(p.a, p.b); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-p.closed:
				t.Stop()
			}
		}
		// A one-way cut holds the bytes until it heals (or the
		// connection closes, which the write below then reports).
		for !p.net.Linked(p.a, p.b) {
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case <-t.C:
			case <-p.closed:
				t.Stop()
			}
			if p.isClosed() {
				break
			}
		}
		if _, err := p.Conn.Write(b); err != nil {
			p.mu.Lock()
			p.err, p.q, p.relaying = err, nil, false
			p.mu.Unlock()
			return
		}
	}
}

type listener struct {
	net        *Net
	node, addr string
	conns      chan net.Conn
	done       chan struct{}
	once       sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.net.mu.Lock()
		if l.net.mu.listeners[l.addr] == l {
			delete(l.net.mu.listeners, l.addr)
		}
		l.net.mu.Unlock()
	})
	return nil
}

func (l *listener) Addr() net.Addr { return simAddr(l.addr) }

type simAddr string

func (a simAddr) Network() string { return "sim" }
func (a simAddr) String() string  { return string(a) }
