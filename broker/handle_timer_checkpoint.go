package broker

import (
	"github.com/samsamq/samsa/protocol"
)

// handleGetTimerCheckPoint answers GET_TIMER_CHECK_POINT (60) with the
// timer progress in RocketMQ's TimerCheckpoint encoding
// (delay.Service.TimerCheckpoint): a slave's metadata sync copies it.
func (b *Broker) handleGetTimerCheckPoint(c *conn, req *protocol.Command) *protocol.Command {
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = b.delay.TimerCheckpoint()
	return r
}
