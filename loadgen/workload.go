package loadgen

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// SendMode is how producers send.
type SendMode string

// Send modes.
const (
	SendSync  SendMode = "sync"  // one message at a time, wait for each ack
	SendAsync SendMode = "async" // up to MaxInFlight outstanding
	SendBatch SendMode = "batch" // batches of BatchSize, lingering BatchLinger
)

// ConsumeMode is how consumers fetch.
type ConsumeMode string

// Consume modes.
const (
	ConsumeLongPoll ConsumeMode = "long-poll" // the broker holds an empty pull until data arrives
	ConsumePull     ConsumeMode = "pull"      // plain pulls, sleeping PullInterval after an empty one
)

// Workload is what a run does. Zero fields take the defaults documented on
// each; call EnsureDefaults then Validate.
type Workload struct {
	// Name labels the run in results. Default "adhoc".
	Name string `json:"name"`
	// Topics is how many topics; default 1. Topic names are
	// TopicPrefix-<i>.
	Topics      int    `json:"topics"`
	TopicPrefix string `json:"topic_prefix"` // default "loadgen"
	// QueuesPerTopic is the queue (partition) count of each; default 8.
	QueuesPerTopic int `json:"queues_per_topic"`
	// MessageSize is the payload size in bytes; default 1024; at least 16
	// (the payload carries its send time and identity in its first 16
	// bytes: delivery.go).
	MessageSize int `json:"message_size"`
	// PayloadFile, if set, supplies the payload bytes (cut or repeated to
	// MessageSize; the first 16 bytes are overwritten with the header).
	PayloadFile string `json:"payload_file,omitempty"`
	// Producers is the number of producer goroutines per topic; default 1.
	Producers int `json:"producers"`
	// Consumers is the number of consumers per group per topic; default 1.
	// 0 with NoConsumers runs produce-only.
	Consumers   int  `json:"consumers"`
	NoConsumers bool `json:"no_consumers,omitempty"`
	// ConsumerGroups per topic; default 1. Every group gets every message.
	ConsumerGroups int `json:"consumer_groups"`
	// Rate is the total target produce rate in msg/s across all producers;
	// 0 means as fast as it goes (closed loop).
	Rate float64 `json:"rate"`
	// Warmup is discarded from the figures; default 5s.
	Warmup time.Duration `json:"warmup"`
	// Duration is the measured part; default 30s.
	Duration time.Duration `json:"duration"`
	// SendMode: sync (default), async or batch.
	SendMode    SendMode      `json:"send_mode"`
	BatchSize   int           `json:"batch_size,omitempty"`    // default 32
	BatchLinger time.Duration `json:"batch_linger,omitempty"`  // default 1ms
	MaxInFlight int           `json:"max_in_flight,omitempty"` // default 1024
	// ConsumeMode: long-poll (default) or pull with PullInterval (default 100ms).
	ConsumeMode  ConsumeMode   `json:"consume_mode"`
	PullInterval time.Duration `json:"pull_interval,omitempty"`
	// KeyCount, when > 0, gives messages keys cycling over this many
	// distinct values (ordered/hashed routing); 0 sends no keys.
	// RandomKeys picks each message's key at random among them instead.
	KeyCount   int  `json:"key_count,omitempty"`
	RandomKeys bool `json:"random_keys,omitempty"`
	// RandomPayloads, when > 0, sends payloads drawn from a pool of this
	// many, each of whose first RandomBytesRatio × MessageSize bytes are
	// random and the rest zero (compressible as much as the ratio says),
	// in place of PayloadFile's or the default letters.
	RandomPayloads   int     `json:"random_payloads,omitempty"`
	RandomBytesRatio float64 `json:"random_bytes_ratio,omitempty"`
	// BacklogBytes, when > 0, adds a backlog phase to the measured window
	// (OpenMessaging Benchmark's consumerBacklogSizeGB): the consumers
	// stop taking messages when the window opens, the producers go on at
	// Rate until the groups' backlog (groups × acknowledged − received,
	// times MessageSize) reaches BacklogBytes, then the consumers resume
	// and drain it while production goes on; once the backlog is down to
	// (1 − BacklogDrainRatio) of its size (at least 1,000 messages) the
	// window runs Duration more. BacklogTimeout (default 30m) bounds the
	// build and the drain, each.
	BacklogBytes      int64         `json:"backlog_bytes,omitempty"`
	BacklogDrainRatio float64       `json:"backlog_drain_ratio,omitempty"`
	BacklogTimeout    time.Duration `json:"backlog_timeout,omitempty"`
	// ReportInterval is how often a progress line prints; default 5s.
	ReportInterval time.Duration `json:"report_interval"`
	// Drain is how long, after producing stops, to wait for consumers to
	// catch up before the end-to-end figures close; default 10s.
	Drain time.Duration `json:"drain"`
	// SetupTimeout, if set, bounds creating the topics (and their
	// queues): a system that cannot make them in time fails the run with
	// how far it got, rather than holding the lab for hours; 0: no bound.
	SetupTimeout time.Duration `json:"setup_timeout,omitempty"`
}

