package namesrv

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
)

// Options configure a Server. The zero value plus EnsureDefaults is a
// working name server on 127.0.0.1:9876.
type Options struct {
	// Listen is the TCP address to listen on. Default "127.0.0.1:9876";
	// "127.0.0.1:0" picks a free port (see Server.Addr).
	Listen string
	// Clock gives the time for broker liveness. Default SystemClock; tests
	// inject a fake one and call Server.ScanNow.
	Clock Clock
	// Logger receives connection and registration events. Default slog.Default().
	Logger *slog.Logger
	// ScanInterval is how often silent brokers are looked for. Default 10 s
	// (RocketMQ scans every 5 s; a shorter interval drops a dead broker
	// sooner at the cost of a walk over the live table).
	ScanInterval time.Duration
	// BrokerExpiry is how long a broker may go without registering before
	// it is dropped. Default 120 s (RocketMQ's; brokers register every 30 s,
	// so three registrations may be lost). A registration's own
	// heartbeatTimeoutMillis overrides it for that broker.
	BrokerExpiry time.Duration
	// MaxFrame bounds an incoming frame. Default protocol.DefaultMaxFrame (16 MiB).
	MaxFrame int
	// WriteTimeout bounds writing one response, so a client that stops
	// reading cannot hold a handler. Default 10 s.
	WriteTimeout time.Duration
	// MaxInflight bounds the requests of one connection being answered at
	// once; the connection is not read further until one finishes. Default 64.
	MaxInflight int
	// KeepRegistrationOnClose keeps a broker registered when the connection
	// it registered through closes. Default false: the registration goes
	// with the connection, as in RocketMQ (BrokerHousekeepingService), so a
	// broker that dies is dropped at once rather than after BrokerExpiry.
	// Brokers that register over short-lived connections need true.
	KeepRegistrationOnClose bool
	// MaxConns bounds the open connections (maxConnections); one more is
	// closed at once, logged and counted (Server.Refused). Default half
	// the process's file-descriptor limit, at most 65536.
	MaxConns int
	// MaxConnsPerAddr bounds the open connections from one remote IP
	// (maxConnectionsPerAddress). Default 4096 (or MaxConns if lower).
	MaxConnsPerAddr int
	// IdleTimeout closes a connection that sends nothing for this long
	// while none of its requests is being answered (RocketMQ's
	// serverChannelMaxIdleTimeSeconds). Default 120 s; brokers register
	// every 30 s and clients fetch routes every 30 s.
	IdleTimeout time.Duration
	// FrameTimeout closes a connection whose frame, once begun, is not
	// complete within it. Default 30 s.
	FrameTimeout time.Duration
	// TLS: the mode (disabled, permissive, enforcing), certificate, key,
	// client CA and client-certificate policy. Default disabled.
	TLS netx.TLSServerOptions
	// ACLEnable checks every request against the accounts file ACLFile
	// (RocketMQ 4.x plain ACL, package acl): requests must be signed by a
	// known account or come from a white-listed address; broker
	// registration, KV writes and topic deletion need an admin account; a
	// broker name stays bound to the account that registered it. Default
	// false.
	ACLEnable bool
	// ACLFile is the plain_acl.yml accounts file; required with ACLEnable
	// (the samsa namesrv command defaults it to conf/plain_acl.yml).
	// Reloaded when it changes; a change that does not parse keeps the
	// previous accounts.
	ACLFile string
	// ACLReloadInterval is how often ACLFile is looked at. Default 1 s.
	ACLReloadInterval time.Duration
}

// Defaults.
const (
	DefaultListen       = "127.0.0.1:9876"
	DefaultScanInterval = 10 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultMaxInflight  = 64
)

// EnsureDefaults fills every zero field with its default.
func (o *Options) EnsureDefaults() {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ScanInterval == 0 {
		o.ScanInterval = DefaultScanInterval
	}
	if o.BrokerExpiry == 0 {
		o.BrokerExpiry = DefaultBrokerExpiry
	}
	if o.MaxFrame == 0 {
		o.MaxFrame = protocol.DefaultMaxFrame
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.MaxInflight == 0 {
		o.MaxInflight = DefaultMaxInflight
	}
	lim := netx.Limits{MaxConns: o.MaxConns, MaxPerAddr: o.MaxConnsPerAddr}
	lim.EnsureDefaults()
	o.MaxConns, o.MaxConnsPerAddr = lim.MaxConns, lim.MaxPerAddr
	if o.IdleTimeout == 0 {
		o.IdleTimeout = netx.DefaultIdleTimeout
	}
	if o.FrameTimeout == 0 {
		o.FrameTimeout = netx.DefaultFrameTimeout
	}
	if o.TLS.Mode == "" {
		o.TLS.Mode = netx.TLSDisabled
	}
	if o.ACLReloadInterval == 0 {
		o.ACLReloadInterval = time.Second
	}
}

// Validate reports every invalid field at once.
func (o *Options) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		errs = append(errs, fmt.Errorf("namesrv: Listen %q: %v", o.Listen, err))
	}
	if o.ScanInterval < 0 {
		errs = append(errs, fmt.Errorf("namesrv: ScanInterval %v is negative", o.ScanInterval))
	}
	if o.BrokerExpiry < 0 {
		errs = append(errs, fmt.Errorf("namesrv: BrokerExpiry %v is negative", o.BrokerExpiry))
	}
	if o.MaxFrame < 0 {
		errs = append(errs, fmt.Errorf("namesrv: MaxFrame %d is negative", o.MaxFrame))
	}
	if o.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("namesrv: WriteTimeout %v is negative", o.WriteTimeout))
	}
	if o.MaxInflight < 0 {
		errs = append(errs, fmt.Errorf("namesrv: MaxInflight %d is negative", o.MaxInflight))
	}
	if o.MaxConns < 0 || o.MaxConnsPerAddr < 0 {
		errs = append(errs, fmt.Errorf("namesrv: MaxConns %d or MaxConnsPerAddr %d is negative", o.MaxConns, o.MaxConnsPerAddr))
	}
	if o.IdleTimeout < 0 || o.FrameTimeout < 0 {
		errs = append(errs, fmt.Errorf("namesrv: IdleTimeout %v or FrameTimeout %v is negative", o.IdleTimeout, o.FrameTimeout))
	}
	errs = append(errs, o.TLS.Validate("namesrv: ")...)
	if o.ACLEnable && o.ACLFile == "" {
		errs = append(errs, errors.New("namesrv: ACLEnable needs ACLFile"))
	}
	if o.ACLReloadInterval < 0 {
		errs = append(errs, fmt.Errorf("namesrv: ACLReloadInterval %v is negative", o.ACLReloadInterval))
	}
	return errors.Join(errs...)
}

// String is a stable one-line rendering (the clock and logger are left out).
func (o Options) String() string {
	return fmt.Sprintf("namesrv{listen=%s scan=%v expiry=%v maxFrame=%d writeTimeout=%v maxInflight=%d keepOnClose=%t maxConns=%d maxConnsPerAddr=%d idle=%v frameTimeout=%v tls=%s clientAuth=%s acl=%t aclFile=%s}",
		o.Listen, o.ScanInterval, o.BrokerExpiry, o.MaxFrame, o.WriteTimeout, o.MaxInflight, o.KeepRegistrationOnClose,
		o.MaxConns, o.MaxConnsPerAddr, o.IdleTimeout, o.FrameTimeout, o.TLS.Mode, o.TLS.ClientAuth, o.ACLEnable, o.ACLFile)
}
