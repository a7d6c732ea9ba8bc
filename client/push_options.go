package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// StartPosition is where a queue is first read when the group has no
// committed offset for it.
type StartPosition int

const (
	// StartLatest skips what is already there (RocketMQ's
	// CONSUME_FROM_LAST_OFFSET, the default).
	StartLatest StartPosition = iota
	// StartEarliest reads everything still stored.
	StartEarliest
	// StartTimestamp reads from the first message stored at or after
	// PushConsumerOptions.StartTime.
	StartTimestamp
)

func (s StartPosition) String() string {
	switch s {
	case StartLatest:
		return "latest"
	case StartEarliest:
		return "earliest"
	case StartTimestamp:
		return "timestamp"
	}
	return fmt.Sprintf("StartPosition(%d)", int(s))
}

// Handler handles one message. Returning nil marks it consumed; an error
// has it delivered again later (see PushConsumerOptions.MaxReconsumeTimes).
// ctx ends when the consumer gives the message's queue up or closes.
type Handler func(ctx context.Context, m *MessageExt) error

// PushConsumerOptions configure a PushConsumer. Zero fields take the
// defaults given.
type PushConsumerOptions struct {
	ClientOptions

	// Group is the consumer group. Required.
	Group string
	// Broadcast gives every member of the group every message, each
	// keeping its own offsets (in a local file by default). Default
	// false: clustering, each message to one member.
	Broadcast bool
	// Orderly handles each queue's messages one at a time, in queue
	// order, on one goroutine (and, in clustering mode, holds a broker
	// lock on the queue, so two members never work one queue at once).
	// Default false: up to Concurrency messages of a queue at once.
	Orderly bool
	// Start is where a queue without a committed offset is first read
	// (default StartLatest).
	Start StartPosition
	// StartTime is the time for StartTimestamp.
	StartTime time.Time
	// Allocate divides the queues among the members in clustering mode
	// (default AllocateAveraged{}, as RocketMQ's clients do).
	Allocate AllocateStrategy
	// OffsetStore keeps committed offsets (default: on the brokers in
	// clustering mode, in OffsetFile in broadcasting mode).
	OffsetStore OffsetStore
	// OffsetFile is the broadcasting mode's offset file (default
	// $HOME/.samsa_offsets/<InstanceName or "default">/<Group>.json).
	// Members of one group on one host need one each.
	OffsetFile string
	// Concurrency is the handler goroutines per queue (default 4;
	// Orderly uses 1).
	Concurrency int
	// PullBatchSize is the most messages one pull asks for (default 32).
	PullBatchSize int
	// MaxInFlight bounds a queue's messages pulled and not yet handled;
	// pulling that queue pauses at the bound (default 1000, RocketMQ's
	// pullThresholdForQueue).
	MaxInFlight int
	// MaxInFlightBytes bounds their bytes (default 100 MiB).
	MaxInFlightBytes int64
	// MaxSpan bounds the distance from a queue's lowest unhandled offset
	// to its highest pulled one, so one slow message cannot hold back a
	// huge redelivery (default 2000; Orderly ignores it).
	MaxSpan int64
	// PollWait is how long the broker holds a pull that finds nothing
	// (default 15 s, RocketMQ's brokerSuspendMaxTimeMillis).
	PollWait time.Duration
	// PullRetryDelay is the pause after a failed pull (default 1 s).
	PullRetryDelay time.Duration
	// CommitInterval is how often handled offsets are committed
	// (default 5 s); they are committed too when a queue is given up and
	// on Close.
	CommitInterval time.Duration
	// RebalanceInterval is how often the queues are divided again
	// (default 20 s); a member joining or leaving triggers it at once
	// (NOTIFY_CONSUMER_IDS_CHANGED).
	RebalanceInterval time.Duration
	// MaxReconsumeTimes is how often a failed message is redelivered: in
	// clustering mode through the broker's retry topic (CONSUMER_SEND_MSG_BACK;
	// past the limit the broker moves it to the dead-letter queue), in
	// broadcasting and ordered mode locally (then it is dropped, logged).
	// Default 16.
	MaxReconsumeTimes int
	// RetryDelay is the pause before a local redelivery (default 1 s).
	RetryDelay time.Duration
	// DrainTimeout is how long a queue being given up waits for its
	// handlers in flight before committing (default 3 s): longer means
	// fewer duplicates at the next owner.
	DrainTimeout time.Duration
}

// EnsureDefaults fills zero fields with their defaults.
func (o *PushConsumerOptions) EnsureDefaults() {
	if o.OffsetFile == "" && o.Broadcast {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		inst := o.InstanceName
		if inst == "" {
			inst = "default"
		}
		o.OffsetFile = filepath.Join(home, ".samsa_offsets", inst, o.Group+".json")
	}
	o.ClientOptions.EnsureDefaults()
	if o.Allocate == nil {
		o.Allocate = AllocateAveraged{}
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.PullBatchSize <= 0 {
		o.PullBatchSize = 32
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 1000
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = 100 << 20
	}
	if o.MaxSpan <= 0 {
		o.MaxSpan = 2000
	}
	if o.PollWait <= 0 {
		o.PollWait = 15 * time.Second
	}
	if o.PullRetryDelay <= 0 {
		o.PullRetryDelay = time.Second
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = 5 * time.Second
	}
	if o.RebalanceInterval <= 0 {
		o.RebalanceInterval = 20 * time.Second
	}
	if o.MaxReconsumeTimes <= 0 {
		o.MaxReconsumeTimes = 16
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 3 * time.Second
	}
}

// Validate reports every invalid field at once.
func (o *PushConsumerOptions) Validate() error {
	var errs []error
	if err := o.ClientOptions.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Group == "" {
		errs = append(errs, errors.New("Group: empty"))
	}
	if o.Start < StartLatest || o.Start > StartTimestamp {
		errs = append(errs, fmt.Errorf("Start: unknown %d", int(o.Start)))
	}
	if o.Start == StartTimestamp && o.StartTime.IsZero() {
		errs = append(errs, errors.New("StartTime: required with StartTimestamp"))
	}
	if o.PullBatchSize > 1024 {
		errs = append(errs, fmt.Errorf("PullBatchSize: %d above 1024", o.PullBatchSize))
	}
	return errors.Join(errs...)
}

// String renders the settings stably, for logs and result files.
func (o PushConsumerOptions) String() string {
	return fmt.Sprintf("%s group=%s broadcast=%v orderly=%v start=%s allocate=%s offset-store=%T concurrency=%d pull-batch=%d max-in-flight=%d/%dB span=%d poll-wait=%v commit=%v rebalance=%v max-reconsume=%d",
		o.ClientOptions.String(), o.Group, o.Broadcast, o.Orderly, o.Start, allocateName(o.Allocate), o.OffsetStore, o.Concurrency,
		o.PullBatchSize, o.MaxInFlight, o.MaxInFlightBytes, o.MaxSpan, o.PollWait, o.CommitInterval, o.RebalanceInterval, o.MaxReconsumeTimes)
}

func allocateName(a AllocateStrategy) string {
	if a == nil {
		return "<default>"
	}
	return a.Name()
}
