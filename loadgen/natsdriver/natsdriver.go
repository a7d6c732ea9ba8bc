// Package natsdriver is the loadgen driver for NATS JetStream, the peer the
// lab runs beside Samsa.
//
// With no URL it starts a nats-server in this process (built from the
// nats-server module, so it is the same code as the released binary) with
// JetStream file storage in a temporary directory, listening on loopback.
// Sync selects fsync before every acknowledgement (the server's
// `sync_interval: always`); otherwise the server's default (fsync every two
// minutes, relying on replication, which a single node does not have).
//
// Mapping: a topic is a stream with subjects "<topic>.<queue>" (with
// StreamPerQueue, a stream per queue, each with its one subject); a producer
// spreads messages over the queues' subjects (by key hash when a key is
// given); a consumer group is a durable pull consumer shared by its members,
// with AckNone (Samsa's consumers commit offsets in the background, so
// neither side waits for per-message acks). Long-poll maps to Consume (pull
// requests held by the server until messages arrive), pull to FetchNoWait
// plus the workload's sleep when empty. JetStream has no batch publish:
// batch mode is async publishing with a window of BatchSize.
package natsdriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/samsamq/samsa/loadgen"
)

// Options configure the driver.
type Options struct {
	// URL of a running NATS server; empty starts one in-process.
	URL string
	// StoreDir for the in-process server's JetStream files; default a
	// temporary directory removed on Close.
	StoreDir string
	// RemoveStoreDir makes Close remove StoreDir too (a directory made
	// for this driver alone, as the lab makes one per cell).
	RemoveStoreDir bool
	// Sync makes the in-process server fsync before every ack
	// (sync_interval: always). Ignored with URL.
	Sync bool
	// StreamPerQueue makes each queue a stream of its own
	// ("<topic>_q<i>", subject "<topic>.<i>") instead of one stream per
	// topic with a subject per queue: JetStream's one log per partition,
	// for queue-count scaling. Member m of M consumes the streams
	// i ≡ m (mod M).
	StreamPerQueue bool
}

// Driver is the NATS JetStream driver.
type Driver struct {
	opts    Options
	srv     *server.Server
	tmpDir  string
	nc      *nats.Conn
	js      jetstream.JetStream
	queues  loadgen.QueueCounts
	version string
}

// New connects to (or starts) a NATS server.
func New(opts Options) (*Driver, error) {
	d := &Driver{opts: opts}
	url := opts.URL
	if url == "" {
		dir, temp, err := loadgen.ServerDir(opts.StoreDir, "samsa-nats-")
		if err != nil {
			return nil, err
		}
		if temp || opts.RemoveStoreDir {
			d.tmpDir = dir
		}
		sopts := &server.Options{
			Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
			JetStream: true, StoreDir: dir, MaxPayload: 8 << 20,
		}
		if opts.Sync {
			sopts.SyncAlways = true
		}
		srv, err := server.NewServer(sopts)
		if err != nil {
			d.cleanup()
			return nil, fmt.Errorf("natsdriver: start server: %w", err)
		}
		go srv.Start()
		if !srv.ReadyForConnections(10 * time.Second) {
			srv.Shutdown()
			d.cleanup()
			return nil, errors.New("natsdriver: in-process nats-server not ready after 10s")
		}
		d.srv = srv
		url = srv.ClientURL()
		d.version = server.VERSION
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("natsdriver: connect %s: %w", url, err), d.Close())
	}
	d.nc = nc
	if d.version == "" {
		d.version = nc.ConnectedServerVersion()
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return nil, errors.Join(err, d.Close())
	}
	d.js = js
	return d, nil
}

// Name implements loadgen.Driver.
func (d *Driver) Name() string { return "nats" }

// ServerProcess implements loadgen.ServerProcessDriver: the in-process
// nats-server is this process (none with URL).
func (d *Driver) ServerProcess() (loadgen.ServerProcess, bool) {
	if d.srv == nil {
		return loadgen.ServerProcess{}, false
	}
	return loadgen.ServerProcess{Self: true, Note: "in-process nats-server plus the loadgen and its clients"}, true
}

// Describe implements loadgen.Driver.
func (d *Driver) Describe() map[string]any {
	m := map[string]any{"server_version": d.version, "embedded": d.srv != nil, "storage": "file",
		"consumer_ack": "none", "batch": "async publish window (no batch publish in JetStream)",
		"mapping": "a stream per topic, a subject per queue"}
	if d.opts.StreamPerQueue {
		m["mapping"] = "a stream per queue"
	}
	if d.srv != nil {
		// JetStream writes a message to its block file before it acks
		// (a process crash keeps it); sync_interval says when it fsyncs.
		if d.opts.Sync {
			m["sync_interval"], m["durability"] = "always", "power-loss"
		} else {
			m["sync_interval"], m["durability"] = "default (2m)", "process-crash"
		}
	}
	return m
}

// streamName is queue q's stream with StreamPerQueue.
func streamName(topic string, q int) string { return topic + "_q" + strconv.Itoa(q) }

