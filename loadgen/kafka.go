package loadgen

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Kafka is a kafka cell's client and topic settings (Cluster.Kafka, "kafka"
// in an experiment file's cluster; the driver is loadgen/kafkadriver). They
// are what a Kafka user sets on a producer, a consumer and a topic; each
// default is Apache Kafka's own unless its comment says otherwise. Where the
// cluster is and how to log in to it (brokers, SASL, TLS) come from the
// command line, never from an experiment file: results record these
// settings, not credentials.
type Kafka struct {
	// Acks is the producer's acks: "0" (no answer: done once written to
	// the socket), "1" (the leader wrote it) or "all" (every in-sync
	// replica has it; default).
	Acks string `json:"acks,omitempty"`
	// Idempotent is enable.idempotence. Default: on with acks all, off
	// otherwise (Kafka 3's rule); on with acks 0 or 1 is an error, as in
	// Kafka.
	Idempotent *bool `json:"idempotent,omitempty"`
	// Compression is the producer's compression.type: none (default),
	// gzip, snappy, lz4 or zstd.
	Compression string `json:"compression,omitempty"`
	// Linger is linger.ms as a duration ("5ms"). Default: the workload's
	// batch linger in batch send mode, 0 in sync and async modes (a
	// record goes as soon as the partition has no request waiting). Set,
	// it applies in every mode: a sync send then waits it out.
	Linger string `json:"linger,omitempty"`
	// MaxBatchBytes bounds one partition's record batch (franz-go's
	// ProducerBatchMaxBytes, Kafka's batch.size up to max.message.bytes);
	// 0: franz-go's default, 1,000,012 bytes. A record larger than it
	// fails its send.
	MaxBatchBytes int `json:"max_batch_bytes,omitempty"`
	// Commit is how consumer groups commit offsets: "auto" (default:
	// every AutoCommitInterval, and on leaving the group) or "manual"
	// (after every poll's records are handled, synchronously, with
	// rebalances held off while they are: commitSync after each poll).
	Commit string `json:"commit,omitempty"`
	// AutoCommitInterval is auto.commit.interval.ms as a duration;
	// default 5s.
	AutoCommitInterval string `json:"auto_commit_interval,omitempty"`
	// ReplicationFactor of the topics the run creates; 0 (default) or -1:
	// the brokers' default.replication.factor.
	ReplicationFactor int `json:"replication_factor,omitempty"`
	// TopicConfigs are set on the topics the run creates
	// ("min.insync.replicas": "2"); a topic that already exists keeps its
	// own.
	TopicConfigs map[string]string `json:"topic_configs,omitempty"`
}

// Kafka acks and commit settings.
const (
	KafkaAcksNone   = "0"
	KafkaAcksLeader = "1"
	KafkaAcksAll    = "all"

	KafkaCommitAuto   = "auto"
	KafkaCommitManual = "manual"
)

// KafkaCompressions are the codecs Kafka.Compression may name.
var KafkaCompressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// EnsureDefaults fills the zero fields with their defaults. Call it
// before Validate: the idempotence default follows the acks.
func (k *Kafka) EnsureDefaults() {
	if k.Acks == "" {
		k.Acks = KafkaAcksAll
	}
	if k.Acks == "-1" { // Kafka's own spelling of all
		k.Acks = KafkaAcksAll
	}
	if k.Idempotent == nil {
		on := k.Acks == KafkaAcksAll
		k.Idempotent = &on
	}
	if k.Compression == "" {
		k.Compression = "none"
	}
	if k.Commit == "" {
		k.Commit = KafkaCommitAuto
	}
	if k.AutoCommitInterval == "" {
		k.AutoCommitInterval = "5s"
	}
	if k.ReplicationFactor == 0 {
		k.ReplicationFactor = -1
	}
}

