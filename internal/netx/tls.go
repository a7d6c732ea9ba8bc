package netx

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// TLS server modes (RocketMQ's tls.server.mode).
const (
	TLSDisabled   = "disabled"   // plain only
	TLSPermissive = "permissive" // TLS and plain on one port
	TLSEnforcing  = "enforcing"  // TLS only
)

// Client certificate policies (RocketMQ's tls.server.need.client.auth).
const (
	ClientAuthNone     = "none"
	ClientAuthOptional = "optional"
	ClientAuthRequire  = "require"
)

// TLSServerOptions are a server's TLS settings, as configured.
type TLSServerOptions struct {
	// Mode is TLSDisabled (default), TLSPermissive or TLSEnforcing.
	Mode string
	// CertFile and KeyFile: the server's PEM certificate (chain) and key.
	CertFile, KeyFile string
	// CAFile: PEM CAs that sign client certificates (needed unless
	// ClientAuth is none).
	CAFile string
	// ClientAuth: none (default), optional (verified when given) or
	// require.
	ClientAuth string
}

// Enabled reports whether the mode is not disabled.
func (o TLSServerOptions) Enabled() bool { return o.Mode != "" && o.Mode != TLSDisabled }

// Validate checks the mode, the policy and that the files needed are
// named (Config reads them).
func (o TLSServerOptions) Validate(prefix string) []error {
	var errs []error
	switch o.Mode {
	case "", TLSDisabled, TLSPermissive, TLSEnforcing:
	default:
		errs = append(errs, fmt.Errorf("%stlsMode %q is not disabled, permissive or enforcing", prefix, o.Mode))
	}
	switch o.ClientAuth {
	case "", ClientAuthNone, ClientAuthOptional, ClientAuthRequire:
	default:
		errs = append(errs, fmt.Errorf("%stlsClientAuth %q is not none, optional or require", prefix, o.ClientAuth))
	}
	if o.Enabled() {
		if o.CertFile == "" || o.KeyFile == "" {
			errs = append(errs, fmt.Errorf("%stlsMode %s needs tlsCertFile and tlsKeyFile", prefix, o.Mode))
		}
		if o.ClientAuth != "" && o.ClientAuth != ClientAuthNone && o.CAFile == "" {
			errs = append(errs, fmt.Errorf("%stlsClientAuth %s needs tlsCAFile", prefix, o.ClientAuth))
		}
	}
	return errs
}

// Config loads the certificate, key and CAs into a server tls.Config
// (TLS 1.2 at least); nil when the mode is disabled.
func (o TLSServerOptions) Config() (*tls.Config, error) {
	if !o.Enabled() {
		return nil, nil
	}
	if errs := o.Validate(""); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: certificate %s, key %s: %w", o.CertFile, o.KeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch o.ClientAuth {
	case ClientAuthOptional:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequire:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if o.CAFile != "" {
		pool, err := LoadCAs(o.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
	}
	return cfg, nil
}

// TLSClientOptions are a client's TLS settings, as configured.
type TLSClientOptions struct {
	// Enable turns TLS on.
	Enable bool
	// CAFile: PEM CAs that sign the servers' certificates (default: the
	// system's).
	CAFile string
	// CertFile and KeyFile: a client certificate, for servers that ask.
	CertFile, KeyFile string
	// ServerName checks the servers' certificates for this name instead
	// of the host dialed.
	ServerName string
	// InsecureSkipVerify accepts any server certificate (tests only).
	InsecureSkipVerify bool
}

// Config builds the tls.Config; nil when not enabled.
func (o TLSClientOptions) Config() (*tls.Config, error) {
	if !o.Enable {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName, InsecureSkipVerify: o.InsecureSkipVerify}
	if o.CAFile != "" {
		pool, err := LoadCAs(o.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, fmt.Errorf("tls: a client certificate needs both its file and its key file")
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client certificate %s, key %s: %w", o.CertFile, o.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// LoadCAs reads a PEM file of CA certificates.
func LoadCAs(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: CA file %s holds no PEM certificate", file)
	}
	return pool, nil
}

// ClientConn dials addr (TLS when cfg is set; its ServerName defaults to
// addr's host). The handshake is done before it returns.
func ClientConn(d *net.Dialer, addr string, cfg *tls.Config) (net.Conn, error) {
	nc, err := d.Dial("tcp", addr)
	if err != nil || cfg == nil {
		return nc, err
	}
	return ClientHandshake(nc, addr, cfg, d.Timeout)
}

// ClientHandshake runs a TLS client handshake over nc within timeout
// (none when <= 0), closing nc when it fails.
func ClientHandshake(nc net.Conn, addr string, cfg *tls.Config, timeout time.Duration) (net.Conn, error) {
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg = cfg.Clone()
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if timeout > 0 {
		_ = nc.SetDeadline(time.Now().Add(timeout))
	}
	if err := tc.Handshake(); err != nil {
		_ = nc.Close() // the handshake's error is the one reported
		return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return tc, nil
}

// TLSServer applies a server's TLS mode to accepted connections.
type TLSServer struct {
	Mode   string
	Config *tls.Config
}

// NewTLSServer loads o; a disabled mode gives a server that passes
// connections through.
func NewTLSServer(o TLSServerOptions) (*TLSServer, error) {
	cfg, err := o.Config()
	if err != nil {
		return nil, err
	}
	mode := o.Mode
	if mode == "" {
		mode = TLSDisabled
	}
	return &TLSServer{Mode: mode, Config: cfg}, nil
}

// ErrPlainRefused: a plain connection to an enforcing server.
var ErrPlainRefused = errors.New("netx: plain connection refused (TLS enforcing)")

// Server returns nc as the server should speak on it: nc itself when TLS
// is disabled, or in permissive mode when the peer's first byte is not a
// TLS handshake record (0x16), else a TLS server connection (its
// handshake runs at the first read). In permissive mode it waits up to
// timeout for the first byte without consuming it; stop ends the wait.
// The TLS layer's handshake is bounded by the deadlines its reader sets.
func (s *TLSServer) Server(nc net.Conn, timeout time.Duration, stop <-chan struct{}) (conn net.Conn, isTLS bool, err error) {
	if s == nil || s.Config == nil || s.Mode == TLSDisabled {
		return nc, false, nil
	}
	if s.Mode == TLSEnforcing {
		return tls.Server(nc, s.Config), true, nil
	}
	first, pc, err := peekFirst(nc, timeout, stop)
	if err != nil {
		return nil, false, err
	}
	if first == 0x16 {
		return tls.Server(pc, s.Config), true, nil
	}
	return pc, false, nil
}
