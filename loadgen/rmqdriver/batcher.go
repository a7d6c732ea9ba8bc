package rmqdriver

import (
	"context"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// batcher accumulates messages into batches of size, sending a batch when
// it is full or when its first message has waited linger.
type batcher struct {
	p      *prod
	size   int
	linger time.Duration
	mu     struct {
		sync.Mutex
		msgs  []*primitive.Message
		dones []func(error)
		timer *time.Timer
	}
}

func newBatcher(p *prod, size int, linger time.Duration) *batcher {
	if size < 1 {
		size = 1
	}
	return &batcher{p: p, size: size, linger: linger}
}

func (b *batcher) add(ctx context.Context, m *primitive.Message, done func(error)) {
	b.mu.Lock()
	b.mu.msgs = append(b.mu.msgs, m)
	b.mu.dones = append(b.mu.dones, done)
	if len(b.mu.msgs) == 1 && b.linger > 0 {
		b.mu.timer = time.AfterFunc(b.linger, func() { b.flush(context.Background()) })
	}
	full := len(b.mu.msgs) >= b.size
	b.mu.Unlock()
	if full {
		b.flush(ctx)
	}
}

func (b *batcher) flush(ctx context.Context) {
	b.mu.Lock()
	msgs, dones := b.mu.msgs, b.mu.dones
	b.mu.msgs, b.mu.dones = nil, nil
	if b.mu.timer != nil {
		b.mu.timer.Stop()
		b.mu.timer = nil
	}
	b.mu.Unlock()
	if len(msgs) > 0 {
		b.p.sendAsync(ctx, msgs, dones)
	}
}

func (b *batcher) close() { b.flush(context.Background()) }
