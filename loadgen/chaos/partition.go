package chaos

import (
	"errors"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds a Partition's connection to its target.
const dialTimeout = 10 * time.Second

// Partition is a TCP proxy on loopback that can cut its link the way a
// network partition does: while cut, no byte crosses in either direction
// and no connection is closed (each side learns of the partition only
// from its own timeouts, as across a real one); new connections are
// accepted and held, never connected through. Heal closes every
// connection the cut caught (after a partition longer than the peers'
// timeouts they are dead on both sides anyway) and lets new ones through.
// Safe for concurrent use.
type Partition struct {
	ln      net.Listener
	target  string
	closing chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	mu struct {
		sync.Mutex
		cut    bool
		match  func(client net.Conn) bool // nil: the cut holds every connection
		healed chan struct{}              // closed by Heal; a new one at each Cut
		conns  map[*pconn]struct{}
	}
}

type pconn struct {
	client, server net.Conn // server is nil for a connection held by a cut
	caught         bool     // alive during a cut and held by it: Heal closes it
}

// close cuts both sides; a proxy has nothing to flush, so the Close errors
// change nothing.
func (c *pconn) close() {
	_ = c.client.Close()
	if c.server != nil {
		_ = c.server.Close()
	}
}

// NewPartition listens on listen (host:port; port 0 picks one) and
// forwards each connection to target until Cut.
func NewPartition(listen, target string) (*Partition, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Partition{ln: ln, target: target, closing: make(chan struct{})}
	p.mu.conns = map[*pconn]struct{}{}
	p.mu.healed = make(chan struct{})
	close(p.mu.healed)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address to connect to instead of the target.
func (p *Partition) Addr() string { return p.ln.Addr().String() }

// Cut stops every byte across the link, in both directions, until Heal.
func (p *Partition) Cut() { p.CutFrom(nil) }

// CutFrom is Cut for the connections match accepts (nil: all), now and
// until Heal: one side's connections through a proxy that others share.
// match is given the proxy's end of each client connection; it is called
// under the Partition's lock, once per connection.
func (p *Partition) CutFrom(match func(client net.Conn) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cut {
		return
	}
	p.mu.cut, p.mu.match = true, match
	p.mu.healed = make(chan struct{})
	for c := range p.mu.conns {
		c.caught = match == nil || match(c.client)
	}
}

// Heal closes the connections the cut caught and lets bytes and new
// connections through again.
func (p *Partition) Heal() {
	p.mu.Lock()
	if !p.mu.cut {
		p.mu.Unlock()
		return
	}
	p.mu.cut, p.mu.match = false, nil
	close(p.mu.healed)
	var caught []*pconn
	for c := range p.mu.conns {
		if c.caught {
			caught = append(caught, c)
			delete(p.mu.conns, c)
		}
	}
	p.mu.Unlock()
	for _, c := range caught {
		c.close()
	}
}

// IsCut reports whether the link is cut.
func (p *Partition) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.cut
}

// Close stops the proxy and closes every connection; it returns once
// every goroutine has ended.
func (p *Partition) Close() error {
	var err error
	p.once.Do(func() {
		close(p.closing)
		err = p.ln.Close()
		p.mu.Lock()
		conns := p.mu.conns
		p.mu.conns = map[*pconn]struct{}{}
		p.mu.Unlock()
		for c := range conns {
			c.close()
		}
		p.wg.Wait()
	})
	return err
}

func (p *Partition) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-p.closing:
				return
			case <-time.After(10 * time.Millisecond): // EMFILE and the like: try again
			}
			continue
		}
		pc := &pconn{client: c}
		p.mu.Lock()
		select {
		case <-p.closing:
			p.mu.Unlock()
			_ = c.Close() // closing: turned away unserved
			return
		default:
		}
		p.mu.conns[pc] = struct{}{}
		if p.mu.cut && (p.mu.match == nil || p.mu.match(c)) { // held, never connected through
			pc.caught = true
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(pc)
	}
}

func (p *Partition) serve(pc *pconn) {
	defer p.wg.Done()
	s, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		p.drop(pc)
		return
	}
	p.mu.Lock()
	if _, ok := p.mu.conns[pc]; !ok { // closed meanwhile
		p.mu.Unlock()
		_ = s.Close() // unused: the client side is gone
		return
	}
	pc.server = s
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.pump(pc, s, pc.client)
	}()
	p.pump(pc, pc.client, s)
}

// pump copies src to dst while the link is up; at a cut it stops and
// waits for Heal (which closes the connection) or Close.
func (p *Partition) pump(pc *pconn, src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass(pc) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			// One side ended. Across a cut the other side must not learn
			// of it: wait for Heal, which closes both.
			if p.pass(pc) {
				p.drop(pc)
			}
			return
		}
	}
}

// pass reports whether pc's bytes may cross now; during a cut that
// caught it, it waits until the cut ends and says no: Heal closes it.
func (p *Partition) pass(pc *pconn) bool {
	p.mu.Lock()
	if !p.mu.cut || !pc.caught {
		p.mu.Unlock()
		return true
	}
	healed := p.mu.healed
	p.mu.Unlock()
	select {
	case <-healed:
	case <-p.closing:
	}
	return false
}

// drop closes a connection that ended on its own.
func (p *Partition) drop(pc *pconn) {
	p.mu.Lock()
	_, ok := p.mu.conns[pc]
	delete(p.mu.conns, pc)
	p.mu.Unlock()
	if ok {
		pc.close()
	}
}
