// Package rabbitdriver is the loadgen driver for RabbitMQ, a peer the lab
// runs beside Samsa, over AMQP 0-9-1 (amqp091-go).
//
// With no URL it starts rabbitmq-server (Debian's rabbitmq-server package;
// when it is missing New says in one line how to install it) with an epmd
// of its own, on free ports of 127.0.0.1, its node's files, config and
// Erlang cookie in a temporary directory; Close stops both and removes
// the directory.
//
// Queue types, the two durabilities compared:
//
//   - "quorum": quorum queues, publisher confirms. A quorum queue fsyncs
//     its log before it confirms: an acknowledged message survives power
//     loss (Samsa's sync flush, JetStream's sync_interval always).
//   - "stream" (default): stream queues, publisher confirms. A stream
//     confirms once the message is written to its segment, and never
//     fsyncs explicitly: it survives a process crash (Samsa's async flush).
//
// Stream queues are reached through the stream plugin's own protocol
// (rabbitmq-stream-go-client, stream.go; the plugin is enabled in the
// node's own plugins file) by default, or over AMQP 0-9-1 (Protocol
// "amqp"); the result says which ("protocol").
//
// Mapping: a topic is a direct exchange "<topic>" and Q durable queues
// "<topic>.<q>" bound by key q; a producer publishes persistent messages to
// the queues round-robin (by key hash when a key is given). A quorum queue
// is shared by its consumers (competing consumers), so a topic has one
// consumer group (a second is refused as not supported); a stream is read
// by every group from its first message. Member m of M consumes the queues
// q with q mod M = m; quorum consumers auto-ack (as NATS's AckNone), stream
// consumers ack every 256 deliveries (streams need acks for their credit).
// Pull mode is not supported (RabbitMQ pushes; basic.get per message is not
// a peer's fair showing): both consume modes run push consumers, which the
// result says. Async and batch publish through a window of MaxInFlight
// (batch: BatchSize) unconfirmed messages.
package rabbitdriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/samsamq/samsa/loadgen"
)

// Options configure the driver.
type Options struct {
	// URL of a running RabbitMQ (amqp://...); empty starts one.
	URL string
	// Dir is the started server's directory; default a temporary
	// directory removed on Close.
	Dir string
	// Queue is "quorum" or "stream" (default).
	Queue string
	// Protocol is how the driver talks to stream queues: "stream" (the
	// default for them: the stream plugin's own protocol) or "amqp" (AMQP
	// 0-9-1). Quorum queues are AMQP only.
	Protocol string
	// StreamPort is a running server's stream protocol port (with URL);
	// default 5552.
	StreamPort int
}

// Driver is the RabbitMQ driver.
type Driver struct {
	opts       Options
	srv        *server
	tmpDir     string
	conn       *amqp.Connection
	version    string
	streamPort int
	mu         struct {
		sync.Mutex
		queues map[string]int    // topic -> queue count
		group  map[string]string // quorum: topic -> its one group
		env    *stream.Environment
	}
}

// native reports whether stream queues go over the stream protocol.
func (d *Driver) native() bool { return d.opts.Protocol == "stream" }

// New connects to (or starts) a RabbitMQ server.
func New(opts Options) (*Driver, error) {
	if opts.Queue == "" {
		opts.Queue = "stream"
	}
	if opts.Queue != "quorum" && opts.Queue != "stream" {
		return nil, fmt.Errorf("rabbitdriver: queue type %q: want quorum or stream", opts.Queue)
	}
	if opts.Protocol == "" {
		opts.Protocol = map[string]string{"stream": "stream", "quorum": "amqp"}[opts.Queue]
	}
	if opts.Protocol != "amqp" && (opts.Protocol != "stream" || opts.Queue != "stream") {
		return nil, fmt.Errorf("rabbitdriver: protocol %q for %s queues: want amqp, or stream for stream queues", opts.Protocol, opts.Queue)
	}
	d := &Driver{opts: opts, streamPort: opts.StreamPort}
	if d.streamPort == 0 {
		d.streamPort = 5552
	}
	d.mu.queues, d.mu.group = map[string]int{}, map[string]string{}
	url := opts.URL
	if url == "" {
		dir, temp, err := loadgen.ServerDir(opts.Dir, "samsa-rabbitmq-")
		if err != nil {
			return nil, err
		}
		if temp {
			d.tmpDir = dir
		}
		srv, err := startServer(dir)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("rabbitdriver: %w", err), d.Close())
		}
		d.srv = srv
		url = "amqp://guest:guest@127.0.0.1:" + strconv.Itoa(srv.amqpPort) + "/"
		d.streamPort = srv.streamPort
	}
	conn, err := amqp.DialConfig(url, amqp.Config{Heartbeat: 30 * time.Second})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rabbitdriver: connect: %w", err), d.Close())
	}
	d.conn = conn
	if v, ok := conn.Properties["version"].(string); ok {
		d.version = v
	}
	return d, nil
}

