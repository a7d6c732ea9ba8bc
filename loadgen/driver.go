package loadgen

import (
	"context"
	"time"
)

// Driver adapts one messaging system to a workload.
type Driver interface {
	// Name identifies the driver in results ("samsa", "rocketmq", "nats",
	// "redis", "rabbitmq").
	Name() string
	// CreateTopic makes a topic with the given number of queues (a driver
	// whose system has no queues maps them to its own partitioning or
	// ignores them and says so in Describe).
	CreateTopic(ctx context.Context, topic string, queues int) error
	// NewProducer returns a producer for topic.
	NewProducer(ctx context.Context, topic string, opts ProducerOptions) (Producer, error)
	// NewConsumer subscribes group to topic; handler is called for every
	// message received, possibly from several goroutines at once.
	NewConsumer(ctx context.Context, topic, group string, opts ConsumerOptions, handler Handler) (Consumer, error)
	// Describe returns the driver's settings for the result file.
	Describe() map[string]any
	// Close releases the driver (and any server it started).
	Close() error
}

// Handler receives one message's payload. It must not keep payload.
type Handler func(payload []byte)

// ProducerOptions say how a producer sends.
type ProducerOptions struct {
	Mode        SendMode
	BatchSize   int           // batch mode: messages per batch
	BatchLinger time.Duration // batch mode: how long a batch may wait to fill
	MaxInFlight int           // async/batch: unacknowledged sends allowed
}

// ConsumerOptions say how a consumer receives.
type ConsumerOptions struct {
	Mode         ConsumeMode
	PullInterval time.Duration // pull mode: the wait after an empty pull
	// Member is this consumer's index among the Members consumers of its
	// group in this run; a driver without server-side group balancing
	// uses them to split the queues.
	Member, Members int
}

// Producer sends messages.
type Producer interface {
	// Send sends payload with key (may be empty). done is called exactly
	// once with the outcome; in sync mode before Send returns, in async and
	// batch modes whenever the acknowledgement arrives. Send may block for
	// flow control (MaxInFlight).
	Send(ctx context.Context, key string, payload []byte, done func(error))
	// Close flushes pending sends (their done is called) and releases.
	Close() error
}

// Consumer is a running subscription.
type Consumer interface {
	Close() error
}
