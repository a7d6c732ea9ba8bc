package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// scheduleService delivers delay-level messages (RocketMQ's
// ScheduleMessageService). A message sent with DELAY=n is stored once, in
// ScheduleTopic queue n-1 (deferDelivery); each level's loop reads its
// queue in order, and once the head's store time plus the level's delay
// has passed, appends a copy to REAL_TOPIC/REAL_QID (DELAY and the timer
// properties removed; REAL_TOPIC and REAL_QID kept, as RocketMQ keeps
// them) and moves past it. A queue holds one delay, so its messages fall
// due in the order they were stored: the head is the next due.
//
// The deliver time is computed from the record (store time + the level's
// delay now), not kept in the ConsumeQueue's tag hash as RocketMQ does:
// recovery rebuilds tag hashes from TAGS. As RocketMQ, a deliver time
// further than one delay ahead (a clock stepped back, a shorter table) is
// taken as now.
//
// Progress is each level's next queue offset, saved in
// config/delayOffset.json (RocketMQ's DelayOffsetSerializeWrapper) every
// flushDelayOffsetInterval and at Close, each time after the delivered
// copies are flushed (Store.FlushTo), so a saved offset never skips a copy
// that a crash could take back. After a clean stop nothing is delivered
// twice; after a crash what was delivered since the last save is
// delivered again (at least once). On a slave nothing runs: its store
// holds the schedule topic (replicated like any other) and it copies the
// master's table (slave_sync.go), so a slave made master later resumes
// near where the master was.
//
// Goroutines: one per level (started by start on a master, woken by a
// dispatch into its queue, by its head's deliver time, or by stop), and
// the saver (every flushDelayOffsetInterval). Each level's loop owns its
// slot of offsets; the table is read under mu.
type scheduleService struct {
	b      *Broker
	levels []time.Duration // level i+1 waits levels[i]
	file   jsonFile
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

// delayOffsetFile is delayOffset.json.
type delayOffsetFile struct {
	OffsetTable map[int]int64 `json:"offsetTable"`
	DataVersion *DataVersion  `json:"dataVersion,omitempty"`
}

func newScheduleService(b *Broker) (*scheduleService, error) {
	levels, err := parseDelayLevels(b.cfg.MessageDelayLevel)
	if err != nil {
		return nil, err
	}
	s := &scheduleService{b: b, levels: levels,
		file: jsonFile{fs: b.cfg.FS, path: b.cfg.ConfigDir() + "/delayOffset.json", rep: b.fileReport()}}
	s.mu.offsets = make(map[int]int64)
	s.mu.version = DataVersion{Timestamp: b.cfg.Clock().UnixMilli()}
	for range levels {
		s.kick = append(s.kick, make(chan struct{}, 1))
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// load reads delayOffset.json; integer keys written unquoted (RocketMQ's
// fastjson writes {1:5}) are read too. It does not fail: an unreadable file
// is set aside and bad entries (a level below 1, a negative offset) are
// dropped (jsonfile_load.go). The error is for the callers' form.
func (s *scheduleService) load() error {
	var f delayOffsetFile
	raw, found := s.file.loadTolerant(func(b []byte) (err error) {
		f, err = decodeDelayOffsets(b)
		return err
	})
	if !found {
		return nil
	}
	var bad []string
	s.mu.Lock()
	for l, off := range f.OffsetTable {
		if l >= 1 && off >= 0 {
			s.mu.offsets[l] = off
		} else {
			bad = append(bad, fmt.Sprintf("level %d offset %d", l, off))
		}
	}
	if f.DataVersion != nil {
		s.mu.version = *f.DataVersion
	}
	s.mu.Unlock()
	if len(bad) > 0 {
		s.file.dropBad(raw, bad, func() error { return s.file.save(s.table()) })
	}
	return nil
}

// correct clamps each level's offset into its queue's range (RocketMQ's
// correctDelayOffset): a queue cut short by recovery, or trimmed by
// retention.
func (s *scheduleService) correct() {
	st := s.b.store
	s.mu.Lock()
	defer s.mu.Unlock()
	for l, off := range s.mu.offsets {
		if l > len(s.levels) {
			continue
		}
		lo, hi := st.MinQueueOffset(ScheduleTopic, int32(l-1)), st.MaxQueueOffset(ScheduleTopic, int32(l-1))
		if c := min(max(off, lo), hi); c != off {
			s.b.log.Warn("broker: delay level offset outside its queue; corrected", "level", l, "offset", off, "min", lo, "max", hi, "now", c)
			s.mu.offsets[l] = c
		}
	}
}

// table returns a copy of the offsets and the version.
func (s *scheduleService) table() delayOffsetFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := make(map[int]int64, len(s.mu.offsets))
	for l, o := range s.mu.offsets {
		t[l] = o
	}
	v := s.mu.version
	return delayOffsetFile{OffsetTable: t, DataVersion: &v}
}

// adopt replaces the table with the master's (a slave's metadata sync).
func (s *scheduleService) adopt(f delayOffsetFile) error {
	s.mu.Lock()
	if f.DataVersion != nil && *f.DataVersion == s.mu.version {
		s.mu.Unlock()
		return nil
	}
	s.mu.offsets = make(map[int]int64, len(f.OffsetTable))
	for l, o := range f.OffsetTable {
		s.mu.offsets[l] = o
	}
	if f.DataVersion != nil {
		s.mu.version = *f.DataVersion
	}
	s.mu.Unlock()
	return s.file.save(s.table())
}

func (s *scheduleService) offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.offsets[level]
}

func (s *scheduleService) setOffset(level int, off int64) {
	s.mu.Lock()
	s.mu.offsets[level] = off
	s.mu.version.Counter++
	s.mu.version.Timestamp = s.b.cfg.Clock().UnixMilli()
	s.mu.Unlock()
}

// save flushes the delivered copies, then writes delayOffset.json.
func (s *scheduleService) save() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	t := s.table() // before the flush: only offsets whose copies it covers
	if end := s.flushTo.Load(); end > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.b.store.FlushTo(ctx, end)
		cancel()
		if err != nil {
			return err
		}
	}
	return s.file.save(t)
}

