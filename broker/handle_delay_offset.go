package broker

import (
	"encoding/json"

	"github.com/samsamq/samsa/protocol"
)

// handleGetAllDelayOffset answers GET_ALL_DELAY_OFFSET (45): the delay
// levels' progress as delayOffset.json holds it (a slave's metadata sync
// copies it from its master, as RocketMQ's SlaveSynchronize does).
func (b *Broker) handleGetAllDelayOffset(c *conn, req *protocol.Command) *protocol.Command {
	body, err := json.Marshal(b.delay.Offsets())
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = body
	return b.ans.bounded(req, r)
}