// Name implements loadgen.Driver.
func (d *Driver) Name() string { return "rabbitmq" }

// ServerProcess implements loadgen.ServerProcessDriver: the
// rabbitmq-server this driver started (its Erlang VM in its group; epmd,
// a group of its own, is left out), none with URL.
func (d *Driver) ServerProcess() (loadgen.ServerProcess, bool) {
	if d.srv == nil || d.srv.rabbit == nil {
		return loadgen.ServerProcess{}, false
	}
	return loadgen.ServerProcess{PGID: d.srv.rabbit.Pid(), Note: "rabbitmq-server's group, epmd apart"}, true
}

// Describe implements loadgen.Driver.
func (d *Driver) Describe() map[string]any {
	m := map[string]any{"server_version": d.version, "started": d.srv != nil, "queue_type": d.opts.Queue,
		"protocol": "amqp 0-9-1 (amqp091-go), publisher confirms", "consume": "push consumers (both consume modes)",
		"batch": "async confirm window (no batch publish)"}
	if d.native() {
		m["protocol"] = "stream protocol (rabbitmq-stream-go-client), publish confirms"
		m["batch"] = "async confirm window; the client aggregates sends into publish frames"
		m["stream_client"] = fmt.Sprintf("stream-perf-test's defaults: publish frames of up to %d messages (dynamic batching), "+
			"sub-entry size %d, %d initial credits (a credit per chunk), one producer or consumer per connection, the platform's socket buffers",
			streamBatchSize, streamSubEntrySize, streamInitialCredits)
	}
	if d.opts.Queue == "quorum" {
		m["durability"] = "power-loss"
		m["durability_note"] = "quorum queue: fsync before confirm"
	} else {
		m["durability"] = "process-crash"
		m["durability_note"] = "stream: confirmed once written, never fsynced explicitly"
	}
	return m
}

func queueName(topic string, q int) string { return topic + "." + strconv.Itoa(q) }

// CreateTopic declares the topic's exchange and queues.
// It stops, with ctx's error, between queues once ctx ends.
func (d *Driver) CreateTopic(ctx context.Context, topic string, queues int) error {
	if queues < 1 {
		return fmt.Errorf("rabbitdriver: topic %s: %d queues", topic, queues)
	}
	if d.native() {
		if err := d.createStreams(ctx, topic, queues); err != nil {
			return err
		}
		d.mu.Lock()
		d.mu.queues[topic] = queues
		d.mu.Unlock()
		return nil
	}
	ch, err := d.conn.Channel()
	if err != nil {
		return err
	}
	// Each declaration below waits for its answer: the channel has nothing
	// left to say at Close.
	defer func() { _ = ch.Close() }()
	if err := ch.ExchangeDeclare(topic, "direct", true, false, false, false, nil); err != nil {
		return fmt.Errorf("rabbitdriver: exchange %s: %w", topic, err)
	}
	for q := 0; q < queues; q++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("rabbitdriver: %d of %d queues declared: %w", q, queues, err)
		}
		name := queueName(topic, q)
		if _, err := ch.QueueDeclare(name, true, false, false, false, amqp.Table{"x-queue-type": d.opts.Queue}); err != nil {
			return fmt.Errorf("rabbitdriver: queue %s: %w", name, err)
		}
		if err := ch.QueueBind(name, strconv.Itoa(q), topic, false, nil); err != nil {
			return fmt.Errorf("rabbitdriver: bind %s: %w", name, err)
		}
	}
	d.mu.Lock()
	d.mu.queues[topic] = queues
	d.mu.Unlock()
	return nil
}

func (d *Driver) queueCount(topic string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.mu.queues[topic]; ok {
		return n
	}
	return 1
}

// Close implements loadgen.Driver.
func (d *Driver) Close() error {
	var err error
	d.mu.Lock()
	env := d.mu.env
	d.mu.Unlock()
	if env != nil {
		err = env.Close()
	}
	if d.conn != nil {
		err = errors.Join(err, d.conn.Close())
		if errors.Is(err, amqp.ErrClosed) {
			err = nil
		}
	}
	if d.srv != nil {
		err = errors.Join(err, d.srv.stop())
	}
	if d.tmpDir != "" {
		_ = os.RemoveAll(d.tmpDir)
	}
	return err
}

