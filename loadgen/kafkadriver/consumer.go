package kafkadriver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/loadgen"
)

// Consumer timings.
const (
	pullFetchWait      = 10 * time.Millisecond // pull mode's fetch max wait, franz-go's least
	errorPause         = 50 * time.Millisecond // after a poll that brought only errors
	closeCommitTimeout = 10 * time.Second      // a manual-commit consumer's last commit
)

// NewConsumer implements loadgen.Driver: a member of the Kafka consumer
// group group, on a kgo client of its own. Member and Members are not
// used: the group's coordinator assigns the partitions.
func (d *Driver) NewConsumer(_ context.Context, topic, group string, o loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	k := &d.opts.Settings
	manual := k.Commit == loadgen.KafkaCommitManual
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if manual {
		opts = append(opts, kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())
	} else {
		opts = append(opts, kgo.AutoCommitInterval(k.AutoCommitEvery()))
	}
	pull := o.Mode == loadgen.ConsumePull
	if pull {
		opts = append(opts, kgo.FetchMaxWait(pullFetchWait))
	}
	cl, err := d.client(opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{cl: cl, manual: manual, cancel: cancel, done: make(chan struct{})}
	go c.loop(ctx, pull, o.PullInterval, h)
	return c, nil
}

// consumer is one group member. Its loop goroutine owns the polling (and,
// with manual commits, the commits) until Close cancels it.
type consumer struct {
	cl     *kgo.Client
	manual bool
	cancel context.CancelFunc
	done   chan struct{} // closed when loop returns
	once   sync.Once
	err    error // Close's outcome
}

// noWait is PollFetches's "return what is buffered, at once" context:
// franz-go documents a nil context so (a cancelled one returns nothing).
var noWait context.Context

// loop polls, hands every record's value to h and, with manual commits,
// commits what it handled before it allows a rebalance.
func (c *consumer) loop(ctx context.Context, pull bool, interval time.Duration, h loadgen.Handler) {
	defer close(c.done)
	pollCtx := ctx
	if pull {
		pollCtx = noWait
	}
	for ctx.Err() == nil {
		fs := c.cl.PollFetches(pollCtx)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			h(r.Value)
			n++
		})
		if c.manual {
			if n > 0 {
				// A failed commit (the group rebalancing, the
				// coordinator moving) leaves the offsets to the next
				// commit; what is read again counts as duplicates.
				_ = c.cl.CommitUncommittedOffsets(ctx)
			}
			c.cl.AllowRebalance()
		}
		var pause time.Duration
		switch {
		case n == 0 && pull:
			pause = interval
		case n == 0 && len(fs.Errors()) > 0:
			pause = errorPause // an error that repeats does not spin
		}
		if pause > 0 && lab.Sleep(ctx, pause) != nil {
			return
		}
	}
}

// Close implements loadgen.Consumer: it stops the loop, commits what was
// handled (manual commits; auto commits commit on leaving the group) and
// leaves the group.
func (c *consumer) Close() error {
	c.once.Do(func() {
		c.cancel()
		<-c.done
		if c.manual {
			ctx, cancel := context.WithTimeout(context.Background(), closeCommitTimeout)
			if err := c.cl.CommitUncommittedOffsets(ctx); err != nil {
				c.err = fmt.Errorf("kafkadriver: commit on close: %w", err)
			}
			cancel()
		}
		c.cl.CloseAllowingRebalance()
	})
	return c.err
}
