// Package redisdriver is the loadgen driver for Redis streams, a peer the
// lab runs beside Samsa.
//
// With no Addr it starts redis-server (Debian's redis-server package; when
// it is missing New says in one line how to install it) on a free port of
// 127.0.0.1, in a temporary directory with a config of its own: AOF on, no
// RDB snapshots, and appendfsync always (Fsync "always": the AOF is
// fsynced before the server replies to the write, so an acknowledged
// message survives power loss) or everysec (the default: written to the
// AOF before the reply, fsynced once a second: survives a process crash).
// Close stops it (SIGTERM to its process group) and removes the directory.
//
// Mapping: a topic of Q queues is Q streams "<topic>:<q>"; a producer
// XADDs to them round-robin (by key hash when a key is given); a consumer
// group is a Redis consumer group on every stream of its topic, read with
// XREADGROUP ... NOACK (no pending list, as NATS's AckNone and Samsa's
// background offset commits: neither side waits for per-message acks).
// Member m of M reads the streams q with q mod M = m. Long-poll blocks up
// to 100 ms per XREADGROUP; pull does not block and sleeps PullInterval
// when empty. Async and batch send through a window of MaxInFlight (batch:
// BatchSize) concurrent XADDs over the client's connection pool: Redis has
// no batch append, and the driver does not pipeline.
package redisdriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/samsamq/samsa/internal/freeport"
	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/loadgen/peerproc"
)

// Options configure the driver.
type Options struct {
	// Addr of a running Redis (host:port); empty starts redis-server.
	Addr string
	// Dir is the started server's working directory (its AOF); default a
	// temporary directory removed on Close.
	Dir string
	// Fsync is the started server's appendfsync: "always" or "everysec"
	// (default). Ignored with Addr.
	Fsync string
}

// Driver is the Redis streams driver.
type Driver struct {
	opts    Options
	proc    *peerproc.Proc
	tmpDir  string
	rdb     *redis.Client
	version string
	queues  loadgen.QueueCounts
}

// New connects to (or starts) a Redis server.
func New(opts Options) (*Driver, error) {
	if opts.Fsync == "" {
		opts.Fsync = "everysec"
	}
	if opts.Fsync != "always" && opts.Fsync != "everysec" {
		return nil, fmt.Errorf("redisdriver: fsync %q: want always or everysec", opts.Fsync)
	}
	d := &Driver{opts: opts}
	addr := opts.Addr
	if addr == "" {
		var err error
		for try := 1; ; try++ { // fresh ports when one was taken meanwhile
			if addr, err = d.start(); err == nil || !peerproc.AddrInUse(err) || try == 3 {
				break
			}
			if d.proc != nil {
				_ = d.proc.Stop(10 * time.Second)
				d.proc = nil
			}
		}
		if err != nil {
			return nil, errors.Join(err, d.Close())
		}
	}
	d.rdb = redis.NewClient(&redis.Options{Addr: addr, PoolSize: 256, ReadTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := d.rdb.Info(ctx, "server").Result()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("redisdriver: %s: %w", addr, err), d.Close())
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			d.version = v
		}
	}
	return d, nil
}

// start runs redis-server and returns its address.
func (d *Driver) start() (string, error) {
	bin, err := peerproc.Find("redis-server", "redis-server")
	if err != nil {
		return "", fmt.Errorf("redisdriver: %w", err)
	}
	// A restart keeps the first start's temp dir.
	dir, temp, err := loadgen.ServerDir(cmp.Or(d.opts.Dir, d.tmpDir), "samsa-redis-")
	if err != nil {
		return "", err
	}
	if temp {
		d.tmpDir = dir
	}
	port, err := freeport.One()
	if err != nil {
		return "", err
	}
	conf := strings.Join([]string{
		"bind 127.0.0.1", "port " + strconv.Itoa(port), "protected-mode no", "daemonize no",
		"dir " + dir, "logfile \"\"", `save ""`,
		"appendonly yes", "appendfsync " + d.opts.Fsync,
		"stream-node-max-bytes 4096", "maxclients 10000",
	}, "\n") + "\n"
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return "", err
	}
	if d.proc, err = peerproc.Start(bin, []string{confPath}, nil, dir, filepath.Join(dir, "redis.log")); err != nil {
		return "", fmt.Errorf("redisdriver: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	probe := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer func() { _ = probe.Close() }() // a readiness probe: it only pings
	err = d.proc.WaitReady(20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return probe.Ping(ctx).Err()
	})
	if err != nil {
		return "", fmt.Errorf("redisdriver: %w", err)
	}
	return addr, nil
}

// Name implements loadgen.Driver.
func (d *Driver) Name() string { return "redis" }

// ServerProcess implements loadgen.ServerProcessDriver: the redis-server
// this driver started (none with Addr).
func (d *Driver) ServerProcess() (loadgen.ServerProcess, bool) {
	if d.proc == nil {
		return loadgen.ServerProcess{}, false
	}
	return loadgen.ServerProcess{PGID: d.proc.Pid()}, true
}

