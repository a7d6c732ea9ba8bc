package client

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// Acknowledging by receipt handle alone, for a gateway (package proxy)
// that hands the handles to its own clients and gets them back later
// without the PoppedMessage: the handle names the broker, queue and
// offset (RocketMQ's extraInfo: "startOffset popTime invisibleTime
// reviveQid topicFlag brokerName queueId queueOffset"), and the broker's
// address comes from the route.

// receiptQueue reads the queue and offset a handle of c's topic names.
func (c *PopConsumer) receiptQueue(handle string) (MessageQueue, int64, error) {
	f := strings.Split(handle, " ")
	if len(f) != 8 {
		return MessageQueue{}, 0, fmt.Errorf("client: malformed receipt handle %q", handle)
	}
	q, err1 := strconv.Atoi(f[6])
	off, err2 := strconv.ParseInt(f[7], 10, 64)
	if err1 != nil || err2 != nil || f[5] == "" {
		return MessageQueue{}, 0, fmt.Errorf("client: malformed receipt handle %q", handle)
	}
	return MessageQueue{Topic: c.opts.Topic, BrokerName: f[5], QueueID: q}, off, nil
}

// receipt rebuilds the PoppedMessage a handle stands for, as far as Ack
// and ChangeInvisibleTime need it.
func (c *PopConsumer) receipt(ctx context.Context, handle string) (*PoppedMessage, error) {
	q, off, err := c.receiptQueue(handle)
	if err != nil {
		return nil, err
	}
	addr, err := c.in.queueAddr(ctx, q, false)
	if err != nil {
		return nil, err
	}
	return &PoppedMessage{MessageExt: &MessageExt{Queue: q, QueueOffset: off}, ReceiptHandle: handle, addr: addr}, nil
}

// AckReceipt acknowledges the message a receipt handle (a
// PoppedMessage's ReceiptHandle) stands for, as Ack does.
func (c *PopConsumer) AckReceipt(ctx context.Context, handle string) error {
	m, err := c.receipt(ctx, handle)
	if err != nil {
		return err
	}
	return c.Ack(ctx, m)
}

// ChangeInvisibleTimeReceipt is ChangeInvisibleTime by receipt handle; it
// returns the handle that replaces it.
func (c *PopConsumer) ChangeInvisibleTimeReceipt(ctx context.Context, handle string, d time.Duration) (string, error) {
	m, err := c.receipt(ctx, handle)
	if err != nil {
		return "", err
	}
	if err := c.ChangeInvisibleTime(ctx, m, d); err != nil {
		return "", err
	}
	return m.ReceiptHandle, nil
}

// DeadLetterReceipt moves the message a receipt handle stands for to the
// group's dead-letter topic (%DLQ%group) at once and acknowledges it:
// commitLogOffset and msgID are the popped message's (CommitLogOffset,
// MsgID).
func (c *PopConsumer) DeadLetterReceipt(ctx context.Context, handle string, commitLogOffset int64, msgID string) error {
	m, err := c.receipt(ctx, handle)
	if err != nil {
		return err
	}
	h := protocol.ConsumerSendMsgBackRequestHeader{Offset: commitLogOffset, Group: c.opts.Group, DelayLevel: -1,
		OriginMsgID: msgID, OriginTopic: c.opts.Topic, BrokerName: m.Queue.BrokerName}
	resp, err := c.in.rc.Invoke(ctx, m.addr, protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil))
	if err != nil {
		return fmt.Errorf("client: dead-letter %v@%d: %w", m.Queue, m.QueueOffset, err)
	}
	if resp.Code != protocol.Success {
		return fmt.Errorf("client: dead-letter %v@%d: %w", m.Queue, m.QueueOffset, responseError(m.addr, resp))
	}
	return c.Ack(ctx, m)
}
