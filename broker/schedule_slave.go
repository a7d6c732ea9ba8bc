package broker

import (
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// syncDelayOffsets copies the master's delay-level progress
// (GET_ALL_DELAY_OFFSET) into the slave's delayOffset.json, as RocketMQ's
// SlaveSynchronize.syncDelayOffset does: a slave never delivers, but one
// made master resumes near where its master was.
func (s *slaveSync) syncDelayOffsets(master string) error {
	resp, err := s.call(master, protocol.NewRequest(protocol.GetAllDelayOffset, nil, nil))
	if err != nil {
		return err
	}
	f, err := decodeDelayOffsets(resp.Body)
	if err != nil {
		return fmt.Errorf("broker: GET_ALL_DELAY_OFFSET from master %s: %w", master, err)
	}
	return s.b.sched.adopt(f)
}
