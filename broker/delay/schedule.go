package delay

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/internal/jsonfile"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// schedule delivers delay-level messages (RocketMQ's
// ScheduleMessageService): each level's loop reads its queue of
// ScheduleTopic in order and, once the head's store time plus the level's
// delay has passed, appends a copy to REAL_TOPIC/REAL_QID and moves past
// it. Progress is each level's next queue offset (offsets.go).
//
// Goroutines: one per level (runLevel; woken by a dispatch into its
// queue, by its head's deliver time, or by stop) and the saver
// (runSaver). Each level's loop owns its slot of offsets; the table is
// read under mu.
type schedule struct {
	cfg    *Config
	levels []time.Duration // level i+1 waits levels[i]
	file   jsonfile.File
	kick   []chan struct{} // per queue, a dispatch into it
	// flushTo is the end of the furthest delivered copy: flushed before
	// the offsets that skip it are saved.
	flushTo atomic.Int64
	saveMu  sync.Mutex // one save at a time
	mu      struct {
		sync.Mutex
		offsets map[int]int64 // level → next queue offset to deliver
		version DataVersion
	}
}

func newSchedule(cfg *Config, levels []time.Duration) (*schedule, error) {
	s := &schedule{cfg: cfg, levels: levels, file: offsetsFile(cfg)}
	s.mu.offsets = make(map[int]int64)
	s.mu.version = DataVersion{Timestamp: cfg.Now().UnixMilli()}
	for range levels {
		s.kick = append(s.kick, make(chan struct{}, 1))
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// onDispatch wakes the level whose queue got a record.
func (s *schedule) onDispatch(topic string, queue int32, _ int64) {
	if topic == ScheduleTopic && int(queue) < len(s.kick) {
		select {
		case s.kick[queue] <- struct{}{}:
		default:
		}
	}
}

// idleWait is the longest a loop sleeps without a reason: a missed
// wake-up costs at most this.
const idleWait = time.Second

// retryWait is how long a loop waits after the store refused a read or
// an append.
const retryWait = 100 * time.Millisecond

// runLevel delivers level's messages as they fall due, until stop.
func (s *schedule) runLevel(level int, stop <-chan struct{}) {
	q := int32(level - 1)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait, head := s.deliverDue(level)
		if wait <= 0 {
			continue
		}
		timer.Reset(min(wait, idleWait))
		kick := s.kick[q]
		if head {
			kick = nil // waiting for a stored head: new arrivals fall due after it
		}
		select {
		case <-stop:
			return
		case <-kick:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// deliverDue delivers what is due at the head of the level's queue and
// says how long to wait before looking again (0: look again now); head
// says the wait is for a stored message to fall due.
//
// The deliver time is computed from the record (store time + the level's
// delay now), not kept in the ConsumeQueue's tag hash as RocketMQ does:
// recovery rebuilds tag hashes from TAGS. As RocketMQ, a deliver time
// further than one delay ahead (a clock stepped back, a shorter table) is
// taken as now.
func (s *schedule) deliverDue(level int) (wait time.Duration, head bool) {
	st := s.cfg.Store
	q, delay := int32(level-1), s.levels[level-1]
	off := s.offset(level)
	res, err := st.GetMessages(ScheduleTopic, q, off, 32, 1<<20, nil)
	var ce *storage.CorruptRecordError
	switch {
	case errors.As(err, &ce):
		s.cfg.Logger.Error("broker: a delayed message is corrupt; skipped", "level", level, "offset", off, "err", err)
		s.setOffset(level, res.NextOffset)
		return 0, false
	case err != nil:
		s.cfg.Logger.Warn("broker: read the schedule queue", "level", level, "offset", off, "err", err)
		return retryWait, false
	}
	switch res.Status {
	case storage.Found:
	case storage.OffsetTooSmall, storage.OffsetOverflowBadly:
		if res.NextOffset == off {
			return idleWait, false
		}
		s.cfg.Logger.Warn("broker: delay level offset outside its queue; corrected", "level", level, "offset", off, "next", res.NextOffset)
		s.setOffset(level, res.NextOffset)
		return 0, false
	default:
		return idleWait, false // nothing (more) stored: a dispatch wakes us
	}
	// Consecutive due records go in one AppendBatch (bounded by
	// MaxBatchBytes); the offset moves past them once it is stored.
	var batch []*storage.Message
	size, next := 0, off
	flush := func() bool {
		if len(batch) > 0 && !s.deliver(batch, level) {
			return false
		}
		s.setOffset(level, next)
		batch, size = batch[:0], 0
		return true
	}
	for i, raw := range res.Records {
		var rec record.Record
		if err := record.Decode(raw, record.NoPhys, &rec); err != nil {
			s.cfg.Logger.Error("broker: undecodable delayed message; skipped", "level", level, "offset", res.QueueOffsets[i], "err", err)
			next = res.QueueOffsets[i] + 1
			continue
		}
		now := s.cfg.Now()
		due := time.UnixMilli(rec.StoreTimestamp).Add(delay)
		if due.After(now.Add(delay)) {
			due = now // RocketMQ's correctDeliverTimestamp
		}
		if wait := due.Sub(now); wait > 0 {
			if !flush() {
				return retryWait, true // the store refused: try again
			}
			return wait, true
		}
		if m, ok := dueMessage(&rec, true); ok {
			if len(batch) > 0 && size+len(raw) > s.cfg.MaxBatchBytes {
				if !flush() {
					return retryWait, true
				}
			}
			batch, size = append(batch, m), size+len(raw)
		} else {
			s.cfg.Logger.Error("broker: delayed message without REAL_TOPIC/REAL_QID; dropped", "level", level, "phys", rec.PhysOffset)
		}
		next = res.QueueOffsets[i] + 1
	}
	if !flush() {
		return retryWait, true
	}
	return 0, false
}

// deliver appends due copies to their real topics; false when the store
// refused them (retried).
func (s *schedule) deliver(ms []*storage.Message, level int) bool {
	res, err := s.cfg.Store.AppendBatch(context.Background(), ms)
	if errors.Is(err, storage.ErrFenced) {
		return false // controller mode, not master now: the master delivers; retried quietly
	}
	if err != nil && !errors.Is(err, storage.ErrFlushTimeout) {
		s.cfg.Logger.Warn("broker: deliver delayed messages", "level", level, "messages", len(ms), "err", err)
		return false
	}
	last := res[len(res)-1]
	for end := last.PhysicalOffset + int64(last.Size); ; { // the levels race: keep the highest
		if cur := s.flushTo.Load(); cur >= end || s.flushTo.CompareAndSwap(cur, end) {
			break
		}
	}
	for _, m := range ms {
		s.cfg.Delivered(m.Topic, len(m.Body))
	}
	return true
}