// EnsureDefaults fills zero fields with their defaults.
func (w *Workload) EnsureDefaults() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	defd := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	if w.Name == "" {
		w.Name = "adhoc"
	}
	if w.TopicPrefix == "" {
		w.TopicPrefix = "loadgen"
	}
	def(&w.Topics, 1)
	def(&w.QueuesPerTopic, 8)
	def(&w.MessageSize, 1024)
	def(&w.Producers, 1)
	if !w.NoConsumers {
		def(&w.Consumers, 1)
	}
	def(&w.ConsumerGroups, 1)
	defd(&w.Warmup, 5*time.Second)
	defd(&w.Duration, 30*time.Second)
	if w.SendMode == "" {
		w.SendMode = SendSync
	}
	def(&w.BatchSize, 32)
	defd(&w.BatchLinger, time.Millisecond)
	def(&w.MaxInFlight, 1024)
	if w.ConsumeMode == "" {
		w.ConsumeMode = ConsumeLongPoll
	}
	defd(&w.PullInterval, 100*time.Millisecond)
	defd(&w.ReportInterval, 5*time.Second)
	defd(&w.Drain, 10*time.Second)
	if w.BacklogBytes > 0 {
		if w.BacklogDrainRatio == 0 {
			w.BacklogDrainRatio = 1
		}
		defd(&w.BacklogTimeout, 30*time.Minute)
	}
}

// Validate reports every problem at once.
func (w *Workload) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if w.Topics < 1 {
		bad("topics must be >= 1, got %d", w.Topics)
	}
	if w.QueuesPerTopic < 1 {
		bad("queues per topic must be >= 1, got %d", w.QueuesPerTopic)
	}
	if w.MessageSize < headerSize {
		bad("message size must be >= %d bytes (it carries the send time and the message's identity), got %d", headerSize, w.MessageSize)
	}
	if w.Producers < 1 || w.Topics*w.Producers > maxProducers {
		bad("producers must be >= 1 and topics × producers <= %d, got %d × %d", maxProducers, w.Topics, w.Producers)
	}
	if w.Consumers < 0 || (!w.NoConsumers && w.Consumers < 1) {
		bad("consumers must be >= 1 (or set no consumers), got %d", w.Consumers)
	}
	if w.SetupTimeout < 0 {
		bad("setup timeout must be >= 0, got %v", w.SetupTimeout)
	}
	if w.Rate < 0 {
		bad("rate must be >= 0, got %v", w.Rate)
	}
	if w.Duration <= 0 || w.Warmup < 0 {
		bad("duration must be > 0 and warm-up >= 0, got %v and %v", w.Duration, w.Warmup)
	}
	switch w.SendMode {
	case SendSync, SendAsync, SendBatch:
	default:
		bad("send mode must be sync, async or batch, got %q", w.SendMode)
	}
	switch w.ConsumeMode {
	case ConsumeLongPoll, ConsumePull:
	default:
		bad("consume mode must be long-poll or pull, got %q", w.ConsumeMode)
	}
	if w.PayloadFile != "" {
		if _, err := os.Stat(w.PayloadFile); err != nil {
			bad("payload file: %v", err)
		}
	}
	if w.KeyCount < 0 || (w.RandomKeys && w.KeyCount == 0) {
		bad("keys must be >= 0 (and > 0 for random keys), got %d", w.KeyCount)
	}
	if w.RandomPayloads < 0 || w.RandomPayloads > 1<<20 || w.RandomBytesRatio < 0 || w.RandomBytesRatio > 1 {
		bad("random payloads must be 0 to 2^20 with a random-bytes ratio of 0 to 1, got %d and %g", w.RandomPayloads, w.RandomBytesRatio)
	}
	if w.RandomPayloads > 0 && w.PayloadFile != "" {
		bad("random payloads and a payload file exclude each other")
	}
	if w.BacklogBytes < 0 || w.BacklogDrainRatio < 0 || w.BacklogDrainRatio > 1 || w.BacklogTimeout < 0 {
		bad("backlog must be >= 0 bytes with a drain ratio of 0 to 1 and a timeout >= 0, got %d, %g and %v",
			w.BacklogBytes, w.BacklogDrainRatio, w.BacklogTimeout)
	}
	if w.BacklogBytes > 0 && (w.NoConsumers || w.Rate <= 0) {
		bad("a backlog phase needs consumers and a rate (as fast as it goes would never let them drain it)")
	}
	return errors.Join(errs...)
}

// String is a stable one-line form of every option, for result files.
func (w *Workload) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "name=%s topics=%d queues=%d size=%d producers=%d consumers=%d groups=%d rate=%g warmup=%s duration=%s send=%s",
		w.Name, w.Topics, w.QueuesPerTopic, w.MessageSize, w.Producers, w.Consumers, w.ConsumerGroups, w.Rate, w.Warmup, w.Duration, w.SendMode)
	if w.SendMode == SendBatch {
		fmt.Fprintf(&b, " batch=%d linger=%s", w.BatchSize, w.BatchLinger)
	}
	if w.SendMode != SendSync {
		fmt.Fprintf(&b, " inflight=%d", w.MaxInFlight)
	}
	fmt.Fprintf(&b, " consume=%s", w.ConsumeMode)
	if w.ConsumeMode == ConsumePull {
		fmt.Fprintf(&b, " pull_interval=%s", w.PullInterval)
	}
	if w.KeyCount > 0 {
		fmt.Fprintf(&b, " keys=%d", w.KeyCount)
		if w.RandomKeys {
			b.WriteString(" random_keys")
		}
	}
	if w.RandomPayloads > 0 {
		fmt.Fprintf(&b, " random_payloads=%d random_ratio=%g", w.RandomPayloads, w.RandomBytesRatio)
	}
	if w.BacklogBytes > 0 {
		fmt.Fprintf(&b, " backlog=%d drain_ratio=%g backlog_timeout=%s", w.BacklogBytes, w.BacklogDrainRatio, w.BacklogTimeout)
	}
	if w.PayloadFile != "" {
		fmt.Fprintf(&b, " payload=%s", w.PayloadFile)
	}
	if w.SetupTimeout > 0 {
		fmt.Fprintf(&b, " setup_timeout=%s", w.SetupTimeout)
	}
	return b.String()
}

// topicName is the i-th topic of the workload.
func (w *Workload) topicName(i int) string { return fmt.Sprintf("%s-%d", w.TopicPrefix, i) }
