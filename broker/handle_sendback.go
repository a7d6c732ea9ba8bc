package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/samsamq/samsa/broker/delay"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Message properties the retry path reads and writes (RocketMQ's
// MessageConst).
const (
	propRetryTopic      = "RETRY_TOPIC"
	propOriginMessageID = "ORIGIN_MESSAGE_ID"
)

// handleSendBack answers CONSUMER_SEND_MSG_BACK (36): a consumer could
// not process the message at a commit-log offset, so a copy goes to the
// group's retry topic %RETRY%group with its reconsume count raised, or to
// the dead-letter topic %DLQ%group once it was retried maxReconsumeTimes
// (or the client asked with a negative delay level). The retry waits its
// delay level first (RocketMQ's consumerSendMsgBack): the client's level,
// or 3 + the reconsume count when it sent 0 (10 s, 30 s, 1 min, ... with
// the default table), through the schedule topic (package delay). A slave
// refuses it (SYSTEM_ERROR, as RocketMQ 4.x answers a put its slave store
// refused).
func (b *Broker) handleSendBack(c *conn, req *protocol.Command) *protocol.Command {
	if r := b.repl.refuseSendBackOnSlave(req); r != nil {
		return r
	}
	h := &protocol.ConsumerSendMsgBackRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	rec, _, err := readRecord(b.store, h.Offset)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("look message by offset failed, %d: %v", h.Offset, err))
	}
	maxTimes := int32(b.cfg.MaxReconsumeTimes)
	if h.HasMaxReconsumeTimes {
		maxTimes = h.MaxReconsumeTimes
	}
	topic, queue := RetryGroupPrefix+h.Group, int32(0)
	delayLevel := h.DelayLevel
	if rec.ReconsumeTimes >= maxTimes || delayLevel < 0 {
		topic, delayLevel = DLQGroupPrefix+h.Group, 0
	} else if delayLevel == 0 {
		delayLevel = 3 + rec.ReconsumeTimes
	}
	if _, created, err := b.topics.createIfMissing(topic, 1, PermRead|PermWrite); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "create "+topic+": "+err.Error())
	} else if created {
		b.reg.topicsChanged()
	}
	props := record.ParseProperties(rec.UserProperties())
	if props[propRetryTopic] == "" {
		props[propRetryTopic] = string(rec.Topic)
	}
	if props[propOriginMessageID] == "" {
		props[propOriginMessageID] = offsetMsgID(rec.StoreHost, rec.PhysOffset)
	}
	props[propDelay] = strconv.Itoa(int(delayLevel))
	enc, err := record.EncodeProperties(props)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "re-encode properties: "+err.Error())
	}
	m := delay.CopyRecord(rec, topic, queue, enc)
	m.StoreHost, m.ReconsumeTimes = b.storeHost, rec.ReconsumeTimes+1
	if r := deferDelivery(b.delay, req, m); r != nil {
		return r
	}
	res, err := b.store.Append(context.Background(), m)
	if err != nil && !errors.Is(err, storage.ErrFlushTimeout) {
		return errorResponse(req, err)
	}
	if b.repl.waitsForSlaves() {
		// As safe as a send when the slaves are there; when they are not
		// the copy is stored all the same, and a failure answer would only
		// make the client store a second one (RocketMQ answers
		// SYSTEM_ERROR with the put status; we answer as for a flush
		// timeout).
		if code, remark := b.repl.replicaStatus([]storage.AppendResult{res}); code != protocol.Success {
			b.log.Debug("broker: send-back stored without its slave copy", "topic", topic, "code", code, "remark", remark)
		}
	}
	b.stats.put(topic, 1, len(rec.Body))
	return protocol.NewResponse(req, protocol.Success, "")
}

// readRecord reads and decodes the record at a commit-log offset; raw is
// the record as stored (r aliases it).
func readRecord(st *storage.Store, phys int64) (r *record.Record, raw []byte, err error) {
	if phys < st.CommitLogMinOffset() || phys >= st.WrittenOffset() {
		return nil, nil, fmt.Errorf("offset outside the stored log [%d, %d)", st.CommitLogMinOffset(), st.WrittenOffset())
	}
	head, err := st.ReadAt(phys, 8)
	if err != nil {
		return nil, nil, err
	}
	size, _, err := record.Header(head)
	if err != nil {
		return nil, nil, err
	}
	raw, err = st.ReadAt(phys, size)
	if err != nil {
		return nil, nil, err
	}
	r = new(record.Record)
	if err := record.Decode(raw, phys, r); err != nil {
		return nil, nil, err
	}
	return r, raw, nil
}
