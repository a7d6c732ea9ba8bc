package netx

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits caps a server's connections.
type Limits struct {
	// MaxConns bounds the server's open connections; 0 is
	// DefaultMaxConns().
	MaxConns int
	// MaxPerAddr bounds the open connections from one remote IP; 0 is
	// DefaultMaxPerAddr (capped by MaxConns).
	MaxPerAddr int
}

// DefaultMaxPerAddr is high enough for the lab (`samsa loadgen` opens
// many clients from 127.0.0.1).
const DefaultMaxPerAddr = 4096

// DefaultMaxConns is half the process's file-descriptor limit
// (RLIMIT_NOFILE), at least 64 and at most 65536: the other half is left
// for the store's files and outgoing connections.
func DefaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return int(min(max(rl.Cur/2, 64), 65536))
}

// EnsureDefaults fills zero fields.
func (l *Limits) EnsureDefaults() {
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns()
	}
	if l.MaxPerAddr == 0 {
		l.MaxPerAddr = min(DefaultMaxPerAddr, l.MaxConns)
	}
}

// Listener wraps a net.Listener: Accept refuses (closes at once, counts
// and logs, at most once a second) a connection over a cap, and waits
// out accept errors such as EMFILE with a back-off (5 ms doubling to
// 1 s, as net/http's Server does) instead of returning them: Accept
// returns an error only once the listener is closed. A connection it
// returns frees its place when closed.
type Listener struct {
	net.Listener
	lim     Limits
	log     *slog.Logger
	name    string
	done    chan struct{}
	once    sync.Once
	refused atomic.Int64
	lastLog atomic.Int64 // unix ns of the last refusal logged
	quiet   atomic.Int64 // refusals not logged since
	mu      struct {
		sync.Mutex
		total  int
		byAddr map[netip.Addr]int
	}
}

// NewListener wraps ln; name prefixes its log lines ("broker", ...).
func NewListener(ln net.Listener, lim Limits, log *slog.Logger, name string) *Listener {
	lim.EnsureDefaults()
	if log == nil {
		log = slog.Default()
	}
	l := &Listener{Listener: ln, lim: lim, log: log, name: name, done: make(chan struct{})}
	l.mu.byAddr = make(map[netip.Addr]int)
	return l
}

// Limits returns the caps in force.
func (l *Listener) Limits() Limits { return l.lim }

// Refused counts the connections refused over a cap.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// Open is the number of connections accepted and not yet closed.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.total
}

// Close closes the listener and ends a back-off in progress.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Accept returns the next connection within the caps.
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			select {
			case <-l.done:
				return nil, err
			default:
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			l.log.Warn(l.name+": accept failed; retrying", "err", err, "retry_in", delay)
			select {
			case <-time.After(delay):
			case <-l.done:
				return nil, net.ErrClosed
			}
			continue
		}
		delay = 0
		ip := remoteIP(nc)
		if why := l.admit(ip); why != "" {
			// Count and log before closing: whoever sees the close
			// also sees the refusal recorded.
			l.refuse(ip, why)
			_ = nc.Close() // refused: nothing to report beyond the refusal
			continue
		}
		return wrapConn(nc, func() { l.release(ip) }), nil
	}
}

func (l *Listener) admit(ip netip.Addr) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.total >= l.lim.MaxConns {
		return "maxConnections"
	}
	if l.mu.byAddr[ip] >= l.lim.MaxPerAddr {
		return "maxConnectionsPerAddress"
	}
	l.mu.total++
	l.mu.byAddr[ip]++
	return ""
}

func (l *Listener) release(ip netip.Addr) {
	l.mu.Lock()
	l.mu.total--
	if n := l.mu.byAddr[ip] - 1; n > 0 {
		l.mu.byAddr[ip] = n
	} else {
		delete(l.mu.byAddr, ip)
	}
	l.mu.Unlock()
}

// refuse counts a refusal and logs it, at most once a second (with the
// number of refusals not logged since the last line).
func (l *Listener) refuse(ip netip.Addr, cap string) {
	l.refused.Add(1)
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last < int64(time.Second) || !l.lastLog.CompareAndSwap(last, now) {
		l.quiet.Add(1)
		return
	}
	l.log.Warn(l.name+": connection refused: over "+cap, "remote", ip.String(), "maxConnections", l.lim.MaxConns,
		"maxConnectionsPerAddress", l.lim.MaxPerAddr, "refused_total", l.refused.Load(), "not_logged", l.quiet.Swap(0))
}

func remoteIP(nc net.Conn) netip.Addr {
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap()
		}
	}
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// tcpConn is an accepted TCP connection that frees its place when
// closed. It embeds *net.TCPConn, so net.Buffers still writes it with
// one writev.
type tcpConn struct {
	*net.TCPConn
	once    sync.Once
	release func()
}

func (c *tcpConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(c.release)
	return err
}

// otherConn is tcpConn for other connection types (tests).
type otherConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *otherConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

func wrapConn(nc net.Conn, release func()) net.Conn {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		return &tcpConn{TCPConn: tc, release: release}
	}
	return &otherConn{Conn: nc, release: release}
}
