package broker

import (
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/samsamq/samsa/protocol"
)

// Timers across a master change. The timer topic replicates with the
// CommitLog; the timer files do not. A slave copies its master's timer
// progress (GET_TIMER_CHECK_POINT, as RocketMQ's
// SlaveSynchronize.syncTimerCheckPoint) into config/timerCheckpoint.json.
// When that broker later runs as a master without timer files of its own,
// it builds its wheel from the whole timer topic, skipping the messages
// the old master had enqueued (queue offset below its masterTimerQueueOffset)
// and delivered (TIMER_OUT_MS before its lastReadTimeMs), and reads slots
// from lastReadTimeMs on: what the old master delivered after the last
// copy is delivered again (at least once), nothing is lost.

// timerWatermark is config/timerCheckpoint.json.
type timerWatermark struct {
	LastReadTimeMs         int64 `json:"lastReadTimeMs"`
	MasterTimerQueueOffset int64 `json:"masterTimerQueueOffset"`
}

func (b *Broker) timerWatermarkFile() jsonFile {
	return jsonFile{fs: b.cfg.FS, path: filepath.Join(b.cfg.ConfigDir(), "timerCheckpoint.json"), rep: b.fileReport()}
}

// processGetTimerCheckPoint answers GET_TIMER_CHECK_POINT (60) with
// RocketMQ's TimerCheckpoint encoding: lastReadTimeMs,
// lastTimerLogFlushPos, lastTimerQueueOffset, masterTimerQueueOffset,
// then the data version (stateVersion, timestamp, counter), 8 bytes each.
func (b *Broker) processGetTimerCheckPoint(c *conn, req *protocol.Command) *protocol.Command {
	body := make([]byte, 56)
	if t := b.timers; t != nil {
		q := t.queuePub.Load()
		binary.BigEndian.PutUint64(body[0:], uint64(t.readPub.Load()))
		binary.BigEndian.PutUint64(body[16:], uint64(q))
		binary.BigEndian.PutUint64(body[24:], uint64(q))
	}
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = body
	return r
}

// syncTimerCheckpoint copies the master's timer progress (a slave's
// metadata sync); a master without timers answers zeros, kept as nothing.
func (s *slaveSync) syncTimerCheckpoint(master string) error {
	resp, err := s.call(master, protocol.NewRequest(protocol.GetTimerCheckPoint, nil, nil))
	if err != nil {
		return err
	}
	if len(resp.Body) < 32 {
		return fmt.Errorf("broker: GET_TIMER_CHECK_POINT from master %s: %d bytes", master, len(resp.Body))
	}
	w := timerWatermark{LastReadTimeMs: int64(binary.BigEndian.Uint64(resp.Body)),
		MasterTimerQueueOffset: int64(binary.BigEndian.Uint64(resp.Body[24:]))}
	if w.LastReadTimeMs <= 0 {
		return nil
	}
	return s.b.timerWatermarkFile().save(w)
}