// onDispatch wakes the level whose queue got a record.
func (s *scheduleService) onDispatch(topic string, queue int32, _ int64) {
	if topic == ScheduleTopic && int(queue) < len(s.kick) {
		select {
		case s.kick[queue] <- struct{}{}:
		default:
		}
	}
}

// start runs the level loops and the saver (a master only).
func (s *scheduleService) start() {
	s.correct()
	for i := range s.levels {
		s.b.goLoop(func() { s.runLevel(i + 1) })
	}
	s.b.goLoop(s.runSaver)
}

// runSaver saves the table every flushDelayOffsetInterval until stop; the
// last save is Close's (closeSchedule).
func (s *scheduleService) runSaver() {
	t := time.NewTicker(s.b.cfg.FlushDelayOffsetInterval)
	defer t.Stop()
	for {
		select {
		case <-s.b.stop:
			return
		case <-t.C:
			if err := s.save(); err != nil {
				s.b.log.Warn("broker: save delayOffset.json", "err", err)
			}
		}
	}
}

// idleWait is the longest a level sleeps without a reason: a missed
// wake-up costs at most this.
const idleWait = time.Second

// runLevel delivers level's messages as they fall due, until stop.
func (s *scheduleService) runLevel(level int) {
	q := int32(level - 1)
	delay := s.levels[level-1]
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait, head := s.deliverDue(level, q, delay)
		if wait <= 0 {
			continue
		}
		timer.Reset(min(wait, idleWait))
		kick := s.kick[q]
		if head {
			kick = nil // waiting for a stored head: new arrivals fall due after it
		}
		select {
		case <-s.b.stop:
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
func (s *scheduleService) deliverDue(level int, q int32, delay time.Duration) (wait time.Duration, head bool) {
	st := s.b.store
	off := s.offset(level)
	res, err := st.GetMessages(ScheduleTopic, q, off, 32, 1<<20, nil)
	var ce *storage.CorruptRecordError
	switch {
	case errors.As(err, &ce):
		s.b.log.Error("broker: a delayed message is corrupt; skipped", "level", level, "offset", off, "err", err)
		s.setOffset(level, res.NextOffset)
		return 0, false
	case err != nil:
		s.b.log.Warn("broker: read the schedule queue", "level", level, "offset", off, "err", err)
		return 100 * time.Millisecond, false
	}
	switch res.Status {
	case storage.Found:
	case storage.OffsetTooSmall, storage.OffsetOverflowBadly:
		if res.NextOffset == off {
			return idleWait, false
		}
		s.b.log.Warn("broker: delay level offset outside its queue; corrected", "level", level, "offset", off, "next", res.NextOffset)
		s.setOffset(level, res.NextOffset)
		return 0, false
	default:
		return idleWait, false // nothing (more) stored: a dispatch wakes us
	}
	// Consecutive due records go in one AppendBatch (bounded by
	// batchBytes); the offset moves past them once it is stored.
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
			s.b.log.Error("broker: undecodable delayed message; skipped", "level", level, "offset", res.QueueOffsets[i], "err", err)
			next = res.QueueOffsets[i] + 1
			continue
		}
		now := s.b.cfg.Clock()
		due := time.UnixMilli(rec.StoreTimestamp).Add(delay)
		if due.After(now.Add(delay)) {
			due = now // RocketMQ's correctDeliverTimestamp
		}
		if wait := due.Sub(now); wait > 0 {
			if !flush() {
				return 100 * time.Millisecond, true // the store refused: try again
			}
			return wait, true
		}
		if m, ok := s.b.dueMessage(&rec, true); ok {
			if len(batch) > 0 && size+len(raw) > s.b.batchBytes() {
				if !flush() {
					return 100 * time.Millisecond, true
				}
			}
			batch, size = append(batch, m), size+len(raw)
		} else {
			s.b.log.Error("broker: delayed message without REAL_TOPIC/REAL_QID; dropped", "level", level, "phys", rec.PhysOffset)
		}
		next = res.QueueOffsets[i] + 1
	}
	if !flush() {
		return 100 * time.Millisecond, true
	}
	return 0, false
}

