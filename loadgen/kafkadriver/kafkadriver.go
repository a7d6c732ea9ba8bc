// Package kafkadriver is the loadgen driver for Kafka-API clusters, on
// franz-go (github.com/twmb/franz-go: kgo for producing and consuming, kadm
// for topics). It drives a live cluster at Options.Brokers, with SASL
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and TLS when asked; it starts no
// server (its tests run franz-go's in-process fake cluster, kfake).
//
// Settings are a cell's loadgen.Kafka (acks, idempotence, compression,
// linger, batch bytes, offset commits, replication factor, topic configs),
// with Kafka's own defaults; Describe records them for the result file.
//
// Mapping: a topic of Q queues is a Kafka topic of Q partitions, created
// through kadm with the settings' replication factor and configs (one that
// already exists with Q partitions is used as it is; with another count,
// CreateTopic says so and fails). Each loadgen producer is a kgo client
// of its own (its own connections and idempotent producer id). A record's
// key is the message's key when it has one: the partitioner is franz-go's
// default, murmur2 of the key as Kafka's Java client, keyless records
// sticking to a partition per batch. Sync mode is ProduceSync, one record
// at a time; async and batch modes Produce through a window of
// MaxInFlight records (batch: at least BatchSize), the client's buffer set
// to the same bound; batch mode lingers the workload's batch linger
// unless the settings give one. Up to 5 produce requests are in flight per
// broker, idempotent or not (Kafka's max.in.flight.requests.per.connection
// default; franz-go's is 1 without idempotence, which would make acks 0
// and 1 look slower than all).
//
// A consumer group is a Kafka consumer group (franz-go's default balancer,
// cooperative-sticky): the coordinator spreads the partitions over the
// run's members, so ConsumerOptions.Member is not used. A group new to a
// topic starts at its earliest offset (auto.offset.reset=earliest), so
// nothing produced while the group forms is missed. Long-poll mode polls
// with the broker holding each fetch until data arrives (franz-go's 5 s
// fetch max wait); pull mode takes what the client has fetched without
// waiting, its fetches answered within 10 ms (franz-go's least max wait),
// and sleeps PullInterval after an empty poll. Offsets commit as the
// settings say: auto (every AutoCommitInterval and on leaving the group)
// or manual (after each poll's records are handled, synchronously, with
// rebalances held off meanwhile, and once more on Close).
//
// End-to-end latency needs nothing here: loadgen stamps the send time in
// the payload's first bytes, which travel as the record's value.
//
// Concurrency: Send and the consumers' handlers run from many goroutines
// at once; promises are franz-go's (one goroutine per partition's
// batches), and call done exactly once, on Close too.
package kafkadriver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsamq/samsa/loadgen"
)

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// connectTimeout bounds New's first exchange with the cluster.
const connectTimeout = 15 * time.Second

// produceInflight is the produce requests allowed in flight per broker
// (Kafka's max.in.flight.requests.per.connection default).
const produceInflight = 5

// Options configure the driver.
type Options struct {
	// Brokers are the seed brokers, host:port (a host alone is port
	// 9092); required.
	Brokers []string
	// Settings are the producers', consumers' and topics' settings; New
	// fills their defaults (loadgen.Kafka.EnsureDefaults).
	Settings loadgen.Kafka
	// SASL, if its Mechanism is set, authenticates every connection.
	SASL SASL
	// TLS, if set, makes every connection TLS.
	TLS *tls.Config
	// ClientID is every client's client.id; default "samsa-loadgen".
	ClientID string
}

// SASL is a SASL login.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (any case);
	// empty: no SASL.
	Mechanism string
	User      string
	Password  string
}

// Driver is the Kafka driver.
type Driver struct {
	opts    Options
	base    []kgo.Opt // seeds, client id, SASL, TLS: every client's
	adm     *kadm.Client
	version string // the brokers' Kafka version, as kadm guesses it
}

// New checks opts (every problem at once) and connects to the cluster,
// so that an unreachable cluster or a refused login fails here.
func New(opts Options) (*Driver, error) {
	if opts.ClientID == "" {
		opts.ClientID = "samsa-loadgen"
	}
	opts.Settings.EnsureDefaults()
	mech, err := opts.validate()
	if err != nil {
		return nil, err
	}
	d := &Driver{opts: opts}
	d.base = []kgo.Opt{kgo.SeedBrokers(opts.Brokers...), kgo.ClientID(opts.ClientID)}
	if mech != nil {
		d.base = append(d.base, kgo.SASL(mech))
	}
	if opts.TLS != nil {
		d.base = append(d.base, kgo.DialTLSConfig(opts.TLS))
	}
	cl, err := kgo.NewClient(d.base...)
	if err != nil {
		return nil, fmt.Errorf("kafkadriver: %w", err)
	}
	d.adm = kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	vs, err := d.adm.ApiVersions(ctx)
	if err != nil {
		d.adm.Close()
		return nil, fmt.Errorf("kafkadriver: brokers %s: %w", strings.Join(opts.Brokers, ","), err)
	}
	var guesses []string
	for _, v := range vs.Sorted() {
		if v.Err == nil {
			guesses = append(guesses, v.VersionGuess())
		}
	}
	slices.Sort(guesses)
	d.version = strings.Join(slices.Compact(guesses), ", ")
	return d, nil
}

