package loadgen

import (
	"context"
	"hash/fnv"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Driver adapts one messaging system to a workload.
type Driver interface {
	// Name identifies the driver in results ("samsa", "rocketmq", "nats",
	// "redis", "rabbitmq", "kafka").
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

// QueueCounts remembers each topic's queue count for a driver whose
// server has no notion of one (NATS subjects, Redis streams):
// CreateTopic records it, producers and consumers read it. Safe for
// concurrent use.
type QueueCounts struct{ m sync.Map } // topic -> int

// Set records topic's queue count.
func (c *QueueCounts) Set(topic string, queues int) { c.m.Store(topic, queues) }

// Get is topic's queue count, 1 for a topic never set.
func (c *QueueCounts) Get(topic string) int {
	if v, ok := c.m.Load(topic); ok {
		return v.(int)
	}
	return 1
}

// QueueOf picks which of n queues a message goes to, for a driver that
// spreads messages itself: by the FNV-1a hash of its key, so that one
// key's messages keep one queue and their order, or round robin over
// next when it has no key.
func QueueOf(key string, n int, next *atomic.Uint64) int {
	if key == "" {
		return int(next.Add(1) % uint64(n))
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key)) // a hash's Write never fails
	return int(h.Sum32() % uint32(n))
}

// Window bounds a driver's asynchronous sends in flight: a token per send
// (or batch) not yet answered.
type Window chan struct{}

// NewWindow is the window of a producer with opts: BatchSize tokens in
// batch mode, one in sync mode, MaxInFlight in async mode; at least one.
func NewWindow(opts ProducerOptions) Window {
	n := opts.MaxInFlight
	switch opts.Mode {
	case SendBatch:
		n = opts.BatchSize
	case SendSync:
		n = 1
	}
	return make(Window, max(n, 1))
}

// Acquire takes a token, waiting for one; it returns ctx's error should
// ctx end first.
func (w Window) Acquire(ctx context.Context) error {
	select {
	case w <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release returns a token.
func (w Window) Release() { <-w }

// ServerDir is where a driver's own server keeps its data: dir when
// given, else a new directory in the temp dir named prefix and a random
// suffix (temp true: the driver removes it when it closes).
func ServerDir(dir, prefix string) (_ string, temp bool, _ error) {
	if dir != "" {
		return dir, false, nil
	}
	d, err := os.MkdirTemp("", prefix)
	return d, err == nil, err
}
