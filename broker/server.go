package broker

import (
	"errors"
	"net"
	"time"
)

// acceptLoop accepts connections until the listener closes.
func (b *Broker) acceptLoop() {
	var delay time.Duration
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || b.closing.Load() {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			b.log.Warn("broker: accept failed", "err", err, "retry_in", delay)
			select {
			case <-time.After(delay):
			case <-b.stop:
				return
			}
			continue
		}
		delay = 0
		b.mu.Lock()
		if b.mu.closed {
			b.mu.Unlock()
			_ = nc.Close() // shutting down: turned away unserved
			return
		}
		b.connWG.Add(1)
		b.mu.Unlock()
		go func() {
			defer b.connWG.Done()
			b.serveConn(nc)
		}()
	}
}

// serveConn applies the TLS mode to an accepted connection, then serves
// it until it closes. It runs on the connection's reader goroutine.
func (b *Broker) serveConn(raw net.Conn) {
	nc, _, err := b.tlsAccept(raw)
	if err != nil {
		if !b.closing.Load() {
			b.log.Info("broker: connection closed before its first byte", "remote", raw.RemoteAddr().String(), "err", err)
		}
		_ = raw.Close() // the handshake failed: nothing was served
		return
	}
	c := newConn(b, nc)
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		_ = nc.Close() // shutting down: turned away unserved
		return
	}
	b.mu.conns[c] = struct{}{}
	b.mu.Unlock()
	b.stats.currConns.Add(1)
	b.stats.totalConns.Add(1)
	c.serve()
}

// connClosed forgets a closed connection and tells its consumer groups.
func (b *Broker) connClosed(c *conn) {
	b.mu.Lock()
	_, ok := b.mu.conns[c]
	delete(b.mu.conns, c)
	b.mu.Unlock()
	if ok {
		b.stats.currConns.Add(-1)
	}
	b.clients.notify(b.clients.closed(c))
}

// clientScanLoop drops clients silent for ClientChannelMaxIdle, every 10 s
// (RocketMQ's ClientHousekeepingService).
func (b *Broker) clientScanLoop() {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.clients.expireIdle(b.cfg.Clock())
		case <-b.stop:
			return
		}
	}
}