// validate reports every bad option at once and returns the SASL
// mechanism (nil without SASL).
func (o *Options) validate() (sasl.Mechanism, error) {
	var errs []error
	if len(o.Brokers) == 0 {
		errs = append(errs, errors.New("no brokers (host:port,...)"))
	}
	for _, b := range o.Brokers {
		if strings.TrimSpace(b) == "" {
			errs = append(errs, errors.New("an empty broker address"))
		}
	}
	errs = append(errs, o.Settings.Validate())
	var mech sasl.Mechanism
	s := o.SASL
	switch strings.ToUpper(s.Mechanism) {
	case "":
		if s.User != "" || s.Password != "" {
			errs = append(errs, errors.New("sasl: a user or password without a mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"))
		}
	case SASLPlain:
		mech = plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()
	case SASLScramSHA256:
		mech = scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()
	case SASLScramSHA512:
		mech = scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()
	default:
		errs = append(errs, fmt.Errorf("sasl mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism))
	}
	if s.Mechanism != "" && (s.User == "" || s.Password == "") {
		errs = append(errs, fmt.Errorf("sasl %s: needs a user and a password", s.Mechanism))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("kafkadriver: %w", err)
	}
	return mech, nil
}

// Name implements loadgen.Driver.
func (d *Driver) Name() string { return "kafka" }

// Describe implements loadgen.Driver: the client, the cluster as far as
// it tells, and every setting (never the SASL user or password).
func (d *Driver) Describe() map[string]any {
	k := &d.opts.Settings
	m := map[string]any{
		"client": "github.com/twmb/franz-go " + franzVersion(), "brokers": d.opts.Brokers,
		"server_version": d.version, "settings": k.String(),
		"tls": d.opts.TLS != nil, "sasl": "none",
		"produce_requests_in_flight_per_broker": produceInflight,
		"partitioner":                           "franz-go's default: murmur2 of the key (as Kafka's Java client); keyless records sticky per batch",
		"consumer":                              "a consumer group (cooperative-sticky), earliest offset for a new group; long-poll: fetches held up to 5s, pull: polls without waiting, fetch max wait 10ms",
	}
	if k.Linger == "" {
		m["linger"] = "the workload's batch linger in batch mode, 0 otherwise"
	}
	if d.opts.SASL.Mechanism != "" {
		m["sasl"] = strings.ToUpper(d.opts.SASL.Mechanism)
	}
	return m
}

// franzVersion is the franz-go module's version in this binary.
func franzVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/twmb/franz-go" {
				return m.Version
			}
		}
	}
	return "(version not in the build info: a test binary)"
}

// CreateTopic makes topic with queues partitions, the settings'
// replication factor and topic configs. A topic that already exists with
// that many partitions is used as it is; one with another count is an
// error (the run would not measure what its workload says).
func (d *Driver) CreateTopic(ctx context.Context, topic string, queues int) error {
	if queues < 1 {
		return fmt.Errorf("kafkadriver: topic %s: %d partitions", topic, queues)
	}
	k := &d.opts.Settings
	var configs map[string]*string
	if len(k.TopicConfigs) > 0 {
		configs = make(map[string]*string, len(k.TopicConfigs))
		for name, v := range k.TopicConfigs {
			configs[name] = kadm.StringPtr(v)
		}
	}
	resp, err := d.adm.CreateTopic(ctx, int32(queues), int16(k.ReplicationFactor), configs, topic)
	if err == nil {
		return nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		if resp.ErrMessage != "" { // the broker's own words
			err = fmt.Errorf("%w (%s)", err, resp.ErrMessage)
		}
		return fmt.Errorf("kafkadriver: create topic %s (%d partitions, replication factor %d): %w", topic, queues, k.ReplicationFactor, err)
	}
	tds, err := d.adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("kafkadriver: topic %s exists; describing it: %w", topic, err)
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		return fmt.Errorf("kafkadriver: topic %s exists but cannot be described: %v", topic, td.Err)
	}
	if n := len(td.Partitions); n != queues {
		return fmt.Errorf("kafkadriver: topic %s exists with %d partitions, the workload wants %d: delete it or change the queue count", topic, n, queues)
	}
	return nil
}

// Close implements loadgen.Driver: producers and consumers close
// themselves; this closes the admin client.
func (d *Driver) Close() error {
	d.adm.Close()
	return nil
}

// client is a new kgo client with every client's options and opts.
func (d *Driver) client(opts ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append(slices.Clip(d.base), opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkadriver: %w", err)
	}
	return cl, nil
}
