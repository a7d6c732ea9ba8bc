package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/samsamq/samsa/internal/netx"
)

// Connection-level bounds and TLS (config_net.go): the remoting listener
// is a netx.Listener (caps, accept back-off); each connection's reader
// sits on a netx.Deadlines (idle and partial-frame timeouts); TLS is
// applied per connection by netx.TLSServer before the connection is
// served.

// netState is what New loads for the connection layer.
type netState struct {
	tlsServer *netx.TLSServer
	tlsClient *tls.Config // nil: the broker dials plain
	ln        *netx.Listener
	haLn      *netx.Listener
}

// loadNet reads the TLS files named in the config.
func (b *Broker) loadNet() error {
	srv, err := netx.NewTLSServer(b.cfg.tlsServerOptions())
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	cli, err := b.cfg.tlsClientOptions().Config()
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.net.tlsServer, b.net.tlsClient = srv, cli
	return nil
}

func (b *Broker) limits() netx.Limits {
	return netx.Limits{MaxConns: b.cfg.MaxConnections, MaxPerAddr: b.cfg.MaxConnectionsPerAddress}
}

// listen opens a capped listener on addr.
func (b *Broker) listen(addr, name string) (*netx.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return netx.NewListener(ln, b.limits(), b.log, name), nil
}

// refusedConns counts connections refused over a cap, on the remoting
// and the replication port.
func (b *Broker) refusedConns() int64 {
	var n int64
	if b.net.ln != nil {
		n += b.net.ln.Refused()
	}
	if b.net.haLn != nil {
		n += b.net.haLn.Refused()
	}
	return n
}

// tlsAccept applies the TLS mode to an accepted connection: in permissive
// mode it waits (up to frameReadTimeoutMillis) for the first byte.
func (b *Broker) tlsAccept(nc net.Conn) (net.Conn, bool, error) {
	return b.net.tlsServer.Server(nc, b.cfg.FrameReadTimeout, b.stop)
}

// newDeadlines makes the reader under c's buffer.
func (c *conn) newDeadlines() *netx.Deadlines {
	return &netx.Deadlines{Conn: c.nc, R: countingReader{c.nc, &c.b.stats.bytesRead},
		Idle: c.b.cfg.ServerChannelMaxIdle, Frame: c.b.cfg.FrameReadTimeout,
		Busy: func() bool { return c.pending.Load() > 0 }, Stop: c.b.closing.Load}
}

// timedOut logs and counts a connection closed by a read timeout; false
// when err is not one.
func (c *conn) timedOut(err error) bool {
	switch {
	case errors.Is(err, netx.ErrIdle):
		c.b.stats.idleCloses.Add(1)
		c.b.log.Info("broker: closing an idle connection", "remote", c.addr, "reason", err.Error())
	case errors.Is(err, netx.ErrFrameTimeout):
		c.b.stats.frameTimeouts.Add(1)
		c.b.log.Warn("broker: closing a connection whose frame stalled", "remote", c.addr, "reason", err.Error())
	default:
		return false
	}
	return true
}