// Validate reports every bad setting at once.
func (k *Kafka) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("kafka "+format, a...)) }
	switch k.Acks {
	case KafkaAcksNone, KafkaAcksLeader, KafkaAcksAll:
		if k.Idempotent != nil && *k.Idempotent && k.Acks != KafkaAcksAll {
			bad("idempotent: needs acks all, got acks %s (Kafka refuses enable.idempotence with acks 0 or 1)", k.Acks)
		}
	default:
		bad("acks %q: want 0, 1 or all", k.Acks)
	}
	if !slices.Contains(KafkaCompressions, k.Compression) {
		bad("compression %q: want %s", k.Compression, strings.Join(KafkaCompressions, ", "))
	}
	if k.Linger != "" {
		if d, err := time.ParseDuration(k.Linger); err != nil || d < 0 {
			bad("linger %q: want a duration >= 0 (\"5ms\")", k.Linger)
		}
	}
	if k.MaxBatchBytes < 0 || k.MaxBatchBytes > 1<<30 {
		bad("max_batch_bytes %d: want 0 (franz-go's default) to 1 GiB", k.MaxBatchBytes)
	}
	switch k.Commit {
	case KafkaCommitAuto, KafkaCommitManual:
	default:
		bad("commit %q: want auto or manual", k.Commit)
	}
	if d, err := time.ParseDuration(k.AutoCommitInterval); err != nil || d <= 0 {
		bad("auto_commit_interval %q: want a duration > 0 (\"5s\")", k.AutoCommitInterval)
	}
	if k.ReplicationFactor < -1 || k.ReplicationFactor == 0 || k.ReplicationFactor > 1<<15-1 {
		bad("replication_factor %d: want -1 (the brokers' default) or 1 and up", k.ReplicationFactor)
	}
	for name := range k.TopicConfigs {
		if strings.TrimSpace(name) == "" {
			bad("topic_configs: an empty name")
		}
	}
	return errors.Join(errs...)
}

// LingerFor is the producer's linger for send mode (Validate checked
// Linger): Linger when set, else batchLinger in batch mode, else 0.
func (k *Kafka) LingerFor(mode SendMode, batchLinger time.Duration) time.Duration {
	if k.Linger != "" {
		d, _ := time.ParseDuration(k.Linger)
		return d
	}
	if mode == SendBatch {
		return batchLinger
	}
	return 0
}

// AutoCommitEvery is AutoCommitInterval parsed (Validate checked it).
func (k *Kafka) AutoCommitEvery() time.Duration {
	d, _ := time.ParseDuration(k.AutoCommitInterval)
	return d
}

// String is a stable one-line form of every setting, for result files
// and the run's first line.
func (k *Kafka) String() string {
	var b strings.Builder
	idem := "default"
	if k.Idempotent != nil {
		idem = fmt.Sprint(*k.Idempotent)
	}
	fmt.Fprintf(&b, "acks=%s idempotent=%s compression=%s", k.Acks, idem, k.Compression)
	if k.Linger != "" {
		fmt.Fprintf(&b, " linger=%s", k.Linger)
	}
	if k.MaxBatchBytes > 0 {
		fmt.Fprintf(&b, " max_batch_bytes=%d", k.MaxBatchBytes)
	}
	fmt.Fprintf(&b, " commit=%s", k.Commit)
	if k.Commit == KafkaCommitAuto {
		fmt.Fprintf(&b, " auto_commit_interval=%s", k.AutoCommitInterval)
	}
	fmt.Fprintf(&b, " replication_factor=%d", k.ReplicationFactor)
	for _, name := range slices.Sorted(maps.Keys(k.TopicConfigs)) {
		fmt.Fprintf(&b, " %s=%s", name, k.TopicConfigs[name])
	}
	return b.String()
}

// isZero reports whether no Kafka setting is given.
func (k *Kafka) isZero() bool {
	return k.Acks == "" && k.Idempotent == nil && k.Compression == "" && k.Linger == "" && k.MaxBatchBytes == 0 &&
		k.Commit == "" && k.AutoCommitInterval == "" && k.ReplicationFactor == 0 && len(k.TopicConfigs) == 0
}

// EnsureKafka fills a kafka cell's Kafka defaults and checks them; a cell
// of another driver must set none.
func (c *Cluster) EnsureKafka(driver string) error {
	if driver != "kafka" {
		if !c.Kafka.isZero() {
			return fmt.Errorf("kafka settings given to the %s driver (they are the kafka driver's)", driver)
		}
		return nil
	}
	c.Kafka.EnsureDefaults()
	return c.Kafka.Validate()
}
