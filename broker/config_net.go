package broker

import (
	"strconv"
	"time"

	"github.com/samsamq/samsa/internal/netx"
)

// NetConfig holds the connection-level settings: caps, timeouts and TLS
// (server.go, conn.go, tls.go). It is embedded in Config, so its fields
// read as Config's. Names are RocketMQ's where RocketMQ has the setting
// (its tls.* system properties become camelCase keys here).
type NetConfig struct {
	// MaxConnections (maxConnections, ours): open connections the
	// remoting port accepts; one more is closed at once, logged (at most
	// once a second) and counted (refused_connections). Default half the
	// process's file-descriptor limit, at most 65536, leaving the other
	// half for the store. The replication port has the same cap.
	MaxConnections int
	// MaxConnectionsPerAddress (maxConnectionsPerAddress, ours): open
	// connections from one remote IP. Default 4096 (or maxConnections if
	// lower): the lab's many clients on 127.0.0.1 stay under it.
	MaxConnectionsPerAddress int
	// ServerChannelMaxIdle (serverChannelMaxIdleTimeSeconds, RocketMQ's
	// NettyServerConfig, seconds): a connection that sends nothing for
	// this long while none of its requests is in progress (a held pull
	// counts as in progress) is closed. Default 120 s. Clients heartbeat
	// every 30 s.
	ServerChannelMaxIdle time.Duration
	// FrameReadTimeout (frameReadTimeoutMillis, ours, ms): a frame begun
	// must be complete within this long, or the connection is closed.
	// Default 30 s.
	FrameReadTimeout time.Duration

	// TLSMode (tlsMode, RocketMQ's tls.server.mode): disabled (default),
	// permissive (the remoting and replication ports accept TLS and
	// plain, told apart by the first byte) or enforcing (TLS only).
	TLSMode string
	// TLSCertFile, TLSKeyFile (tlsCertFile, tlsKeyFile: RocketMQ's
	// tls.server.certPath, tls.server.keyPath): the server's PEM
	// certificate and key; required unless tlsMode is disabled.
	TLSCertFile, TLSKeyFile string
	// TLSCAFile (tlsCAFile, RocketMQ's tls.server.trustCertPath and
	// tls.client.trustCertPath): PEM CAs that sign client certificates
	// (server side) and the servers' certificates the broker dials (name
	// servers, its master). Empty: the system's CAs for the latter.
	TLSCAFile string
	// TLSClientAuth (tlsClientAuth, RocketMQ's tls.server.need.client.auth):
	// none (default), optional (a certificate given is verified) or
	// require.
	TLSClientAuth string
	// TLSEnable (tlsEnable, RocketMQ's tls.enable): the broker's own
	// connections (registration with the name servers, a slave's
	// replication link and metadata sync) use TLS. Default false.
	TLSEnable bool
	// TLSClientCertFile, TLSClientKeyFile (tlsClientCertFile,
	// tlsClientKeyFile: RocketMQ's tls.client.certPath, keyPath): the
	// certificate the broker presents when it dials with TLS, for servers
	// that require one. Default: none.
	TLSClientCertFile, TLSClientKeyFile string
	// TLSServerName (tlsServerName, ours): the name the broker checks in
	// the certificates of the servers it dials. Default: the host dialed.
	TLSServerName string
	// TLSInsecureSkipVerify (tlsInsecureSkipVerify, ours; RocketMQ's
	// tls.test.mode.enable): accept any server certificate. Tests only.
	TLSInsecureSkipVerify bool
}

// secProp is a duration given in whole seconds (or as a Go duration).
func secProp(name string, f func(c *Config) *time.Duration) property {
	return property{name: name,
		set: func(c *Config, v string) error {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				*f(c) = time.Duration(n) * time.Second
				return nil
			}
			d, err := parseMillis(v)
			*f(c) = d
			return err
		},
		get: func(c *Config) string { return strconv.FormatInt(int64(f(c).Seconds()), 10) }}
}

