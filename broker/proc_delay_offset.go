package broker

import (
	"encoding/json"
	"fmt"

	"github.com/samsamq/samsa/broker/internal/jsonfile"
	"github.com/samsamq/samsa/protocol"
)

// processGetAllDelayOffset answers GET_ALL_DELAY_OFFSET (45): the delay
// levels' progress as delayOffset.json holds it (a slave's metadata sync
// copies it from its master, as RocketMQ's SlaveSynchronize does).
func (b *Broker) processGetAllDelayOffset(c *conn, req *protocol.Command) *protocol.Command {
	body, err := json.Marshal(b.sched.table())
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = body
	return b.limitAnswer(req, r)
}

// decodeDelayOffsets reads a delayOffset.json body, also in the form
// RocketMQ's fastjson writes (integer keys without quotes).
func decodeDelayOffsets(b []byte) (delayOffsetFile, error) {
	var f delayOffsetFile
	if err := json.Unmarshal(b, &f); err == nil {
		return f, nil
	}
	if err := json.Unmarshal(jsonfile.QuoteKeys(b), &f); err != nil {
		return f, fmt.Errorf("broker: decode delay offsets: %w", err)
	}
	return f, nil
}

// startSchedule starts the delayed-delivery services on a master.
func (b *Broker) startSchedule() {
	if b.cfg.BrokerRole == Slave {
		return
	}
	b.sched.start()
	if b.timers != nil {
		b.timers.start()
	}
}

// closeSchedule saves the delayed-delivery state once their loops have
// stopped (Close).
func (b *Broker) closeSchedule() error {
	var err error
	if b.cfg.BrokerRole != Slave {
		if e := b.sched.save(); e != nil {
			err = fmt.Errorf("broker: save delayOffset.json: %w", e)
		}
	}
	if b.timers != nil {
		if e := b.timers.close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}
