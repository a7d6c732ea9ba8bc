package client

import (
	"errors"
	"fmt"
	"time"
)

// ProducerOptions configure a Producer. Zero fields take the defaults
// given; call EnsureDefaults and Validate, or let NewProducer do it.
type ProducerOptions struct {
	ClientOptions

	// Group is the producer group (default "DEFAULT_PRODUCER").
	Group string
	// SendTimeout bounds a send whose context has no deadline, all its
	// attempts together (default 3 s, RocketMQ's sendMsgTimeout).
	SendTimeout time.Duration
	// Retries is how many more brokers a failed send tries: connection
	// failures and RocketMQ's retriable answers (busy, no permission,
	// unknown topic, ...). Keyed messages retry on the same queue, to
	// keep their order. Default 2; negative for none.
	Retries int
	// Balancer chooses each message's queue (default &RoundRobin{}).
	Balancer Balancer
	// DisableFaultAvoidance turns off avoiding, for a while, a broker
	// that just failed or answered slowly (default false: avoid, with
	// RocketMQ's latency table).
	DisableFaultAvoidance bool
	// MaxBodySize rejects larger bodies before sending (default 4 MiB,
	// RocketMQ's maxMessageSize).
	MaxBodySize int
	// CompressOver compresses (zlib) bodies of at least this many bytes
	// when sent alone (default 0: never; RocketMQ's producers use 4 KiB).
	// Consumers inflate them.
	CompressOver int
	// Batch gathers asynchronous sends into SEND_BATCH_MESSAGE requests
	// (default off).
	Batch BatchOptions
	// AutoCreateTopic sends to a topic the name servers do not know
	// through the brokers that create topics on first use (those routing
	// TBW102, when their autoCreateTopicEnable is on), as RocketMQ's
	// producers do. Default false: such a send fails with ErrNoRoute, so a
	// misspelt topic is not created.
	AutoCreateTopic bool
	// AutoCreateQueues is the queues per broker of an auto-created topic
	// (default 4, RocketMQ's defaultTopicQueueNums).
	AutoCreateQueues int
	// MaxInFlight bounds asynchronous sends not yet answered (batched
	// messages included); SendAsync waits for room (default 10000).
	MaxInFlight int
}

// BatchOptions make SendAsync gather messages per queue and send them
// together: fewer requests, more throughput, a little latency.
type BatchOptions struct {
	// MaxMessages per batch; 0 or 1 turns batching off (the default).
	MaxMessages int
	// MaxBytes per batch body (default 1 MiB; RocketMQ brokers take up
	// to 4 MiB).
	MaxBytes int
	// Linger is how long a batch waits for more messages after its
	// first (default 5 ms). A batch goes as soon as it is full.
	Linger time.Duration
}

// Enabled reports whether batching is on.
func (b BatchOptions) Enabled() bool { return b.MaxMessages > 1 }

// EnsureDefaults fills zero fields with their defaults.
func (o *ProducerOptions) EnsureDefaults() {
	o.ClientOptions.EnsureDefaults()
	if o.Group == "" {
		o.Group = "DEFAULT_PRODUCER"
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 3 * time.Second
	}
	if o.Retries == 0 {
		o.Retries = 2
	}
	if o.Balancer == nil {
		o.Balancer = &RoundRobin{}
	}
	if o.MaxBodySize <= 0 {
		o.MaxBodySize = 4 << 20
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 10000
	}
	if o.AutoCreateQueues <= 0 {
		o.AutoCreateQueues = 4
	}
	if o.Batch.Enabled() {
		if o.Batch.MaxBytes <= 0 {
			o.Batch.MaxBytes = 1 << 20
		}
		if o.Batch.Linger == 0 {
			o.Batch.Linger = 5 * time.Millisecond
		}
	}
}

// retries is the number of extra attempts (Retries, negative meaning 0).
func (o *ProducerOptions) retries() int { return max(o.Retries, 0) }

// Validate reports every invalid field at once.
func (o *ProducerOptions) Validate() error {
	var errs []error
	if err := o.ClientOptions.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Group == "" {
		errs = append(errs, errors.New("Group: empty"))
	}
	if o.Balancer == nil {
		errs = append(errs, errors.New("Balancer: nil"))
	}
	if o.CompressOver < 0 {
		errs = append(errs, fmt.Errorf("CompressOver: negative (%d)", o.CompressOver))
	}
	if o.Batch.MaxMessages < 0 || o.Batch.MaxBytes < 0 || o.Batch.Linger < 0 {
		errs = append(errs, fmt.Errorf("Batch: negative field (%+v)", o.Batch))
	}
	if o.Batch.Enabled() && o.Batch.MaxBytes > 0 && o.Batch.MaxBytes > o.MaxBodySize && o.MaxBodySize > 0 {
		errs = append(errs, fmt.Errorf("Batch.MaxBytes %d exceeds MaxBodySize %d", o.Batch.MaxBytes, o.MaxBodySize))
	}
	return errors.Join(errs...)
}

// String renders the settings stably, for logs and result files.
func (o ProducerOptions) String() string {
	return fmt.Sprintf("%s group=%s send-timeout=%v retries=%d balancer=%T fault-avoidance=%v max-body=%d compress-over=%d batch=%d/%dB/%v max-in-flight=%d auto-create=%v/%d",
		o.ClientOptions.String(), o.Group, o.SendTimeout, o.Retries, o.Balancer, !o.DisableFaultAvoidance, o.MaxBodySize,
		o.CompressOver, o.Batch.MaxMessages, o.Batch.MaxBytes, o.Batch.Linger, o.MaxInFlight, o.AutoCreateTopic, o.AutoCreateQueues)
}