// NewProducer implements loadgen.Driver: a confirm-mode channel of its own.
func (d *Driver) NewProducer(_ context.Context, topic string, opts loadgen.ProducerOptions) (loadgen.Producer, error) {
	if d.native() {
		return d.newStreamProducer(topic, opts)
	}
	ch, err := d.conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		return nil, errors.Join(fmt.Errorf("rabbitdriver: confirm mode: %w", err), ch.Close())
	}
	return &producer{ch: ch, topic: topic, queues: d.queueCount(topic), mode: opts.Mode,
		window: loadgen.NewWindow(opts)}, nil
}

type producer struct {
	ch     *amqp.Channel
	topic  string
	queues int
	mode   loadgen.SendMode
	next   atomic.Uint64
	window loadgen.Window
	wg     sync.WaitGroup
}

func (p *producer) key(key string) string {
	return strconv.Itoa(loadgen.QueueOf(key, p.queues, &p.next))
}

var errNacked = errors.New("rabbitdriver: publish not confirmed (nack or channel closed)")

func (p *producer) Send(ctx context.Context, key string, payload []byte, done func(error)) {
	if p.mode != loadgen.SendSync {
		if err := p.window.Acquire(ctx); err != nil {
			done(err)
			return
		}
	}
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, p.topic, p.key(key), false, false,
		amqp.Publishing{DeliveryMode: amqp.Persistent, Body: payload})
	if err == nil && dc == nil {
		err = errors.New("rabbitdriver: channel not in confirm mode")
	}
	if err != nil {
		if p.mode != loadgen.SendSync {
			p.window.Release()
		}
		done(err)
		return
	}
	wait := func() error {
		ok, err := dc.WaitContext(ctx)
		if err == nil && !ok {
			err = errNacked
		}
		return err
	}
	if p.mode == loadgen.SendSync {
		done(wait())
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := wait()
		p.window.Release()
		done(err)
	}()
}

func (p *producer) Close() error {
	p.wg.Wait()
	err := p.ch.Close()
	if errors.Is(err, amqp.ErrClosed) {
		err = nil
	}
	return err
}

// NewConsumer implements loadgen.Driver.
func (d *Driver) NewConsumer(_ context.Context, topic, group string, opts loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	if d.opts.Queue == "quorum" {
		d.mu.Lock()
		g, ok := d.mu.group[topic]
		if !ok {
			d.mu.group[topic] = group
		}
		d.mu.Unlock()
		if ok && g != group {
			return nil, fmt.Errorf("rabbitdriver: not supported: a second consumer group (%s) on quorum queues, whose consumers compete (topic %s has %s)", group, topic, g)
		}
	}
	if d.native() {
		return d.newStreamConsumer(topic, group, opts, h)
	}
	stream := d.opts.Queue == "stream"
	members := max(opts.Members, 1)
	c := &consumer{done: make(chan struct{})}
	var wg sync.WaitGroup
	// A channel per queue: acks (multiple) are per channel, and one
	// goroutine per channel keeps them in order.
	for q := opts.Member; q < d.queueCount(topic); q += members {
		ch, err := d.conn.Channel()
		if err == nil {
			c.chs = append(c.chs, ch)
			err = ch.Qos(2048, 0, false)
		}
		var dels <-chan amqp.Delivery
		if err == nil {
			var args amqp.Table
			if stream {
				args = amqp.Table{"x-stream-offset": "first"}
			}
			tag := fmt.Sprintf("%s-%d-q%d", group, opts.Member, q)
			dels, err = ch.Consume(queueName(topic, q), tag, !stream, false, false, false, args)
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("rabbitdriver: consume %s: %w", queueName(topic, q), err), c.closeChannels())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for m := range dels { // ends when the channel closes
				h(m.Body)
				if n++; stream && n%256 == 0 {
					_ = m.Ack(true)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(c.done) }()
	return c, nil
}

type consumer struct {
	chs  []*amqp.Channel
	done chan struct{}
}

func (c *consumer) closeChannels() error {
	var errs []error
	for _, ch := range c.chs {
		if err := ch.Close(); err != nil && !errors.Is(err, amqp.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *consumer) Close() error {
	err := c.closeChannels()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		return errors.Join(err, errors.New("rabbitdriver: consumer goroutines still running 30s after close"))
	}
	return err
}
