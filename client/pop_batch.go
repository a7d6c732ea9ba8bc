package client

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/samsamq/samsa/protocol"
)

// AckReceipts acknowledges the messages many receipt handles stand for:
// one BATCH_ACK_MESSAGE per broker (RocketMQ 5's, a record a batch on the
// broker rather than one a message). It returns an error per handle, nil
// for each acknowledged; when a broker says some of its handles were no
// longer current, or refuses the batch, that broker's handles are
// acknowledged one by one, so each error is the handle's own.
func (c *PopConsumer) AckReceipts(ctx context.Context, handles []string) []error {
	errs := make([]error, len(handles))
	type ackKey struct {
		queue, revive  int32
		popTime, invis int64
	}
	type batch struct {
		idx  []int
		offs map[ackKey][]int64
	}
	byBroker := map[string]*batch{}
	for i, h := range handles {
		f := strings.Split(h, " ")
		q, off, err := c.receiptQueue(h)
		if err != nil {
			errs[i] = err
			continue
		}
		pt, err1 := strconv.ParseInt(f[1], 10, 64)
		it, err2 := strconv.ParseInt(f[2], 10, 64)
		rq, err3 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || err3 != nil {
			errs[i] = fmt.Errorf("client: malformed receipt handle %q", h)
			continue
		}
		b := byBroker[q.BrokerName]
		if b == nil {
			b = &batch{offs: map[ackKey][]int64{}}
			byBroker[q.BrokerName] = b
		}
		k := ackKey{queue: int32(q.QueueID), revive: int32(rq), popTime: pt, invis: it}
		b.idx = append(b.idx, i)
		b.offs[k] = append(b.offs[k], off)
	}
	for broker, b := range byBroker {
		body := protocol.BatchAckMessageRequestBody{BrokerName: broker}
		for k, offs := range b.offs {
			start := offs[0]
			for _, o := range offs {
				start = min(start, o)
			}
			var bits []byte
			for _, o := range offs {
				n := int(o - start)
				for len(bits) <= n/8 {
					bits = append(bits, 0)
				}
				bits[n/8] |= 1 << (n % 8)
			}
			body.Acks = append(body.Acks, protocol.BatchAck{ConsumerGroup: c.opts.Group, Topic: c.opts.Topic, Retry: "0",
				StartOffset: start, QueueID: k.queue, ReviveQueueID: k.revive, PopTime: k.popTime, InvisibleTime: k.invis, BitSet: bits})
		}
		if c.batchAck(ctx, broker, body) {
			continue
		}
		for _, i := range b.idx { // some stale, or refused: one by one
			errs[i] = c.AckReceipt(ctx, handles[i])
		}
	}
	return errs
}

// batchAck sends one broker's batch; true when every message in it was
// acknowledged.
func (c *PopConsumer) batchAck(ctx context.Context, broker string, body protocol.BatchAckMessageRequestBody) bool {
	addr, err := c.in.queueAddr(ctx, MessageQueue{Topic: c.opts.Topic, BrokerName: broker}, false)
	if err != nil {
		return false
	}
	data, err := protocol.MarshalBody(body)
	if err != nil {
		return false
	}
	resp, err := c.in.rc.Invoke(ctx, addr, protocol.NewRequest(protocol.BatchAckMessage, nil, data))
	return err == nil && resp.Code == protocol.Success && resp.Remark == ""
}
