package client

import (
	"context"
	"errors"
	"fmt"
)

// DLQPrefix names a consumer group's dead-letter topic (RocketMQ's
// MixAll.DLQ_GROUP_TOPIC_PREFIX): %DLQ%group.
const DLQPrefix = "%DLQ%"

// ResendOptions select the dead letters ResendDeadLetters sends again.
type ResendOptions struct {
	// Broker, if set, limits the resend to that broker's queues (by name).
	Broker string
	// Queue >= 0 limits it to that queue id; -1 takes every queue.
	Queue int
	// From >= 0 starts there (with Queue); -1 at each queue's first message.
	From int64
	// Max is the most messages handled (default 1000).
	Max int
	// DryRun reads and reports, sends nothing.
	DryRun bool
}

// DeadLetter is what ResendDeadLetters did with one message.
type DeadLetter struct {
	Queue       MessageQueue
	QueueOffset int64
	MsgID       string
	// Topic is where it was (or would be) sent; "" when skipped.
	Topic string
	// NewMsgID is the resent copy's id.
	NewMsgID string
	// Result: "resent", "would resend", "skipped: ..." or "failed: ...".
	Result string
}

// ResendProgress is one dead-letter queue's resend: Next is the offset to
// go on from (dead letters stay in their queue).
type ResendProgress struct {
	Queue      MessageQueue
	From, Next int64
	Resent     int
}

// ResendDeadLetters sends group's dead letters again, each to its
// original topic (Resendable). The dead letters stay where they are: a
// queue cannot drop a message; the progress says where to go on from. It
// stops at the first failed send and returns its error with what was done.
func (a *Admin) ResendDeadLetters(ctx context.Context, group string, o ResendOptions) ([]DeadLetter, []ResendProgress, error) {
	if o.Max <= 0 {
		o.Max = 1000
	}
	if o.From >= 0 && o.Queue < 0 {
		return nil, nil, errors.New("client: resend: a start offset needs a queue")
	}
	topic := DLQPrefix + group
	st, err := a.TopicStatus(ctx, topic, "")
	if errors.Is(err, ErrNoRoute) {
		return nil, nil, fmt.Errorf("%w: group %s has no dead-letter topic (%s)", ErrNoRoute, group, topic)
	}
	if err != nil {
		return nil, nil, err
	}
	var p *Producer
	if !o.DryRun {
		if p, err = NewProducer(ProducerOptions{ClientOptions: a.opts, Group: "samsa-dlq-resend"}); err != nil {
			return nil, nil, err
		}
		// Every send below is synchronous and answered before the next: Close
		// has nothing left to flush, so its error tells nothing about a resend.
		defer func() { _ = p.Close() }()
	}
	var letters []DeadLetter
	var progress []ResendProgress
	left := o.Max
	for _, s := range st {
		if (o.Queue >= 0 && s.Queue.QueueID != o.Queue) || (o.Broker != "" && s.Queue.BrokerName != o.Broker) {
			continue
		}
		start := s.MinOffset
		if o.From >= 0 {
			start = o.From
		}
		pr := ResendProgress{Queue: s.Queue, From: start, Next: start}
		for left > 0 && pr.Next < s.MaxOffset && ctx.Err() == nil {
			batch, _, err := a.MessagesAt(ctx, s.Queue, pr.Next, min(left, 32))
			if err != nil {
				return letters, append(progress, pr), err
			}
			if len(batch) == 0 {
				break
			}
			for _, m := range batch {
				dl := DeadLetter{Queue: m.Queue, QueueOffset: m.QueueOffset, MsgID: m.MsgID}
				out, err := Resendable(m)
				switch {
				case err != nil:
					dl.Result = "skipped: " + err.Error()
				case o.DryRun:
					dl.Topic, dl.Result = out.Topic, "would resend"
				default:
					dl.Topic = out.Topic
					// The send is not cut by ctx: a message read is sent or fails on its own timeout.
					res, err := p.Send(context.WithoutCancel(ctx), out)
					if err != nil {
						dl.Result = "failed: " + err.Error()
						return append(letters, dl), append(progress, pr), fmt.Errorf("client: resend %s to %s: %w", m.MsgID, out.Topic, err)
					}
					dl.NewMsgID, dl.Result = res.MsgID, "resent"
					pr.Resent++
				}
				letters = append(letters, dl)
				pr.Next = m.QueueOffset + 1
				left--
			}
		}
		progress = append(progress, pr)
	}
	return letters, progress, ctx.Err()
}
