package linkdelay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"time"
)

// Method is how a link's delay is made. Results print it beside the
// delay: the two are not the same measurement (see the package doc).
type Method string

const (
	// Netem: the cell runs in its own network namespace whose loopback
	// delays the HA port's segments in the kernel.
	Netem Method = "netem"
	// ProxyMethod: the cell runs on this machine's loopback and slaves
	// reach the master's HA port through a delaying Proxy.
	ProxyMethod Method = "proxy"
)

// Choose is the method this machine supports best: Netem when Available,
// else ProxyMethod with the reason netem was not usable.
func Choose() (m Method, why string) {
	if ok, reason := Available(); !ok {
		return ProxyMethod, reason
	}
	return Netem, ""
}

// Link is one experiment cell's master→slave HA link with a one-way
// delay, made by either Method; the rest of the cell is the same for both:
// start every process with Command, give the slaves DialAddr as the
// master's HA address.
type Link struct {
	Method Method
	OneWay time.Duration
	// DialAddr is the address a slave connects to for the master's HA
	// port, through the delay.
	DialAddr string

	ns    *Namespace // Netem
	proxy *Proxy     // ProxyMethod
}

// OpenLink makes a link with oneWay added each way to the master's HA
// listener at haAddr (a loopback host:port chosen before the master
// starts). With Netem a fresh namespace delays haAddr's port (none with
// oneWay 0); with ProxyMethod a Proxy on 127.0.0.1 forwards to haAddr
// (also with 0, so the control pays the same hop).
func OpenLink(m Method, oneWay time.Duration, haAddr string) (*Link, error) {
	host, portStr, err := net.SplitHostPort(haAddr)
	if err != nil {
		return nil, fmt.Errorf("linkdelay: HA address %q: %w", haAddr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("linkdelay: HA address %q: want a port", haAddr)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("linkdelay: HA address %q: the lab delays loopback only", haAddr)
	}
	l := &Link{Method: m, OneWay: oneWay}
	switch m {
	case Netem:
		if l.ns, err = NewNamespace(""); err != nil {
			return nil, err
		}
		if oneWay > 0 {
			if err := l.ns.DelayPorts(oneWay, port); err != nil {
				return nil, errors.Join(err, l.ns.Close())
			}
		}
		l.DialAddr = haAddr
	case ProxyMethod:
		if l.proxy, err = NewProxy("127.0.0.1:0", haAddr, oneWay); err != nil {
			return nil, err
		}
		l.DialAddr = l.proxy.Addr()
	default:
		return nil, fmt.Errorf("linkdelay: method %q: want %s or %s", m, Netem, ProxyMethod)
	}
	return l, nil
}

// Command is exec.CommandContext for one of the cell's processes: inside
// the link's namespace with Netem, on this machine's loopback with
// ProxyMethod. The child gets SIGKILL if this process dies.
func (l *Link) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if l.ns != nil {
		return l.ns.Command(ctx, name, args...)
	}
	return killedWithParent(exec.CommandContext(ctx, name, args...))
}

// String is how results label the link: "2ms one-way (netem)".
func (l *Link) String() string {
	return fmt.Sprintf("%v one-way (%s)", l.OneWay, l.Method)
}

// Close removes the namespace or stops the proxy.
func (l *Link) Close() error {
	if l.ns != nil {
		return l.ns.Close()
	}
	return l.proxy.Close()
}
