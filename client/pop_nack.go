package client

import (
	"context"
	"time"
)

// popRetryLadder is how long Nack makes a message invisible by its
// reconsume times: RocketMQ's retry ladder from its third level (10 s,
// 30 s, 1 m, ... 2 h), the wait of a push consumer's first retry and on.
var popRetryLadder = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
	3 * time.Minute, 4 * time.Minute, 5 * time.Minute, 6 * time.Minute, 7 * time.Minute, 8 * time.Minute,
	9 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour}

// NackDelay is how long Nack makes a message with reconsumeTimes
// invisible: the retry ladder's step for it, the last step past the end.
func NackDelay(reconsumeTimes int32) time.Duration {
	return popRetryLadder[min(max(int(reconsumeTimes), 0), len(popRetryLadder)-1)]
}

// Nack gives m back for a later attempt: its invisible time becomes
// NackDelay(m.ReconsumeTimes) from now, so a message failing again and
// again is tried less and less often until the group's max reconsume
// times send it to the DLQ. m's handle is updated (ChangeInvisibleTime).
func (c *PopConsumer) Nack(ctx context.Context, m *PoppedMessage) error {
	return c.ChangeInvisibleTime(ctx, m, NackDelay(m.ReconsumeTimes))
}