// netProps are the broker.conf keys of NetConfig.
var netProps = []property{
	intProp("maxConnections", func(c *Config) *int { return &c.MaxConnections }),
	intProp("maxConnectionsPerAddress", func(c *Config) *int { return &c.MaxConnectionsPerAddress }),
	secProp("serverChannelMaxIdleTimeSeconds", func(c *Config) *time.Duration { return &c.ServerChannelMaxIdle }),
	msProp("frameReadTimeoutMillis", func(c *Config) *time.Duration { return &c.FrameReadTimeout }),
	strProp("tlsMode", func(c *Config) *string { return &c.TLSMode }),
	strProp("tlsCertFile", func(c *Config) *string { return &c.TLSCertFile }),
	strProp("tlsKeyFile", func(c *Config) *string { return &c.TLSKeyFile }),
	strProp("tlsCAFile", func(c *Config) *string { return &c.TLSCAFile }),
	strProp("tlsClientAuth", func(c *Config) *string { return &c.TLSClientAuth }),
	boolProp("tlsEnable", func(c *Config) *bool { return &c.TLSEnable }),
	strProp("tlsClientCertFile", func(c *Config) *string { return &c.TLSClientCertFile }),
	strProp("tlsClientKeyFile", func(c *Config) *string { return &c.TLSClientKeyFile }),
	strProp("tlsServerName", func(c *Config) *string { return &c.TLSServerName }),
	boolProp("tlsInsecureSkipVerify", func(c *Config) *bool { return &c.TLSInsecureSkipVerify }),
}

// ensureNetDefaults fills the connection settings.
func (c *Config) ensureNetDefaults() {
	lim := netx.Limits{MaxConns: c.MaxConnections, MaxPerAddr: c.MaxConnectionsPerAddress}
	lim.EnsureDefaults()
	c.MaxConnections, c.MaxConnectionsPerAddress = lim.MaxConns, lim.MaxPerAddr
	setDur(&c.ServerChannelMaxIdle, netx.DefaultIdleTimeout)
	setDur(&c.FrameReadTimeout, netx.DefaultFrameTimeout)
	if c.TLSMode == "" {
		c.TLSMode = netx.TLSDisabled
	}
	if c.TLSClientAuth == "" {
		c.TLSClientAuth = netx.ClientAuthNone
	}
}

// validateNet checks the connection settings.
func (c *Config) validateNet(bad func(format string, a ...any)) {
	if c.MaxConnections < 1 {
		bad("maxConnections %d must be positive", c.MaxConnections)
	}
	if c.MaxConnectionsPerAddress < 1 {
		bad("maxConnectionsPerAddress %d must be positive", c.MaxConnectionsPerAddress)
	}
	if c.ServerChannelMaxIdle <= 0 {
		bad("serverChannelMaxIdleTimeSeconds %v must be positive", c.ServerChannelMaxIdle)
	}
	if c.FrameReadTimeout <= 0 {
		bad("frameReadTimeoutMillis %v must be positive", c.FrameReadTimeout)
	}
	for _, err := range c.tlsServerOptions().Validate("") {
		bad("%v", err)
	}
	if (c.TLSClientCertFile == "") != (c.TLSClientKeyFile == "") {
		bad("tlsClientCertFile and tlsClientKeyFile go together")
	}
}

func (c *Config) tlsServerOptions() netx.TLSServerOptions {
	return netx.TLSServerOptions{Mode: c.TLSMode, CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile, CAFile: c.TLSCAFile,
		ClientAuth: c.TLSClientAuth}
}

func (c *Config) tlsClientOptions() netx.TLSClientOptions {
	return netx.TLSClientOptions{Enable: c.TLSEnable, CAFile: c.TLSCAFile, CertFile: c.TLSClientCertFile,
		KeyFile: c.TLSClientKeyFile, ServerName: c.TLSServerName, InsecureSkipVerify: c.TLSInsecureSkipVerify}
}
