package rabbitdriver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	samqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/message"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/samsamq/samsa/loadgen"
)

// The native stream protocol (the rabbitmq_stream plugin): Protocol
// "stream" with stream queues. A topic's queues are streams "<topic>.<q>"
// (declared over the stream protocol; no exchange: the stream protocol
// publishes to a stream by name); a loadgen producer holds one stream
// producer per queue, which aggregates sends into publish frames by
// itself and confirms each message once the stream has written it.
// Consumers read from the first offset; every group reads every stream,
// member m of M the streams q with q mod M = m.
//
// The client runs as RabbitMQ's own stream benchmark (stream-perf-test)
// runs its Java client by default: one producer or consumer per
// connection, publish frames of up to 100 messages sent as soon as the
// producer's queue runs dry (dynamic batching), no sub-entry batching,
// 10 initial credits and a credit per chunk, and the platform's socket
// buffers. The last one is not the Go client's default: it asks for 8 KiB
// SO_RCVBUF and SO_SNDBUF, which pins the receive window (about 14 KiB)
// below one loopback segment (64 KiB); RabbitMQ then waits on the window
// almost all the time it sends (ss: rwnd_limited 98% on the consumers'
// connections) and a consumer at 10k msg/s over 8 streams falls seconds
// behind while both processes idle. Autotuned buffers deliver it all.

// stream-perf-test's defaults, which the client's match but for the
// socket buffers (see above).
const (
	streamBatchSize      = 100 // messages per publish frame, at most
	streamSubEntrySize   = 1   // messages per entry: no sub-entry batching
	streamInitialCredits = 10  // chunks a consumer may have in flight
)

// streamEnvOptions are the environment's: the platform's socket buffers
// (0: the client leaves SO_RCVBUF and SO_SNDBUF alone).
func streamEnvOptions(port int) *stream.EnvironmentOptions {
	return stream.NewEnvironmentOptions().
		SetHost("127.0.0.1").SetPort(port).SetUser("guest").SetPassword("guest").
		SetReadBuffer(0).SetWriteBuffer(0)
}

func (d *Driver) streamEnv() (*stream.Environment, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.env != nil {
		return d.mu.env, nil
	}
	env, err := stream.NewEnvironment(streamEnvOptions(d.streamPort))
	if err != nil {
		return nil, fmt.Errorf("rabbitdriver: stream protocol: %w", err)
	}
	d.mu.env = env
	return env, nil
}

func (d *Driver) createStreams(ctx context.Context, topic string, queues int) error {
	env, err := d.streamEnv()
	if err != nil {
		return err
	}
	for q := 0; q < queues; q++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("rabbitdriver: %d of %d streams declared: %w", q, queues, err)
		}
		err := env.DeclareStream(queueName(topic, q), &stream.StreamOptions{})
		if err != nil && !errors.Is(err, stream.StreamAlreadyExists) {
			return fmt.Errorf("rabbitdriver: stream %s: %w", queueName(topic, q), err)
		}
	}
	return nil
}

func (d *Driver) newStreamProducer(topic string, opts loadgen.ProducerOptions) (loadgen.Producer, error) {
	env, err := d.streamEnv()
	if err != nil {
		return nil, err
	}
	p := &streamProducer{window: loadgen.NewWindow(opts), sync: opts.Mode == loadgen.SendSync}
	p.mu.pending = map[message.StreamMessage]func(error){}
	for q := 0; q < d.queueCount(topic); q++ {
		sp, err := env.NewProducer(queueName(topic, q), stream.NewProducerOptions().
			SetBatchSize(streamBatchSize).SetSubEntrySize(streamSubEntrySize))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("rabbitdriver: stream producer %s: %w", queueName(topic, q), err), p.Close())
		}
		p.producers = append(p.producers, sp)
		confirms := sp.NotifyPublishConfirmation()
		p.wg.Add(1)
		go p.confirmLoop(confirms)
	}
	return p, nil
}

