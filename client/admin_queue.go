package client

import (
	"context"
	"time"
)

// One queue's offsets, for tools and gateways (package proxy) that work
// queue by queue.

// QueueRange is q's first stored offset and the offset after its last
// message.
func (a *Admin) QueueRange(ctx context.Context, q MessageQueue) (minOffset, maxOffset int64, err error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	if minOffset, err = a.in.minOffset(ctx, q); err != nil {
		return 0, 0, err
	}
	maxOffset, err = a.in.maxOffset(ctx, q)
	return minOffset, maxOffset, err
}

// SearchOffset is the offset of q's first message stored at or after t.
func (a *Admin) SearchOffset(ctx context.Context, q MessageQueue, t time.Time) (int64, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	return a.in.searchOffset(ctx, q, t)
}

// CommittedOffset is group's committed offset of q; ErrNoOffset when it
// has none.
func (a *Admin) CommittedOffset(ctx context.Context, group string, q MessageQueue) (int64, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	return a.in.queryConsumerOffset(ctx, group, q)
}

// CommitOffset sets group's committed offset of q.
func (a *Admin) CommitOffset(ctx context.Context, group string, q MessageQueue, offset int64) error {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	return a.in.updateConsumerOffset(ctx, group, q, offset)
}