// deliver appends due copies to their real topics; false when the store
// refused them (retried).
func (s *scheduleService) deliver(ms []*storage.Message, level int) bool {
	res, err := s.b.store.AppendBatch(context.Background(), ms)
	if errors.Is(err, storage.ErrFenced) {
		return false // controller mode, not master now: the master delivers; retried quietly
	}
	if err != nil && !errors.Is(err, storage.ErrFlushTimeout) {
		s.b.log.Warn("broker: deliver delayed messages", "level", level, "messages", len(ms), "err", err)
		return false
	}
	last := res[len(res)-1]
	for end := last.PhysicalOffset + int64(last.Size); ; { // the levels race: keep the highest
		if cur := s.flushTo.Load(); cur >= end || s.flushTo.CompareAndSwap(cur, end) {
			break
		}
	}
	for _, m := range ms {
		s.b.stats.put(m.Topic, 1, len(m.Body))
	}
	return true
}

// batchBytes bounds a batch of delivered copies: AppendBatch writes a
// batch into one CommitLog segment.
func (b *Broker) batchBytes() int { return int(min(1<<20, b.cfg.MappedFileSizeCommitLog/4)) }

// dueMessage is the copy of a delayed record that goes to its real topic
// (RocketMQ's messageTimeUp / convertMessage): same body, flag, sysflag,
// hosts, born time and reconsume count. A delay level's (keepReal) loses
// DELAY and the timer properties and keeps REAL_TOPIC and REAL_QID; a
// timer's keeps its timer properties and loses REAL_TOPIC and REAL_QID.
func (b *Broker) dueMessage(rec *record.Record, keepReal bool) (*storage.Message, bool) {
	props := record.ParseProperties(rec.UserProperties())
	topic := props[propRealTopic]
	qid, err := strconv.Atoi(props[propRealQueueID])
	if topic == "" || err != nil || qid < 0 {
		return nil, false
	}
	if keepReal {
		delete(props, propDelay)
		delete(props, propTimerDeliverMs)
		delete(props, propTimerDelaySec)
		delete(props, propTimerDelayMs)
	} else {
		delete(props, propRealTopic)
		delete(props, propRealQueueID)
	}
	enc, err := record.EncodeProperties(props)
	if err != nil {
		return nil, false
	}
	return recordCopy(rec, topic, int32(qid), enc), true
}

// recordCopy is a new message with rec's body, flag, sysflag, born time,
// hosts and reconsume count, to topic/queue with props.
func recordCopy(rec *record.Record, topic string, queue int32, props []byte) *storage.Message {
	return &storage.Message{
		Topic:          topic,
		QueueID:        queue,
		Flag:           rec.Flag,
		SysFlag:        rec.SysFlag &^ (record.FlagBornHostV6 | record.FlagStoreHostV6),
		Body:           rec.Body,
		Properties:     props,
		TagsCode:       record.TagsCodeOf(props),
		BornTimestamp:  rec.BornTimestamp,
		BornHost:       rec.BornHost,
		StoreHost:      rec.StoreHost,
		ReconsumeTimes: rec.ReconsumeTimes,
	}
}
