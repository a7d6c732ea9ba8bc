package broker

import (
	"github.com/samsamq/samsa/protocol"
)

// handleGetAllConsumerOffset answers GET_ALL_CONSUMER_OFFSET (43): every
// committed offset, as a ConsumerOffsetSerializeWrapper (what a slave
// copies from its master). An empty table is a SUCCESS with an empty body
// object (RocketMQ answers SYSTEM_ERROR "No consumer offset in this
// broker", which its own slave just logs).
func (b *Broker) handleGetAllConsumerOffset(_ *conn, req *protocol.Command) *protocol.Command {
	w := protocol.ConsumerOffsetSerializeWrapper{OffsetTable: b.offsets.All(),
		DataVersion: protocol.DataVersion{Timestamp: b.cfg.Clock().UnixMilli()}}
	return b.bodyResponse(req, w)
}
