package client

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"
)

// DefaultNameServer is the name server of `samsa dev`.
const DefaultNameServer = "127.0.0.1:9876"

// ClientOptions are the settings every producer and consumer shares.
type ClientOptions struct {
	// NameServers are the name servers' host:port addresses; requests
	// go to one, moving to the next when it fails. Default
	// [DefaultNameServer].
	NameServers []string
	// InstanceName tells apart clients of one process: the client id is
	// host-ip@InstanceName, and two members of a group must differ.
	// Default "<pid>#<8 random hex digits>", unique per client.
	InstanceName string
	// RequestTimeout bounds a request whose context has no deadline
	// (default 3 s).
	RequestTimeout time.Duration
	// DialTimeout bounds connecting to a broker or name server
	// (default 3 s).
	DialTimeout time.Duration
	// JSONHeaders sends request headers as JSON rather than RocketMQ's
	// binary encoding (default false: binary, smaller and faster).
	JSONHeaders bool
	// RouteRefresh is how often routes in use are fetched again
	// (default 30 s, RocketMQ's pollNameServerInterval); a failed send
	// refreshes its topic's route at once too.
	RouteRefresh time.Duration
	// HeartbeatInterval is how often the client announces itself (and
	// a consumer its subscriptions) to every broker it uses (default 30 s).
	HeartbeatInterval time.Duration
	// Logger receives the client's events (default: discard).
	Logger *slog.Logger
	// Clock returns the time (default time.Now); tests inject theirs.
	Clock func() time.Time
	// TLS, if set, makes every connection to name servers and brokers
	// TLS (servers in tlsMode permissive or enforcing). Its ServerName
	// defaults to the host dialed; RootCAs and Certificates (for servers
	// that require a client certificate) are the caller's. Default nil:
	// plain TCP.
	TLS *tls.Config
	// Credentials, when AccessKey is set, sign every request (RocketMQ
	// 4.x ACL: AccessKey, Signature, SecurityToken ext fields) for
	// brokers and name servers that run with aclEnable=true. Default none.
	Credentials Credentials
	// SkipCRCCheck turns off the check of every received record's CRC.
	// Default false: each record is checked before it is decoded (the
	// whole-record CRC, or the body CRC of a record stored without one),
	// covering disk, broker memory and network at once; a record that
	// fails is never delivered, and its pull fails with a
	// *CorruptMessageError. While checking, the client tells brokers so
	// (heartbeats and pulls), and they may send its pulls from their
	// files without reading them. Set, brokers check each record before
	// they send it, as for RocketMQ's own clients.
	SkipCRCCheck bool
}

// Credentials are an ACL account's keys, as RocketMQ's
// primitive.Credentials. SecurityToken is optional.
type Credentials struct {
	AccessKey, SecretKey, SecurityToken string
}

// String never shows the secret.
func (c Credentials) String() string {
	if c.AccessKey == "" {
		return "none"
	}
	return c.AccessKey
}

// EnsureDefaults fills zero fields with their defaults.
func (o *ClientOptions) EnsureDefaults() {
	if len(o.NameServers) == 0 {
		o.NameServers = []string{DefaultNameServer}
	}
	if o.InstanceName == "" {
		var r [4]byte
		rand.Read(r[:])
		o.InstanceName = fmt.Sprintf("%d#%s", os.Getpid(), hex.EncodeToString(r[:]))
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 3 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.RouteRefresh <= 0 {
		o.RouteRefresh = 30 * time.Second
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
}

// Validate reports every invalid field at once.
func (o *ClientOptions) Validate() error {
	var errs []error
	if len(o.NameServers) == 0 {
		errs = append(errs, errors.New("NameServers: none"))
	}
	for _, a := range o.NameServers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("NameServers: %q: %v", a, err))
		}
	}
	if strings.ContainsAny(o.InstanceName, "@ ") {
		errs = append(errs, fmt.Errorf("InstanceName %q: must not hold '@' or spaces", o.InstanceName))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"RequestTimeout", o.RequestTimeout}, {"DialTimeout", o.DialTimeout}, {"RouteRefresh", o.RouteRefresh}, {"HeartbeatInterval", o.HeartbeatInterval}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: negative (%v)", d.name, d.v))
		}
	}
	if (o.Credentials.AccessKey == "") != (o.Credentials.SecretKey == "") {
		errs = append(errs, errors.New("Credentials: AccessKey and SecretKey go together"))
	}
	return errors.Join(errs...)
}

// String renders the settings stably, for logs and result files.
func (o ClientOptions) String() string {
	s := fmt.Sprintf("nameservers=%s instance=%s request-timeout=%v dial-timeout=%v json-headers=%v route-refresh=%v heartbeat=%v tls=%v skip-crc-check=%v",
		strings.Join(o.NameServers, ";"), o.InstanceName, o.RequestTimeout, o.DialTimeout, o.JSONHeaders, o.RouteRefresh, o.HeartbeatInterval, o.TLS != nil, o.SkipCRCCheck)
	if o.Credentials.AccessKey != "" {
		s += " access-key=" + o.Credentials.AccessKey
	}
	return s
}

// ParseNameServers splits a "host:port;host:port" list (RocketMQ's
// namesrvAddr form; commas work too).
func ParseNameServers(s string) []string {
	var out []string
	out = append(out, strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })...)
	return out
}
