package delay

import (
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/samsamq/samsa/broker/internal/jsonfile"
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

// watermark is config/timerCheckpoint.json.
type watermark struct {
	LastReadTimeMs         int64 `json:"lastReadTimeMs"`
	MasterTimerQueueOffset int64 `json:"masterTimerQueueOffset"`
}

func watermarkFile(cfg *Config) jsonfile.File {
	return jsonfile.File{FS: cfg.FS, Path: filepath.Join(cfg.ConfigDir, "timerCheckpoint.json"), Report: report(cfg)}
}

// TimerCheckpoint is the timer progress as GET_TIMER_CHECK_POINT answers
// it, RocketMQ's TimerCheckpoint encoding: lastReadTimeMs,
// lastTimerLogFlushPos, lastTimerQueueOffset, masterTimerQueueOffset, then
// the data version (stateVersion, timestamp, counter), 8 bytes each,
// big-endian. Zeros without timers, or before the wheel is opened.
func (s *Service) TimerCheckpoint() []byte {
	body := make([]byte, 56)
	if t := s.timers; t != nil {
		q := t.queuePub.Load()
		binary.BigEndian.PutUint64(body[0:], uint64(t.readPub.Load()))
		binary.BigEndian.PutUint64(body[16:], uint64(q))
		binary.BigEndian.PutUint64(body[24:], uint64(q))
	}
	return body
}

// AdoptTimerCheckpoint keeps the master's timer progress (a
// GET_TIMER_CHECK_POINT body: a slave's metadata sync) in
// timerCheckpoint.json; a master without timers answers zeros, kept as
// nothing.
func (s *Service) AdoptTimerCheckpoint(body []byte) error {
	if len(body) < 32 {
		return fmt.Errorf("%d bytes", len(body))
	}
	w := watermark{LastReadTimeMs: int64(binary.BigEndian.Uint64(body)),
		MasterTimerQueueOffset: int64(binary.BigEndian.Uint64(body[24:]))}
	if w.LastReadTimeMs <= 0 {
		return nil
	}
	return watermarkFile(&s.cfg).Save(w)
}
