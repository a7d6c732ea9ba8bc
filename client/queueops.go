package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// Per-queue requests every kind of client makes: offsets and the
// consumer group's committed progress.

// queueAddr returns where to ask about q: its broker's master, else (with
// slaveOK) its lowest-numbered slave.
func (in *instance) queueAddr(ctx context.Context, q MessageQueue, slaveOK bool) (string, error) {
	if a := in.brokerAddr(q.BrokerName, slaveOK); a != "" {
		return a, nil
	}
	// Unknown broker: the topic's route names it.
	if _, err := in.route(ctx, q.Topic); err != nil {
		return "", err
	}
	if a := in.brokerAddr(q.BrokerName, slaveOK); a != "" {
		return a, nil
	}
	return "", fmt.Errorf("%w: broker %s of %v has no address", ErrNoRoute, q.BrokerName, q)
}

func offsetAnswer(resp *protocol.Command) (int64, error) {
	var h protocol.OffsetResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("client: offset answer: %w", err)
	}
	return h.Offset, nil
}

// maxOffset is the offset after q's last message (GET_MAX_OFFSET).
func (in *instance) maxOffset(ctx context.Context, q MessageQueue) (int64, error) {
	addr, err := in.queueAddr(ctx, q, true)
	if err != nil {
		return 0, err
	}
	h := protocol.GetMaxOffsetRequestHeader{Topic: q.Topic, QueueID: int32(q.QueueID), Committed: true, BrokerName: q.BrokerName}
	resp, err := in.invoke(ctx, addr, protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil))
	if err != nil {
		return 0, fmt.Errorf("client: max offset of %v: %w", q, err)
	}
	return offsetAnswer(resp)
}

// minOffset is q's first offset still stored (GET_MIN_OFFSET).
func (in *instance) minOffset(ctx context.Context, q MessageQueue) (int64, error) {
	addr, err := in.queueAddr(ctx, q, true)
	if err != nil {
		return 0, err
	}
	h := protocol.GetMinOffsetRequestHeader{Topic: q.Topic, QueueID: int32(q.QueueID), BrokerName: q.BrokerName}
	resp, err := in.invoke(ctx, addr, protocol.NewRequest(protocol.GetMinOffset, h.Encode(), nil))
	if err != nil {
		return 0, fmt.Errorf("client: min offset of %v: %w", q, err)
	}
	return offsetAnswer(resp)
}

// searchOffset is the first offset of q stored at or after t
// (SEARCH_OFFSET_BY_TIMESTAMP).
func (in *instance) searchOffset(ctx context.Context, q MessageQueue, t time.Time) (int64, error) {
	addr, err := in.queueAddr(ctx, q, true)
	if err != nil {
		return 0, err
	}
	h := protocol.SearchOffsetRequestHeader{Topic: q.Topic, QueueID: int32(q.QueueID), Timestamp: t.UnixMilli(), BrokerName: q.BrokerName}
	resp, err := in.invoke(ctx, addr, protocol.NewRequest(protocol.SearchOffsetByTimestamp, h.Encode(), nil))
	if err != nil {
		return 0, fmt.Errorf("client: offset of %v at %v: %w", q, t, err)
	}
	return offsetAnswer(resp)
}

// queryConsumerOffset is group's committed offset of q, ErrNoOffset when
// the broker has none (QUERY_NOT_FOUND). It asks the master, or a slave
// when the route has no master (the slave holds the master's offsets as
// of its last copy, and those committed to it since).
func (in *instance) queryConsumerOffset(ctx context.Context, group string, q MessageQueue) (int64, error) {
	addr, err := in.queueAddr(ctx, q, true)
	if err != nil {
		return 0, err
	}
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: q.Topic, QueueID: int32(q.QueueID),
		SetZeroIfNotFound: false, HasSetZeroIfNotFound: true, BrokerName: q.BrokerName}
	resp, err := in.invoke(ctx, addr, protocol.NewRequest(protocol.QueryConsumerOffset, h.Encode(), nil))
	if err != nil {
		var re *ResponseError
		if errors.As(err, &re) && re.Code == protocol.QueryNotFound {
			return 0, fmt.Errorf("%w: group %s, %v", ErrNoOffset, group, q)
		}
		return 0, fmt.Errorf("client: offset of group %s in %v: %w", group, q, err)
	}
	return offsetAnswer(resp)
}

// updateConsumerOffset commits group's offset of q (UPDATE_CONSUMER_OFFSET,
// answered, so the caller knows it landed) to the master, or to a slave
// when the route has no master (RocketMQ's Java client does the same; the
// slave hands such commits to its master when it is back).
func (in *instance) updateConsumerOffset(ctx context.Context, group string, q MessageQueue, offset int64) error {
	addr, err := in.queueAddr(ctx, q, true)
	if err != nil {
		return err
	}
	h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: q.Topic, QueueID: int32(q.QueueID),
		CommitOffset: offset, BrokerName: q.BrokerName}
	if _, err := in.invoke(ctx, addr, protocol.NewRequest(protocol.UpdateConsumerOffset, h.Encode(), nil)); err != nil {
		return fmt.Errorf("client: commit %s@%d for group %s: %w", q, offset, group, err)
	}
	return nil
}

// brokerOffsetStore keeps a group's offsets on the brokers: the
// clustering consumer's default.
type brokerOffsetStore struct {
	in    *instance
	group string
}

// Read implements OffsetStore.
func (s *brokerOffsetStore) Read(ctx context.Context, q MessageQueue) (int64, error) {
	return s.in.queryConsumerOffset(ctx, s.group, q)
}

// Commit implements OffsetStore: one request per queue, all at once.
func (s *brokerOffsetStore) Commit(ctx context.Context, offsets map[MessageQueue]int64) error {
	errs := make(chan error, len(offsets))
	for q, off := range offsets {
		go func(q MessageQueue, off int64) { errs <- s.in.updateConsumerOffset(ctx, s.group, q, off) }(q, off)
	}
	var all []error
	for range offsets {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}
