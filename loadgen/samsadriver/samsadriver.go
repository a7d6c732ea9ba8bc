// Package samsadriver is the loadgen driver for Samsa's own Go client.
//
// Producers: sync mode is Producer.Send; async is SendAsync with the
// client's in-flight bound; batch is SendAsync with the client's batching
// (BatchSize messages or BatchLinger, per queue) turned on.
//
// Consumers in long-poll mode are the client's push consumer (clustering,
// from the earliest offset): pulls held by the broker until a message
// arrives, offsets committed in the background. Pull mode is a loop per
// queue on the pull consumer, answered at once and followed by the
// workload's sleep when empty; the members of a group in one run split the
// topic's queues between them (queue i goes to member i mod members) and
// start from the queue's first offset, so nothing produced is missed.
package samsadriver

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/loadgen"
)

// Options configure the driver.
type Options struct {
	NameServers []string // required
	// Brokers limits topic creation to these addresses (default every master).
	Brokers []string
	// LongPollWait is how long the broker may hold an empty pull (default 5 s).
	LongPollWait time.Duration
	// PullBatch is the most messages per pull (default 64).
	PullBatch int
	// Credentials sign every request (clusters with aclEnable=true).
	Credentials client.Credentials
	// TLS, if set, makes every connection TLS.
	TLS *tls.Config
}

// Driver is Samsa's client as a loadgen driver.
type Driver struct {
	opts Options
}

// New returns a driver; clients connect when producers and consumers are made.
func New(opts Options) (*Driver, error) {
	if len(opts.NameServers) == 0 {
		return nil, errors.New("samsadriver: no name server address")
	}
	if opts.LongPollWait <= 0 {
		opts.LongPollWait = 5 * time.Second
	}
	if opts.PullBatch <= 0 {
		opts.PullBatch = 64
	}
	return &Driver{opts: opts}, nil
}

// Name implements loadgen.Driver.
func (d *Driver) Name() string { return "samsa" }

// Describe implements loadgen.Driver.
func (d *Driver) Describe() map[string]any {
	return map[string]any{"client": "github.com/samsamq/samsa/client", "name_servers": d.opts.NameServers,
		"long_poll_wait": d.opts.LongPollWait.String(), "pull_batch": d.opts.PullBatch,
		"consumer": "pull consumer, a goroutine per queue, queues split among the group's members"}
}

// Close implements loadgen.Driver.
func (d *Driver) Close() error { return nil }

func (d *Driver) clientOptions() client.ClientOptions {
	return client.ClientOptions{NameServers: d.opts.NameServers, Credentials: d.opts.Credentials, TLS: d.opts.TLS}
}

// CreateTopic implements loadgen.Driver.
func (d *Driver) CreateTopic(ctx context.Context, topic string, queues int) error {
	a, err := client.NewAdmin(d.clientOptions())
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }() // Admin.Close reports nothing
	return a.CreateTopic(ctx, topic, client.TopicOptions{Queues: queues, Brokers: d.opts.Brokers})
}

// NewProducer implements loadgen.Driver.
func (d *Driver) NewProducer(_ context.Context, topic string, o loadgen.ProducerOptions) (loadgen.Producer, error) {
	po := client.ProducerOptions{ClientOptions: d.clientOptions(), Group: "loadgen-producer", SendTimeout: 10 * time.Second}
	if o.MaxInFlight > 0 {
		po.MaxInFlight = o.MaxInFlight
	}
	if o.Mode == loadgen.SendBatch {
		po.Batch = client.BatchOptions{MaxMessages: o.BatchSize, Linger: o.BatchLinger}
		if o.MaxInFlight > 0 && o.MaxInFlight < o.BatchSize {
			// the in-flight bound counts batched messages: room for a batch
			po.MaxInFlight = o.BatchSize * o.MaxInFlight
		}
	}
	p, err := client.NewProducer(po)
	if err != nil {
		return nil, err
	}
	return &producer{p: p, topic: topic, mode: o.Mode}, nil
}

