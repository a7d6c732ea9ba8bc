package loadgen

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"time"
)

// memDriver is an in-process driver for tests: a topic is a list of
// subscriber handlers; Send delivers synchronously after an optional delay.
type memDriver struct {
	mu     sync.Mutex
	topics map[string][]Handler
	// stall, if set, is called before each send is delivered.
	stall func(n int64)
	// stallCtx, if set, is too, with the send's context: an error fails
	// the send.
	stallCtx func(ctx context.Context, n int64) error
	// deliveries, if set, says how many times message n is delivered to
	// each subscriber (default once; 0 loses it, 2 redelivers it).
	deliveries func(n int64) int
	// sent, if set, gets every message's stamp as it is sent.
	sent func(dueNs int64)
	// queued makes delivery asynchronous, as a broker's is: each
	// consumer takes copies from its own queue on its own goroutine, so a
	// consumer that holds back holds back no send.
	queued bool
	n      int64
}

func newMemDriver() *memDriver { return &memDriver{topics: map[string][]Handler{}} }

func (d *memDriver) Name() string             { return "mem" }
func (d *memDriver) Describe() map[string]any { return map[string]any{"kind": "test"} }
func (d *memDriver) Close() error             { return nil }

func (d *memDriver) CreateTopic(_ context.Context, topic string, _ int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.topics[topic]; !ok {
		d.topics[topic] = nil
	}
	return nil
}

func (d *memDriver) NewProducer(_ context.Context, topic string, _ ProducerOptions) (Producer, error) {
	return &memProducer{d: d, topic: topic}, nil
}

func (d *memDriver) NewConsumer(_ context.Context, topic, _ string, _ ConsumerOptions, h Handler) (Consumer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.queued {
		d.topics[topic] = append(d.topics[topic], h)
		return memConsumer{}, nil
	}
	q := make(chan []byte, 1<<16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range q {
			h(p)
		}
	}()
	d.topics[topic] = append(d.topics[topic], func(p []byte) { q <- bytes.Clone(p) })
	return queuedConsumer{q: q, done: done}, nil
}

type queuedConsumer struct {
	q    chan []byte
	done chan struct{}
}

func (c queuedConsumer) Close() error { close(c.q); <-c.done; return nil }

type memProducer struct {
	d     *memDriver
	topic string
}

func (p *memProducer) Send(ctx context.Context, _ string, payload []byte, done func(error)) {
	p.d.mu.Lock()
	p.d.n++
	n := p.d.n
	hs := p.d.topics[p.topic]
	stall, stallCtx, times, sent := p.d.stall, p.d.stallCtx, p.d.deliveries, p.d.sent
	p.d.mu.Unlock()
	if sent != nil {
		sent(int64(binary.BigEndian.Uint64(payload)))
	}
	if stall != nil {
		stall(n)
	}
	if stallCtx != nil {
		if err := stallCtx(ctx, n); err != nil {
			done(err)
			return
		}
	}
	k := 1
	if times != nil {
		k = times(n)
	}
	for range k {
		for _, h := range hs {
			h(payload)
		}
	}
	done(nil)
}

func (p *memProducer) Close() error { return nil }

type memConsumer struct{}

func (memConsumer) Close() error { return nil }

var _ = time.Second