// CreateTopic makes (or updates) a stream for the topic, or with
// StreamPerQueue one per queue.
func (d *Driver) CreateTopic(ctx context.Context, topic string, queues int) error {
	if queues < 1 {
		return fmt.Errorf("natsdriver: topic %s: %d queues", topic, queues)
	}
	if d.opts.StreamPerQueue {
		for q := 0; q < queues; q++ {
			if _, err := d.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
				Name: streamName(topic, q), Subjects: []string{topic + "." + strconv.Itoa(q)}, Storage: jetstream.FileStorage, Replicas: 1,
			}); err != nil {
				return fmt.Errorf("natsdriver: stream %d of %d: %w", q+1, queues, err)
			}
		}
		d.queues.Set(topic, queues)
		return nil
	}
	_, err := d.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: topic, Subjects: []string{topic + ".*"}, Storage: jetstream.FileStorage, Replicas: 1,
	})
	if err == nil {
		d.queues.Set(topic, queues)
	}
	return err
}

// Close implements loadgen.Driver.
func (d *Driver) Close() error {
	if d.nc != nil {
		d.nc.Close()
	}
	if d.srv != nil {
		d.srv.Shutdown()
		d.srv.WaitForShutdown()
	}
	d.cleanup()
	return nil
}

func (d *Driver) cleanup() {
	if d.tmpDir != "" {
		_ = os.RemoveAll(d.tmpDir)
	}
}

// NewProducer implements loadgen.Driver.
func (d *Driver) NewProducer(_ context.Context, topic string, opts loadgen.ProducerOptions) (loadgen.Producer, error) {
	n := d.queues.Get(topic)
	p := &producer{d: d, mode: opts.Mode}
	for q := 0; q < n; q++ {
		p.subjects = append(p.subjects, topic+"."+strconv.Itoa(q))
	}
	p.window = loadgen.NewWindow(opts)
	return p, nil
}

type producer struct {
	d        *Driver
	mode     loadgen.SendMode
	subjects []string
	next     atomic.Uint64
	window   loadgen.Window // async: one token per unacknowledged publish
	wg       sync.WaitGroup
}

func (p *producer) subject(key string) string {
	return p.subjects[loadgen.QueueOf(key, len(p.subjects), &p.next)]
}

func (p *producer) Send(ctx context.Context, key string, payload []byte, done func(error)) {
	subj := p.subject(key)
	if p.mode == loadgen.SendSync {
		_, err := p.d.js.Publish(ctx, subj, payload)
		done(err)
		return
	}
	if err := p.window.Acquire(ctx); err != nil {
		done(err)
		return
	}
	f, err := p.d.js.PublishAsync(subj, payload)
	if err != nil {
		p.window.Release()
		done(err)
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.window.Release()
		select {
		case <-f.Ok():
			done(nil)
		case err := <-f.Err():
			done(err)
		}
	}()
}

func (p *producer) Close() error {
	p.wg.Wait()
	return nil
}

// NewConsumer implements loadgen.Driver.
func (d *Driver) NewConsumer(ctx context.Context, topic, group string, opts loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	if !d.opts.StreamPerQueue {
		return d.streamConsumer(ctx, topic, group, opts, h)
	}
	members := max(opts.Members, 1)
	var cs multiConsumer
	for q := 0; q < d.queues.Get(topic); q++ {
		if q%members != opts.Member%members {
			continue
		}
		c, err := d.streamConsumer(ctx, streamName(topic, q), group, opts, h)
		if err != nil {
			_ = cs.Close()
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// multiConsumer is one member's consumers, a stream each.
type multiConsumer []loadgen.Consumer

func (m multiConsumer) Close() error {
	var errs []error
	for _, c := range m {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// streamConsumer consumes one stream as group.
func (d *Driver) streamConsumer(ctx context.Context, stream, group string, opts loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	cons, err := d.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: group, AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxAckPending: -1,
	})
	if err != nil {
		return nil, err
	}
	if opts.Mode == loadgen.ConsumeLongPoll {
		cc, err := cons.Consume(func(m jetstream.Msg) { h(m.Data()) }, jetstream.PullMaxMessages(1024))
		if err != nil {
			return nil, err
		}
		return consumeCloser{cc}, nil
	}
	c := &pullConsumer{stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop(cons, opts.PullInterval, h)
	return c, nil
}

type consumeCloser struct{ cc jetstream.ConsumeContext }

func (c consumeCloser) Close() error { c.cc.Stop(); return nil }

// pullConsumer fetches what is there and sleeps when nothing is.
type pullConsumer struct {
	stop, done chan struct{}
	once       sync.Once
}

func (c *pullConsumer) loop(cons jetstream.Consumer, interval time.Duration, h loadgen.Handler) {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		batch, err := cons.FetchNoWait(1024)
		got := 0
		if err == nil {
			for m := range batch.Messages() {
				h(m.Data())
				got++
			}
		}
		if got == 0 {
			select {
			case <-c.stop:
				return
			case <-time.After(interval):
			}
		}
	}
}

func (c *pullConsumer) Close() error {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	return nil
}
