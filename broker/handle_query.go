package broker

import (
	"errors"
	"fmt"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// RocketMQ's query limits (MixAll.UNIQUE_MSG_QUERY_FLAG; MessageStoreConfig
// defaultQueryMaxNum and maxMsgsNumBatch).
const (
	uniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"
	defaultQueryMaxNum = 32
	maxMsgsNumBatch    = 64
)

// handleQueryMessage answers QUERY_MESSAGE (12) as RocketMQ's
// QueryMessageProcessor: the messages of a topic whose KEYS hold the key,
// or whose UNIQ_KEY is it, stored in [beginTimestamp, endTimestamp], at
// most maxNum (32 for a unique-key query, which the ext field
// _UNIQUE_KEY_QUERY=true marks; never more than 64), newest first. The
// body is the stored records one after another (MessageDecoder.decodes
// reads it), the header says how far the index is; nothing found is
// QUERY_NOT_FOUND. Every record is checked against the key (a hash
// collision is never served). A slave answers from its own index.
func (b *Broker) handleQueryMessage(_ *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.QueryMessageRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	maxNum := int(h.MaxNum)
	if req.Ext(uniqueKeyQueryFlag) == "true" {
		maxNum = defaultQueryMaxNum
	}
	maxNum = min(maxNum, maxMsgsNumBatch)
	res, err := b.store.QueryByKey(h.Topic, h.Key, maxNum, h.BeginTimestamp, h.EndTimestamp)
	if errors.Is(err, storage.ErrIndexDisabled) {
		return protocol.NewResponse(req, protocol.QueryNotFound, "can not find message: the message index is disabled (messageIndexEnable=false)")
	}
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("query message by key: %v", err))
	}
	rh := (&protocol.QueryMessageResponseHeader{
		IndexLastUpdateTimestamp: res.IndexLastUpdateTimestamp,
		IndexLastUpdatePhyoffset: res.IndexLastUpdatePhyoffset,
	}).Encode()
	if len(res.Records) == 0 {
		return respond(req, protocol.QueryNotFound, "can not find message, maybe time range not correct", rh)
	}
	// The newest records that fit a frame (64 messages of up to
	// maxMessageSize each would not): the rest are left out, as a pull
	// leaves out what does not fit; at least one is always answered.
	n, keep, limit := 0, 0, b.ans.limit()
	for _, r := range res.Records {
		if keep > 0 && n+len(r) > limit {
			break
		}
		n += len(r)
		keep++
	}
	body := make([]byte, 0, n)
	for _, r := range res.Records[:keep] {
		body = append(body, r...)
	}
	resp := respond(req, protocol.Success, "", rh)
	resp.Body = body
	return resp
}
