package proxy

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/client"
)

// Options configure a Server. Zero fields take the defaults given.
type Options struct {
	// NameServers are the cluster's name servers. Required.
	NameServers []string
	// Listen is the gRPC address (default "127.0.0.1:8081", RocketMQ's
	// proxy port; ":0" or "host:0" for a free one).
	Listen string
	// TLS, if set, serves gRPC over TLS; nil: plain.
	TLS *tls.Config
	// ACL, if set, checks every call's authorization header and rights
	// against the accounts file; nil: no access control.
	ACL *acl.Store
	// Credentials are the proxy's own account toward brokers and name
	// servers that run with ACL (default none).
	Credentials client.Credentials
	// BrokerTLS, if set, makes the proxy's connections to the cluster TLS.
	BrokerTLS *tls.Config
	// MaxMessageSize refuses larger bodies (default 4 MiB, the brokers'
	// maxMessageSize); it also bounds a request (ten times this).
	MaxMessageSize int
	// MaxReceives bounds the receives held at once, long polls included
	// (default 1024); more answer TOO_MANY_REQUESTS.
	MaxReceives int
	// MaxStreams bounds the concurrent streams of one connection
	// (default 256).
	MaxStreams uint32
	// MaxSessions bounds telemetry sessions (default 10000).
	MaxSessions int
	// MaxTransactions bounds the transactions begun and not ended
	// (default 100000); more answer TOO_MANY_REQUESTS.
	MaxTransactions int
	// TransactionKeep is how long an open transaction is held for its
	// producer's EndTransaction before, with MaxTransactions reached, it
	// is let go to the brokers' check-backs (default 1 h).
	TransactionKeep time.Duration
	// MaxDeliveryAttempts is what consumers are told in their settings:
	// after this many attempts a push consumer forwards a message to the
	// DLQ (default 17: the first delivery and RocketMQ's 16 retries).
	MaxDeliveryAttempts int
	// DefaultInvisible is how long a push consumer's messages (received
	// with auto_renew) stay invisible (default 60 s); the proxy does not
	// renew it, so a message processed for longer is delivered again.
	DefaultInvisible time.Duration
	// LongPollMax caps a receive's long polling (default 30 s).
	LongPollMax time.Duration
	// ProducerGroup is the group the proxy's producer registers with
	// (default "SAMSA_PROXY"); brokers check transactions back with it.
	ProducerGroup string
	// Logger receives the proxy's events (default slog.Default()).
	Logger *slog.Logger
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:8081"
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = 4 << 20
	}
	if o.MaxReceives == 0 {
		o.MaxReceives = 1024
	}
	if o.MaxStreams == 0 {
		o.MaxStreams = 256
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = 10000
	}
	if o.MaxTransactions == 0 {
		o.MaxTransactions = 100000
	}
	if o.TransactionKeep == 0 {
		o.TransactionKeep = time.Hour
	}
	if o.MaxDeliveryAttempts == 0 {
		o.MaxDeliveryAttempts = 17
	}
	if o.DefaultInvisible == 0 {
		o.DefaultInvisible = time.Minute
	}
	if o.LongPollMax == 0 {
		o.LongPollMax = 30 * time.Second
	}
	if o.ProducerGroup == "" {
		o.ProducerGroup = "SAMSA_PROXY"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports every invalid field at once.
func (o *Options) Validate() error {
	var errs []error
	if len(o.NameServers) == 0 {
		errs = append(errs, errors.New("NameServers: empty"))
	}
	if o.MaxMessageSize < 0 || o.MaxReceives < 0 || o.MaxSessions < 0 || o.MaxTransactions < 0 || o.MaxDeliveryAttempts < 0 {
		errs = append(errs, errors.New("a Max field is negative"))
	}
	if o.DefaultInvisible < 0 {
		errs = append(errs, fmt.Errorf("DefaultInvisible: %v is negative", o.DefaultInvisible))
	}
	if o.LongPollMax < 0 {
		errs = append(errs, fmt.Errorf("LongPollMax: %v is negative", o.LongPollMax))
	}
	return errors.Join(errs...)
}