// Describe implements loadgen.Driver.
func (d *Driver) Describe() map[string]any {
	m := map[string]any{"server_version": d.version, "started": d.proc != nil, "storage": "streams (XADD/XREADGROUP NOACK)",
		"batch": "async window (no batch append, no pipelining)"}
	if d.proc != nil {
		m["appendfsync"] = d.opts.Fsync
		if d.opts.Fsync == "always" {
			m["durability"] = "power-loss"
		} else {
			m["durability"] = "process-crash"
		}
	}
	return m
}

func stream(topic string, q int) string { return topic + ":" + strconv.Itoa(q) }

// CreateTopic records the topic's stream count; the streams are made by
// the first XADD or consumer group.
func (d *Driver) CreateTopic(_ context.Context, topic string, queues int) error {
	if queues < 1 {
		return fmt.Errorf("redisdriver: topic %s: %d queues", topic, queues)
	}
	d.queues.Set(topic, queues)
	return nil
}

// Close implements loadgen.Driver.
func (d *Driver) Close() error {
	var err error
	if d.rdb != nil {
		err = d.rdb.Close()
	}
	if d.proc != nil {
		err = errors.Join(err, d.proc.Stop(20*time.Second))
	}
	if d.tmpDir != "" {
		_ = os.RemoveAll(d.tmpDir)
	}
	return err
}

// NewProducer implements loadgen.Driver.
func (d *Driver) NewProducer(_ context.Context, topic string, opts loadgen.ProducerOptions) (loadgen.Producer, error) {
	p := &producer{d: d, mode: opts.Mode}
	for q := 0; q < d.queues.Get(topic); q++ {
		p.streams = append(p.streams, stream(topic, q))
	}
	p.window = loadgen.NewWindow(opts)
	return p, nil
}

type producer struct {
	d       *Driver
	mode    loadgen.SendMode
	streams []string
	next    atomic.Uint64
	window  loadgen.Window
	wg      sync.WaitGroup
}

func (p *producer) stream(key string) string {
	return p.streams[loadgen.QueueOf(key, len(p.streams), &p.next)]
}

func (p *producer) xadd(ctx context.Context, s string, payload []byte) error {
	return p.d.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s, Values: []any{"d", payload}}).Err()
}

func (p *producer) Send(ctx context.Context, key string, payload []byte, done func(error)) {
	s := p.stream(key)
	if p.mode == loadgen.SendSync {
		done(p.xadd(ctx, s, payload))
		return
	}
	if err := p.window.Acquire(ctx); err != nil {
		done(err)
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := p.xadd(ctx, s, payload)
		p.window.Release()
		done(err)
	}()
}

func (p *producer) Close() error { p.wg.Wait(); return nil }

// NewConsumer implements loadgen.Driver.
func (d *Driver) NewConsumer(ctx context.Context, topic, group string, opts loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	var streams []string
	members := max(opts.Members, 1)
	for q := 0; q < d.queues.Get(topic); q++ {
		s := stream(topic, q)
		// Every member makes every stream's group: the producers may
		// write to a stream no member of this one reads.
		err := d.rdb.XGroupCreateMkStream(ctx, s, group, "0").Err()
		if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
			return nil, fmt.Errorf("redisdriver: group %s on %s: %w", group, s, err)
		}
		if q%members == opts.Member {
			streams = append(streams, s)
		}
	}
	c := &consumer{stop: make(chan struct{}), done: make(chan struct{})}
	if len(streams) == 0 {
		close(c.done) // more members than streams: this one idles
		return c, nil
	}
	args := &redis.XReadGroupArgs{Group: group, Consumer: fmt.Sprintf("%s-%d", group, opts.Member), Count: 1024, NoAck: true, Block: -1}
	if opts.Mode == loadgen.ConsumeLongPoll {
		args.Block = 100 * time.Millisecond
	}
	args.Streams = append(args.Streams, streams...)
	for range streams {
		args.Streams = append(args.Streams, ">") // new messages only
	}
	go c.loop(d.rdb, args, opts, h)
	return c, nil
}

type consumer struct {
	stop, done chan struct{}
	once       sync.Once
}

// loop reads until Close; it owns args.
func (c *consumer) loop(rdb *redis.Client, args *redis.XReadGroupArgs, opts loadgen.ConsumerOptions, h loadgen.Handler) {
	defer close(c.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for ctx.Err() == nil {
		res, err := rdb.XReadGroup(ctx, args).Result()
		got := 0
		for _, s := range res {
			for _, m := range s.Messages {
				if v, ok := m.Values["d"].(string); ok {
					h([]byte(v))
					got++
				}
			}
		}
		if got > 0 {
			continue
		}
		wait := opts.PullInterval
		if err != nil && !errors.Is(err, redis.Nil) {
			wait = max(wait, 50*time.Millisecond) // an error: do not spin
		} else if opts.Mode == loadgen.ConsumeLongPoll {
			continue // the block was the wait
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

func (c *consumer) Close() error {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	return nil
}
