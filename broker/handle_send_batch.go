package broker

import (
	"context"
	"strings"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// handleSendBatch answers SEND_BATCH_MESSAGE (320): the body holds
// several messages (decodeBatch) for one topic and queue, stored with one
// AppendBatch: contiguous, under one lock, one durability wait. The
// header's properties, if any, are added to every message's (RocketMQ's
// MessageExtBatch encoder does the same). A batch over maxMessageSize, or
// one whose answer would not fit a frame, is refused before anything is
// stored (batch_limits.go).
func (b *Broker) handleSendBatch(c *conn, req *protocol.Command) *protocol.Command {
	if r := b.repl.refuseSendOnSlave(req); r != nil {
		return r
	}
	h, err := protocol.DecodeSendMessageRequest(req)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "bad send header: "+err.Error())
	}
	if strings.HasPrefix(h.Topic, RetryGroupPrefix) {
		return protocol.NewResponse(req, protocol.MessageIllegal, "batch request does not support retry group "+h.Topic)
	}
	if txn.IsPrepared(h.SysFlag, nil) {
		return protocol.NewResponse(req, protocol.MessageIllegal, "batch message does not support transaction")
	}
	if r := b.refuseBatchBody(req); r != nil {
		return r
	}
	if r := refuseBatchCount(req); r != nil {
		return r
	}
	if batchDelayed(h.Properties) {
		return protocol.NewResponse(req, protocol.MessageIllegal, "a batch cannot have a delay level (DELAY)")
	}
	items, err := decodeBatch(req.Body, b.cfg.MaxMessageSize)
	if err != nil {
		return protocol.NewResponse(req, protocol.MessageIllegal, err.Error())
	}
	if r := b.refuseBatchAnswer(req, len(items)); r != nil {
		return r
	}
	_, queue, refuse := b.sendTarget(req, h)
	if refuse != nil {
		b.stats.sendErrors.Add(1)
		return refuse
	}
	born := c.bornHost()
	msgs := make([]*storage.Message, len(items))
	bodyBytes := 0
	for i, it := range items {
		props := it.Properties
		if h.Properties != "" {
			props = joinProperties(props, h.Properties)
		}
		msgs[i] = &storage.Message{
			Topic:         h.Topic,
			QueueID:       queue,
			Flag:          it.Flag,
			SysFlag:       h.SysFlag,
			Body:          it.Body,
			Properties:    props,
			TagsCode:      record.TagsCodeOf(props),
			BornTimestamp: h.BornTimestamp,
			BornHost:      born,
			StoreHost:     b.storeHost,
		}
		bodyBytes += len(it.Body)
	}
	res, err := b.store.AppendBatch(context.Background(), msgs)
	return b.sendResponse(req, h.Topic, queue, bodyBytes, res, err)
}

// joinProperties appends extra pairs to props, adding the separator props
// may lack.
func joinProperties(props []byte, extra string) []byte {
	out := make([]byte, 0, len(props)+1+len(extra))
	out = append(out, props...)
	if len(out) > 0 && out[len(out)-1] != record.PropertySeparator {
		out = append(out, record.PropertySeparator)
	}
	return append(out, extra...)
}
