package broker

import (
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// handleViewMessage answers VIEW_MESSAGE_BY_ID (33): the stored record at
// a commit-log offset (the offset half of an offset message id), as it lies
// in the log.
func (b *Broker) handleViewMessage(c *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.ViewMessageRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	rec, raw, err := readRecord(b.store, h.Offset)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("can not find message by the offset, %d: %v", h.Offset, err))
	}
	if h.Topic != "" && string(rec.Topic) != h.Topic {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("the message at offset %d is not of topic %s", h.Offset, h.Topic))
	}
	if b.acl != nil {
		if r := b.aclCheckTopic(c, req, string(rec.Topic)); r != nil {
			return r
		}
	}
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = raw
	return r
}
