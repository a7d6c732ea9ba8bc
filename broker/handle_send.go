package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"unsafe"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// handleSend answers SEND_MESSAGE (10) and SEND_MESSAGE_V2 (310): one
// message, appended to the store. With SYNC_FLUSH the answer waits until
// the record is durable; FLUSH_DISK_TIMEOUT when that takes longer than
// syncFlushTimeout (the record is stored and may yet become durable). A
// SYNC_MASTER then waits for its slaves (sendResponse). A slave refuses
// every send with SERVICE_NOT_AVAILABLE (slave.go).
func (b *Broker) handleSend(c *conn, req *protocol.Command) *protocol.Command {
	m, resp := b.prepareSend(c, req)
	if resp != nil {
		return resp
	}
	var res storage.AppendResult
	var err error
	if b.appends != nil {
		res, err = b.appends.append(m)
	} else {
		res, err = b.store.Append(context.Background(), m)
	}
	topic, queue := answerTarget(m)
	return b.sendResponse(req, topic, queue, len(req.Body), []storage.AppendResult{res}, err)
}

// prepareSend checks a single send and makes its message, or gives the
// answer instead (a refusal, or a batch's whole answer).
func (b *Broker) prepareSend(c *conn, req *protocol.Command) (*storage.Message, *protocol.Command) {
	if r := b.repl.refuseSendOnSlave(req); r != nil {
		return nil, r
	}
	h, err := protocol.DecodeSendMessageRequest(req)
	if err != nil {
		return nil, protocol.NewResponse(req, protocol.SystemError, "bad send header: "+err.Error())
	}
	if h.Batch || req.Code == protocol.SendBatchMessage {
		return nil, b.handleSendBatch(c, req)
	}
	if len(req.Body) > b.cfg.MaxMessageSize {
		return nil, protocol.NewResponse(req, protocol.MessageIllegal, "message body of "+itoa(len(req.Body))+
			" bytes exceeds maxMessageSize "+itoa(b.cfg.MaxMessageSize))
	}
	topic, reconsume := h.Topic, h.ReconsumeTimes
	if strings.HasPrefix(topic, RetryGroupPrefix) {
		maxTimes := int32(b.cfg.MaxReconsumeTimes)
		if h.HasMaxReconsumeTimes {
			maxTimes = h.MaxReconsumeTimes
		}
		if reconsume >= maxTimes {
			// Retried too often: to the group's dead-letter queue
			// (RocketMQ's handleRetryAndDLQ).
			group := strings.TrimPrefix(topic, RetryGroupPrefix)
			dlq := DLQGroupPrefix + group
			if _, created, err := b.topics.createIfMissing(dlq, 1, PermRead|PermWrite); err != nil {
				return nil, protocol.NewResponse(req, protocol.SystemError, "create dead-letter topic: "+err.Error())
			} else if created {
				b.reg.topicsChanged()
			}
			h.Topic, h.QueueID = dlq, 0
		}
	}
	_, queue, refuse := b.sendTarget(req, h)
	if refuse != nil {
		b.stats.sendErrors.Add(1)
		return nil, refuse
	}
	// The store only reads Properties: no copy of the decoded string.
	props := unsafe.Slice(unsafe.StringData(h.Properties), len(h.Properties))
	m := &storage.Message{
		Topic:          h.Topic,
		QueueID:        queue,
		Flag:           h.Flag,
		SysFlag:        h.SysFlag,
		Body:           req.Body,
		Properties:     props,
		TagsCode:       record.TagsCodeOf(props),
		BornTimestamp:  h.BornTimestamp,
		BornHost:       c.bornHost(),
		StoreHost:      b.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
	}
	if txn.IsPrepared(h.SysFlag, props) {
		txn.ToHalf(m, h.ProducerGroup) // package txn; its delay applies when it is committed
	} else if r := deferDelivery(b.delay, req, m); r != nil { // a delay level or a timer (delay_wiring.go)
		b.stats.sendErrors.Add(1)
		return nil, r
	}
	return m, nil
}

// sendResponse answers a stored single message or batch: SUCCESS,
// FLUSH_DISK_TIMEOUT (stored, durability unknown), SLAVE_NOT_AVAILABLE or
// FLUSH_SLAVE_TIMEOUT (a SYNC_MASTER's slaves do not hold it; stored), or
// the store's refusal. On a SYNC_MASTER it first waits for the slaves
// (replicaStatus), on the caller's goroutine, even after a flush timeout;
// a replica failure wins over FLUSH_DISK_TIMEOUT, as in RocketMQ (4.x
// handleHA runs after handleDiskFlush and overwrites its status; 5.x
// combines the two futures the same way).
func (b *Broker) sendResponse(req *protocol.Command, topic string, queue int32, bodyBytes int,
	res []storage.AppendResult, err error) *protocol.Command {
	r, replicate := b.appendResponse(req, topic, queue, bodyBytes, res, err)
	if replicate {
		if c, remark := b.repl.replicaStatus(res); c != protocol.Success {
			r.Code, r.Remark = c, remark
		}
	}
	return r
}

// appendResponse is sendResponse before the wait for slaves: the answer
// the append alone gives, and whether the records are stored on a
// SYNC_MASTER, so that the answer is final only once the slaves' outcome
// (replicaStatus, or the inline path's replication callback) has replaced
// its code when that is not SUCCESS.
func (b *Broker) appendResponse(req *protocol.Command, topic string, queue int32, bodyBytes int,
	res []storage.AppendResult, err error) (r *protocol.Command, replicate bool) {
	flushTimeout := errors.Is(err, storage.ErrFlushTimeout) && len(res) > 0 && res[0].Size > 0
	if err != nil && !flushTimeout {
		b.stats.sendErrors.Add(1)
		return errorResponse(req, err), false
	}
	code, remark := protocol.Success, ""
	if flushTimeout {
		b.stats.flushTimeout.Add(1)
		code, remark = protocol.FlushDiskTimeout, "stored, but not flushed to disk within syncFlushTimeout "+b.cfg.SyncFlushTimeout.String()
	}
	b.stats.put(topic, len(res), bodyBytes)
	rh := &protocol.SendMessageResponseHeader{MsgID: offsetMsgIDs(b.storeHost, res), QueueID: queue, QueueOffset: res[0].QueueOffset,
		MsgRegion: "DefaultRegion", TraceOn: "true"}
	r = protocol.NewResponse(req, code, remark)
	r.Header = rh
	return r, b.cfg.BrokerRole == SyncMaster && len(res) > 0
}

// offsetMsgIDs is the comma-separated offsetMsgID of each result, built
// in one allocation.
func offsetMsgIDs(host netip.AddrPort, res []storage.AppendResult) string {
	const idLen = 32
	buf := make([]byte, 0, len(res)*(idLen+1))
	var raw [16]byte
	ip := host.Addr().As4()
	copy(raw[:4], ip[:])
	binary.BigEndian.PutUint32(raw[4:], uint32(host.Port()))
	for i, r := range res {
		if i > 0 {
			buf = append(buf, ',')
		}
		binary.BigEndian.PutUint64(raw[8:], uint64(r.PhysicalOffset))
		for _, c := range raw {
			buf = append(buf, upperHex[c>>4], upperHex[c&0xF])
		}
	}
	return unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not touched again
}

const upperHex = "0123456789ABCDEF"
