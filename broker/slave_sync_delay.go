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
	if err := s.adoptDelayOffsets(resp.Body); err != nil {
		return fmt.Errorf("broker: GET_ALL_DELAY_OFFSET from master %s: %w", master, err)
	}
	return nil
}

// syncTimerCheckpoint copies the master's timer progress (a slave's
// metadata sync; package delay's timer_sync.go says why); a master without
// timers answers zeros, kept as nothing.
func (s *slaveSync) syncTimerCheckpoint(master string) error {
	resp, err := s.call(master, protocol.NewRequest(protocol.GetTimerCheckPoint, nil, nil))
	if err != nil {
		return err
	}
	if err := s.adoptTimerCheckpoint(resp.Body); err != nil {
		return fmt.Errorf("broker: GET_TIMER_CHECK_POINT from master %s: %w", master, err)
	}
	return nil
}