type producer struct {
	p     *client.Producer
	topic string
	mode  loadgen.SendMode
}

// byReference is the body size from which the client's connection queues
// a body by reference instead of copying it (remoting's bigBody).
const byReference = 32 << 10

func (p *producer) Send(ctx context.Context, key string, payload []byte, done func(error)) {
	// loadgen reuses payload once done runs. Until then the client reads
	// the body (encoding, retries, batching) but holds it no longer,
	// except a large body queued by reference when its send timed out
	// before the write: only such bodies are copied.
	body := payload
	if len(body) >= byReference {
		body = append([]byte(nil), payload...)
	}
	m := &client.Message{Topic: p.topic, Body: body}
	if key != "" {
		m.Keys = []string{key}
		m.ShardingKey = key
	}
	if p.mode == loadgen.SendSync {
		_, err := p.p.Send(ctx, m)
		done(err)
		return
	}
	p.p.SendAsync(ctx, m, func(_ *client.SendResult, err error) { done(err) })
}

func (p *producer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.p.Flush(ctx)
	return errors.Join(err, p.p.Close())
}

// NewConsumer implements loadgen.Driver.
func (d *Driver) NewConsumer(ctx context.Context, topic, group string, o loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	if o.Mode == loadgen.ConsumeLongPoll {
		return d.newPushConsumer(ctx, topic, group, h)
	}
	pc, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: d.clientOptions(), Group: group})
	if err != nil {
		return nil, err
	}
	qs, err := pc.Queues(ctx, topic)
	if err != nil {
		return nil, errors.Join(err, pc.Close())
	}
	members := o.Members
	if members < 1 {
		members = 1
	}
	c := &consumer{pc: pc}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for i, q := range qs {
		if i%members != o.Member%members {
			continue
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.loop(runCtx, q, d.opts, o, h)
		}()
	}
	return c, nil
}

type consumer struct {
	pc     *client.PullConsumer
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// loop pulls one queue until the consumer closes.
func (c *consumer) loop(ctx context.Context, q client.MessageQueue, d Options, o loadgen.ConsumerOptions, h loadgen.Handler) {
	offset, err := c.pc.MinOffset(ctx, q)
	if err != nil {
		offset = 0
	}
	// The handler reads bodies alone: records read in place spare a
	// MessageExt per message.
	po := client.PullOptions{MaxMessages: d.PullBatch, Records: true}
	if o.Mode == loadgen.ConsumeLongPoll {
		po.Wait = d.LongPollWait
	}
	for ctx.Err() == nil {
		res, err := c.pc.Pull(ctx, q, offset, po)
		if err != nil {
			if lab.Sleep(ctx, 50*time.Millisecond) != nil {
				return
			}
			continue
		}
		for _, r := range res.Records {
			h(r.Body())
		}
		if res.NextOffset > offset || len(res.Records) > 0 {
			offset = res.NextOffset
		}
		if len(res.Records) == 0 && o.Mode == loadgen.ConsumePull {
			if lab.Sleep(ctx, o.PullInterval) != nil {
				return
			}
		}
	}
}

func (c *consumer) Close() error {
	c.cancel()
	c.wg.Wait()
	return c.pc.Close()
}

func (d *Driver) newPushConsumer(ctx context.Context, topic, group string, h loadgen.Handler) (loadgen.Consumer, error) {
	pc, err := client.NewPushConsumer(client.PushConsumerOptions{
		ClientOptions: d.clientOptions(), Group: group, Start: client.StartEarliest,
		PullBatchSize: d.opts.PullBatch, PollWait: d.opts.LongPollWait,
	}, func(_ context.Context, m *client.MessageExt) error {
		h(m.Body)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := pc.Subscribe(topic, "*"); err != nil {
		return nil, errors.Join(err, pc.Close())
	}
	if err := pc.Start(ctx); err != nil {
		return nil, errors.Join(err, pc.Close())
	}
	return pc, nil
}
