// Package rmqdriver is the loadgen driver for the official RocketMQ Go client
// (github.com/apache/rocketmq-client-go/v2) against a Samsa cluster: the
// same broker, a different client, so the client's own cost is measured.
//
// Producers use SendSync (sync mode), SendAsync with a window of
// MaxInFlight (async), or SendAsync of batches of BatchSize lingering at
// most BatchLinger (batch). Consumers are the client's push consumer in
// clustering mode from the first offset, which long-polls; the client has
// no plain-pull loop, so pull mode is refused with an error.
package rmqdriver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/samsamq/samsa/loadgen"
)

// Options configure the driver.
type Options struct {
	NameServers []string // required
	// BrokerAddr is where topics are created (UPDATE_AND_CREATE_TOPIC).
	BrokerAddr string
	// LogLevel of the client's own logger; default "error".
	LogLevel string
}

// Driver is the official-client driver.
type Driver struct {
	opts Options
	seq  atomic.Int64 // instance names: the client shares state per name
}

// New returns a driver; it connects lazily.
func New(opts Options) (*Driver, error) {
	if len(opts.NameServers) == 0 {
		return nil, errors.New("rmqdriver: no name server address")
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "error"
	}
	rlog.SetLogLevel(opts.LogLevel)
	return &Driver{opts: opts}, nil
}

// Name implements loadgen.Driver.
func (d *Driver) Name() string { return "rocketmq" }

// Describe implements loadgen.Driver.
func (d *Driver) Describe() map[string]any {
	return map[string]any{"client": "github.com/apache/rocketmq-client-go/v2", "name_servers": d.opts.NameServers,
		"consumer": "push (long-poll), clustering, from first offset"}
}

// Close implements loadgen.Driver.
func (d *Driver) Close() error { return nil }

// CreateTopic creates the topic on the configured broker.
func (d *Driver) CreateTopic(ctx context.Context, topic string, queues int) error {
	if d.opts.BrokerAddr == "" {
		return errors.New("rmqdriver: CreateTopic needs a broker address")
	}
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(d.opts.NameServers)))
	if err != nil {
		return err
	}
	err = a.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(d.opts.BrokerAddr),
		admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues))
	if cerr := a.Close(); cerr != nil {
		return errors.Join(err, fmt.Errorf("rmqdriver: close the admin: %w", cerr))
	}
	return err
}

// NewProducer implements loadgen.Driver.
func (d *Driver) NewProducer(_ context.Context, topic string, opts loadgen.ProducerOptions) (loadgen.Producer, error) {
	id := d.seq.Add(1)
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver(d.opts.NameServers)),
		producer.WithGroupName(fmt.Sprintf("loadgen-producer-%d", id)),
		producer.WithInstanceName(fmt.Sprintf("loadgen-p%d", id)),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second),
	)
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("rmqdriver: start producer: %w", err)
	}
	// A batch takes one token: MaxInFlight in every mode.
	pr := &prod{p: p, topic: topic, opts: opts, window: make(loadgen.Window, max(opts.MaxInFlight, 1))}
	if opts.Mode == loadgen.SendBatch {
		pr.b = newBatcher(pr, opts.BatchSize, opts.BatchLinger)
	}
	return pr, nil
}

type prod struct {
	p      rocketmq.Producer
	topic  string
	opts   loadgen.ProducerOptions
	window loadgen.Window // async: a token per send (or batch) in flight
	wg     sync.WaitGroup
	b      *batcher
}

func (p *prod) message(key string, payload []byte) *primitive.Message {
	// The client keeps the body until the send completes; payload is the
	// loadgen's buffer, reused after done, so the message gets a copy.
	m := primitive.NewMessage(p.topic, append([]byte(nil), payload...))
	if key != "" {
		m.WithKeys([]string{key})
	}
	return m
}

func (p *prod) Send(ctx context.Context, key string, payload []byte, done func(error)) {
	switch p.opts.Mode {
	case loadgen.SendSync:
		_, err := p.p.SendSync(ctx, p.message(key, payload))
		done(err)
	case loadgen.SendBatch:
		p.b.add(ctx, p.message(key, payload), done)
	default:
		p.sendAsync(ctx, []*primitive.Message{p.message(key, payload)}, []func(error){done})
	}
}

// sendAsync sends msgs as one request and calls every done with the result.
func (p *prod) sendAsync(ctx context.Context, msgs []*primitive.Message, dones []func(error)) {
	finish := func(err error) {
		for _, d := range dones {
			d(err)
		}
	}
	if err := p.window.Acquire(ctx); err != nil {
		finish(err)
		return
	}
	p.wg.Add(1)
	err := p.p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
		defer p.wg.Done()
		p.window.Release()
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("rmqdriver: send status %d", res.Status)
		}
		finish(err)
	}, msgs...)
	if err != nil {
		p.wg.Done()
		p.window.Release()
		finish(err)
	}
}

func (p *prod) Close() error {
	if p.b != nil {
		p.b.close()
	}
	p.wg.Wait()
	return p.p.Shutdown()
}

// NewConsumer implements loadgen.Driver.
func (d *Driver) NewConsumer(_ context.Context, topic, group string, opts loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	if opts.Mode == loadgen.ConsumePull {
		return nil, errors.New("rmqdriver: the official client has no plain-pull consumer loop; use long-poll")
	}
	id := d.seq.Add(1)
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver(d.opts.NameServers)),
		consumer.WithGroupName(group),
		consumer.WithInstance(fmt.Sprintf("loadgen-c%d", id)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumeMessageBatchMaxSize(32),
		consumer.WithPullBatchSize(64),
	)
	if err != nil {
		return nil, err
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			h(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("rmqdriver: start consumer: %w", err)
	}
	return pushCloser{c}, nil
}

type pushCloser struct{ c rocketmq.PushConsumer }

func (p pushCloser) Close() error { return p.c.Shutdown() }