type streamProducer struct {
	producers []*stream.Producer
	next      atomic.Uint64
	window    loadgen.Window
	sync      bool
	wg        sync.WaitGroup // confirm loops
	mu        struct {
		sync.Mutex
		pending map[message.StreamMessage]func(error)
	}
}

// confirmLoop answers each confirmed (or failed) message's done; it runs
// until its producer closes the channel.
func (p *streamProducer) confirmLoop(confirms stream.ChannelPublishConfirm) {
	defer p.wg.Done()
	for batch := range confirms {
		for _, cs := range batch {
			p.mu.Lock()
			done, ok := p.mu.pending[cs.GetMessage()]
			delete(p.mu.pending, cs.GetMessage())
			p.mu.Unlock()
			if !ok {
				continue
			}
			var err error
			if !cs.IsConfirmed() {
				err = cs.GetError()
				if err == nil {
					err = errNacked
				}
			}
			p.window.Release()
			done(err)
		}
	}
}

func (p *streamProducer) Send(ctx context.Context, key string, payload []byte, done func(error)) {
	if err := p.window.Acquire(ctx); err != nil {
		done(err)
		return
	}
	sp := p.producers[loadgen.QueueOf(key, len(p.producers), &p.next)]
	msg := samqp.NewMessage(payload)
	var wait chan error
	answer := done
	if p.sync {
		wait = make(chan error, 1)
		answer = func(err error) { wait <- err }
	}
	p.mu.Lock()
	p.mu.pending[msg] = answer
	p.mu.Unlock()
	if err := sp.Send(msg); err != nil {
		p.mu.Lock()
		_, still := p.mu.pending[msg]
		delete(p.mu.pending, msg)
		p.mu.Unlock()
		if !still {
			// Its confirmation (a failure) already answered it.
			if p.sync {
				done(<-wait)
			}
			return
		}
		p.window.Release()
		done(err)
		return
	}
	if p.sync {
		select {
		case err := <-wait:
			done(err)
		case <-ctx.Done():
			// The confirmation still frees the window when it comes.
			p.mu.Lock()
			if _, still := p.mu.pending[msg]; still {
				p.mu.pending[msg] = func(error) {}
			}
			p.mu.Unlock()
			done(ctx.Err())
		}
	}
}

// Close waits (up to 30 s) for the outstanding confirmations, then closes
// the stream producers; any still pending fail.
func (p *streamProducer) Close() error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		n := len(p.mu.pending)
		p.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	var errs []error
	for _, sp := range p.producers {
		if err := sp.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	p.wg.Wait()
	p.mu.Lock()
	left := p.mu.pending
	p.mu.pending = map[message.StreamMessage]func(error){}
	p.mu.Unlock()
	for _, done := range left {
		done(errors.New("rabbitdriver: stream producer closed before the confirmation"))
	}
	return errors.Join(errs...)
}

func (d *Driver) newStreamConsumer(topic, group string, opts loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	env, err := d.streamEnv()
	if err != nil {
		return nil, err
	}
	c := &streamConsumer{}
	members := max(opts.Members, 1)
	for q := opts.Member; q < d.queueCount(topic); q += members {
		name := fmt.Sprintf("%s-%d-q%d", group, opts.Member, q)
		sc, err := env.NewConsumer(queueName(topic, q), func(_ stream.ConsumerContext, m *samqp.Message) {
			h(m.GetData())
		}, stream.NewConsumerOptions().SetConsumerName(name).SetOffset(stream.OffsetSpecification{}.First()).
			SetInitialCredits(streamInitialCredits))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("rabbitdriver: stream consumer %s: %w", queueName(topic, q), err), c.Close())
		}
		c.consumers = append(c.consumers, sc)
	}
	return c, nil
}

type streamConsumer struct{ consumers []*stream.Consumer }

func (c *streamConsumer) Close() error {
	var errs []error
	for _, sc := range c.consumers {
		if err := sc.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
