package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/samsamq/samsa/protocol"
)

// maxAckSpan bounds the offsets one BatchAck's bit set spans (128 bytes);
// offsets further apart go in another.
const maxAckSpan = 1024

// AckAll acknowledges msgs with one BATCH_ACK_MESSAGE per broker instead
// of an ACK_MESSAGE each. A message whose handle is no longer current
// (handed out again, or acknowledged already) is skipped by the broker,
// as RocketMQ's batch ack skips it: AckAll reports only a failed request.
func (c *PopConsumer) AckAll(ctx context.Context, msgs []*PoppedMessage) error {
	type key struct {
		addr, broker string
		queue        int
		popTime, inv int64
	}
	groups := map[key][]int64{}
	var order []key
	for _, m := range msgs {
		f := strings.Split(m.ReceiptHandle, " ")
		if len(f) < 3 {
			return fmt.Errorf("client: malformed receipt handle %q", m.ReceiptHandle)
		}
		pt, err1 := strconv.ParseInt(f[1], 10, 64)
		inv, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("client: malformed receipt handle %q", m.ReceiptHandle)
		}
		k := key{m.addr, m.Queue.BrokerName, m.Queue.QueueID, pt, inv}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], m.QueueOffset)
	}
	bodies := map[string]*protocol.BatchAckMessageRequestBody{}
	var addrs []string
	for _, k := range order {
		b := bodies[k.addr]
		if b == nil {
			b = &protocol.BatchAckMessageRequestBody{BrokerName: k.broker}
			bodies[k.addr] = b
			addrs = append(addrs, k.addr)
		}
		offs := groups[k]
		slices.Sort(offs)
		for len(offs) > 0 {
			a := protocol.BatchAck{ConsumerGroup: c.opts.Group, Topic: c.opts.Topic, Retry: "0", StartOffset: offs[0],
				QueueID: int32(k.queue), PopTime: k.popTime, InvisibleTime: k.inv}
			i := 0
			for ; i < len(offs) && offs[i]-offs[0] < maxAckSpan; i++ {
				d := offs[i] - offs[0]
				for int64(len(a.BitSet)) <= d/8 {
					a.BitSet = append(a.BitSet, 0)
				}
				a.BitSet[d/8] |= 1 << (d % 8)
			}
			b.Acks = append(b.Acks, a)
			offs = offs[i:]
		}
	}
	for _, addr := range addrs {
		body, err := protocol.MarshalBody(bodies[addr])
		if err != nil {
			return fmt.Errorf("client: batch ack: %w", err)
		}
		resp, err := c.in.rc.Invoke(ctx, addr, protocol.NewRequest(protocol.BatchAckMessage, nil, body))
		if err != nil {
			return fmt.Errorf("client: batch ack: %w", err)
		}
		if resp.Code != protocol.Success {
			return fmt.Errorf("client: batch ack: %w", responseError(addr, resp))
		}
	}
	return nil
}
