package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/client"
)

// TxHandler processes a batch of messages inside tx, the transaction
// that also commits their offset: its writes to the database count only
// if the offset moves with them. It must not commit or roll back tx. An
// error rolls the batch back; it is read again after Options.Retry.
type TxHandler func(ctx context.Context, tx *sql.Tx, msgs []*client.MessageExt) error

// Options configure an ExactlyOnce consumer.
type Options struct {
	// Consumer reads the queues. Required; Run does not close it.
	Consumer *client.PullConsumer
	// Store keeps the offsets, in the database the handler writes to.
	// Required.
	Store *Store
	// Topic is the topic consumed. Required.
	Topic string
	// Queues are the queues consumed. Default: every readable queue of
	// Topic when Run starts (one member per group; share queues between
	// members by giving each its own list).
	Queues []client.MessageQueue
	// Batch is the most messages per transaction. Default 32: fewer
	// commits, but a larger batch to redo after a failure.
	Batch int
	// Wait is how long the broker holds a pull that finds nothing.
	// Default 5 s; a new message ends the wait at once.
	Wait time.Duration
	// Retry is the pause after a failed pull or transaction. Default
	// 200 ms.
	Retry time.Duration
	// TxOptions are the batch transactions' options (isolation level).
	// Default nil: the database's default.
	TxOptions *sql.TxOptions
	// Logger reports failed batches. Default slog.Default().
	Logger *slog.Logger
}

// ExactlyOnce consumes a topic into a database with exactly-once
// processing (the package doc's "Exactly once").
type ExactlyOnce struct {
	o        Options
	h        TxHandler
	batches  atomic.Int64
	messages atomic.Int64
	failures atomic.Int64
}

// NewExactlyOnce checks o and returns a consumer that runs h for each
// batch.
func NewExactlyOnce(o Options, h TxHandler) (*ExactlyOnce, error) {
	var errs []error
	if o.Consumer == nil {
		errs = append(errs, errors.New("Consumer: nil"))
	}
	if o.Store == nil {
		errs = append(errs, errors.New("Store: nil"))
	}
	if o.Topic == "" {
		errs = append(errs, errors.New("Topic: empty"))
	}
	if h == nil {
		errs = append(errs, errors.New("handler: nil"))
	}
	if o.Batch < 0 || o.Batch > 1024 {
		errs = append(errs, fmt.Errorf("Batch: %d, want 1 to 1024", o.Batch))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("sqlstore: exactly-once options: %w", errors.Join(errs...))
	}
	if o.Batch == 0 {
		o.Batch = 32
	}
	if o.Wait <= 0 {
		o.Wait = 5 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &ExactlyOnce{o: o, h: h}, nil
}

// Stats counts what the consumer committed: batches and messages, and
// the batches that failed (rolled back, to be read again).
type Stats struct{ Batches, Messages, Failures int64 }

// Stats returns the counts so far.
func (c *ExactlyOnce) Stats() Stats {
	return Stats{c.batches.Load(), c.messages.Load(), c.failures.Load()}
}

// Run consumes every queue (one goroutine each) until ctx ends; then it
// returns nil. It returns an error only when the queues cannot be listed.
func (c *ExactlyOnce) Run(ctx context.Context) error {
	qs := c.o.Queues
	if len(qs) == 0 {
		var err error
		if qs, err = c.o.Consumer.Queues(ctx, c.o.Topic); err != nil {
			return fmt.Errorf("sqlstore: queues of %s: %w", c.o.Topic, err)
		}
	}
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.runQueue(ctx, q)
		}()
	}
	wg.Wait()
	return nil
}

// runQueue consumes q until ctx ends.
func (c *ExactlyOnce) runQueue(ctx context.Context, q client.MessageQueue) {
	var off int64
	known, exists := false, false
	for ctx.Err() == nil {
		if !known {
			var err error
			if off, exists, err = c.start(ctx, q); err != nil {
				c.fail(ctx, q, err)
				continue
			}
			known = true
		}
		res, err := c.o.Consumer.Pull(ctx, q, off, client.PullOptions{MaxMessages: c.o.Batch, Wait: c.o.Wait})
		if err != nil {
			c.fail(ctx, q, err)
			continue
		}
		if res.Status == client.PullNoNewMessage || res.NextOffset == off {
			continue
		}
		if err := c.commit(ctx, q, off, exists, res); err != nil {
			known = false // read the stored offset again: it may have moved
			c.fail(ctx, q, err)
			continue
		}
		off, exists = res.NextOffset, true
	}
}

// start returns where q is read from: its stored offset, else its first.
func (c *ExactlyOnce) start(ctx context.Context, q client.MessageQueue) (int64, bool, error) {
	off, err := c.o.Store.Read(ctx, q)
	if err == nil {
		return off, true, nil
	}
	if !errors.Is(err, client.ErrNoOffset) {
		return 0, false, err
	}
	off, err = c.o.Consumer.MinOffset(ctx, q)
	return off, false, err
}

// commit runs one batch: the handler and the offset's move, in one
// transaction.
func (c *ExactlyOnce) commit(ctx context.Context, q client.MessageQueue, off int64, exists bool, res *client.PullResult) error {
	tx, err := c.o.Store.db.BeginTx(ctx, c.o.TxOptions)
	if err != nil {
		return err
	}
	if len(res.Messages) > 0 {
		if err := c.h(ctx, tx, res.Messages); err != nil {
			return errors.Join(err, tx.Rollback())
		}
	}
	if err := c.o.Store.Advance(ctx, tx, q, off, exists, res.NextOffset); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	c.batches.Add(1)
	c.messages.Add(int64(len(res.Messages)))
	return nil
}

// fail reports err and pauses (unless ctx ended).
func (c *ExactlyOnce) fail(ctx context.Context, q client.MessageQueue, err error) {
	if ctx.Err() != nil {
		return
	}
	c.failures.Add(1)
	c.o.Logger.Warn("sqlstore: batch not committed; it is read again", "queue", q.String(), "err", err)
	t := time.NewTimer(c.o.Retry)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
