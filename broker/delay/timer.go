package delay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/delay/internal/timerwheel"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// timers delivers timer messages (RocketMQ 5's TimerMessageStore,
// simplified): the loop enqueues each message of TimerTopic queue 0 into
// the disk wheel (package timerwheel: an entry in the timer log, chained
// into the slot of its time) and, when a slot's span begins, reads the
// slot's chain into memory (one slot's worth) and appends each message to
// REAL_TOPIC/REAL_QID at its own time. A slot of more than hotSlot timers
// is not held: it is streamed from the log once it has passed, so it
// costs a batch of memory and is up to a precision late.
//
// Goroutine: one loop (run; woken by a dispatch into the timer topic, by
// the next slot's end, by stop) owns the wheel and the progress fields;
// the stats read the published copies.
type timers struct {
	cfg  *Config
	prec int64
	kick chan struct{}
	// owned by the loop
	wheel     *timerwheel.Wheel
	readMs    int64              // the slot being read (or next to read)
	cur       []timerwheel.Entry // readMs's entries not yet delivered, by due time
	curLoaded bool               // cur holds slot readMs
	queueOff  int64              // next timer-queue offset to enqueue
	flushTo   int64              // end of the last delivered copy
	lastCheck time.Time
	// skipQueue, skipMs: on a wheel built afresh after a master change,
	// messages below queue offset skipQueue due before skipMs were
	// delivered by the old master (timer_sync.go).
	skipQueue, skipMs int64
	// pending is the number of timers enqueued and not yet delivered
	// (stats; approximate across restarts); readPub and queuePub publish
	// readMs and queueOff for the stats and GET_TIMER_CHECK_POINT.
	pending           atomic.Int64
	readPub, queuePub atomic.Int64
}

// hotSlot is the most entries of one slot the loop holds in memory to
// deliver each at its own time; a larger slot is streamed once it has
// passed (up to a precision late). A variable for tests.
var hotSlot = 1 << 16

func newTimers(cfg *Config) *timers {
	return &timers{cfg: cfg, prec: int64(cfg.TimerPrecisionMs), kick: make(chan struct{}, 1)}
}

// open opens the wheel when it exists on disk or the timer topic holds
// something; false when there is nothing to do yet.
func (t *timers) open() (bool, error) {
	if t.wheel != nil {
		return true, nil
	}
	st := t.cfg.Store
	if _, err := t.cfg.FS.Stat(filepath.Join(t.cfg.TimerDir, "timercheck")); err != nil &&
		st.MaxQueueOffset(TimerTopic, 0) == 0 {
		return false, nil
	}
	slots := (int64(t.cfg.TimerMaxDelaySec)*1000)/t.prec + 600_000/t.prec // + 10 min of slack
	w, cp, err := timerwheel.Open(timerwheel.Options{Dir: t.cfg.TimerDir, FS: t.cfg.FS, PrecisionMs: t.prec, Slots: slots})
	if err != nil {
		return false, fmt.Errorf("broker: open the timer wheel: %w", err)
	}
	t.wheel = w
	t.readMs, t.queueOff = cp.ReadMs, max(cp.QueueOffset, w.LastQueueOffset+1)
	if t.readMs == 0 {
		t.readMs = t.cfg.Now().UnixMilli() / t.prec * t.prec
		var wm watermark
		_, found := watermarkFile(t.cfg).LoadTolerant(func(raw []byte) error { return json.Unmarshal(raw, &wm) })
		if found && wm.LastReadTimeMs > 0 && w.End() == 0 {
			t.readMs = wm.LastReadTimeMs / t.prec * t.prec
			t.skipQueue, t.skipMs = wm.MasterTimerQueueOffset, wm.LastReadTimeMs
			t.cfg.Logger.Info("broker: timer wheel built from the timer topic after a master change",
				"lastReadTimeMs", wm.LastReadTimeMs, "masterTimerQueueOffset", wm.MasterTimerQueueOffset)
		}
	}
	if lo := st.MinQueueOffset(TimerTopic, 0); t.queueOff < lo {
		t.queueOff = lo
	}
	t.queueOff = min(t.queueOff, st.MaxQueueOffset(TimerTopic, 0))
	t.lastCheck = time.Now()
	t.readPub.Store(t.readMs)
	t.queuePub.Store(t.queueOff)
	return true, nil
}

func (t *timers) onDispatch(topic string, _ int32, _ int64) {
	if topic == TimerTopic {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

// close writes the clean checkpoint (after the loop stopped).
func (t *timers) close() error {
	if t.wheel == nil {
		return nil
	}
	if err := t.flushDelivered(); err != nil {
		// Closed without a clean checkpoint: the next start rebuilds.
		if cerr := t.wheel.Close(); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	err := t.wheel.Close(timerwheel.Checkpoint{ReadMs: t.readMs, QueueOffset: t.queueOff})
	t.wheel = nil
	return err
}

func (t *timers) run(stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := t.round(stop)
		timer.Reset(max(wait, time.Millisecond))
		select {
		case <-stop:
			return
		case <-t.kick:
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

// round enqueues what arrived, delivers the slots that have passed and
// checkpoints when due; it says how long to sleep.
func (t *timers) round(stop <-chan struct{}) time.Duration {
	ok, err := t.open()
	if err != nil {
		t.cfg.Logger.Error("broker: timer wheel", "err", err)
		return time.Second
	}
	if !ok {
		return idleWait
	}
	busy := false
	if n, err := t.enqueue(); err != nil {
		t.cfg.Logger.Warn("broker: timer enqueue", "err", err)
		return retryWait
	} else if n > 0 {
		busy = true
	}
	wait, err := t.dequeue(busy, stop)
	if err != nil {
		t.cfg.Logger.Warn("broker: timer delivery", "slot", t.readMs, "err", err)
		wait = retryWait
	}
	if time.Since(t.lastCheck) >= t.cfg.TimerFlushInterval {
		if err := t.checkpoint(); err != nil {
			t.cfg.Logger.Warn("broker: timer checkpoint", "err", err)
		}
	}
	if busy {
		return 0
	}
	return wait
}

// dequeue delivers what is due: the current slot's entries whose time has
// come, then later slots as their spans begin. It returns how long until
// the next is due. With busy it stops after one slot, to let enqueueing
// keep up.
func (t *timers) dequeue(busy bool, stop <-chan struct{}) (time.Duration, error) {
	for {
		now := t.cfg.Now().UnixMilli()
		if !t.curLoaded {
			if t.readMs > now {
				return time.Duration(t.readMs-now) * time.Millisecond, nil
			}
			if n, err := t.wheel.SlotCount(t.readMs); err != nil {
				return 0, err
			} else if n > hotSlot {
				// Too many to hold: once the whole slot is due, stream it
				// (newest first), a batch of memory at a time.
				if end := t.readMs + t.prec; end > now {
					return time.Duration(end-now) * time.Millisecond, nil
				}
				if err := t.wheel.Walk(t.readMs, 256, t.deliverEntries); err != nil {
					return 0, err
				}
				t.readMs += t.prec
				t.readPub.Store(t.readMs)
				continue
			}
			es, err := t.wheel.Slot(t.readMs)
			if err != nil {
				return 0, err
			}
			slices.SortStableFunc(es, func(a, b timerwheel.Entry) int { return cmp.Compare(a.ExactMs, b.ExactMs) })
			t.cur, t.curLoaded = es, true
		}
		n := 0
		for n < len(t.cur) && t.cur[n].ExactMs <= now {
			n++
		}
		if n > 0 {
			if err := t.deliverEntries(t.cur[:n]); err != nil {
				return 0, err
			}
			t.cur = t.cur[n:]
		}
		if len(t.cur) > 0 {
			return time.Duration(t.cur[0].ExactMs-now) * time.Millisecond, nil
		}
		if t.readMs+t.prec > now {
			// Timers for this slot may still arrive (enqueue adds them to cur).
			return time.Duration(t.readMs+t.prec-now) * time.Millisecond, nil
		}
		t.readMs += t.prec
		t.readPub.Store(t.readMs)
		t.cur, t.curLoaded = nil, false
		select {
		case <-stop:
			return 0, nil
		default:
		}
		if busy {
			return 0, nil
		}
	}
}

// enqueue moves up to a batch of new timer-topic messages into the wheel
// (or delivers those already due).
func (t *timers) enqueue() (int, error) {
	res, err := t.cfg.Store.GetMessages(TimerTopic, 0, t.queueOff, 256, 4<<20, nil)
	var ce *storage.CorruptRecordError
	if errors.As(err, &ce) {
		t.cfg.Logger.Error("broker: a timer message is corrupt; skipped", "offset", t.queueOff, "err", err)
		t.queueOff = res.NextOffset
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	switch res.Status {
	case storage.Found:
	case storage.OffsetTooSmall, storage.OffsetOverflowBadly:
		t.queueOff = res.NextOffset
		return 0, nil
	default:
		return 0, nil
	}
	var due []*storage.Message
	for i, raw := range res.Records {
		var rec record.Record
		if err := record.Decode(raw, record.NoPhys, &rec); err != nil {
			t.cfg.Logger.Error("broker: undecodable timer message; skipped", "offset", res.QueueOffsets[i], "err", err)
			continue
		}
		v, _ := record.LookupProperty(rec.UserProperties(), propTimerOutMs)
		out, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			t.cfg.Logger.Error("broker: timer message without TIMER_OUT_MS; delivered now", "offset", res.QueueOffsets[i])
		}
		if err == nil && res.QueueOffsets[i] < t.skipQueue && out < t.skipMs {
			continue // the old master delivered it
		}
		slot := out / t.prec * t.prec
		if err != nil || slot < t.readMs || out <= t.cfg.Now().UnixMilli() {
			// Due, or its slot was read already (or it cannot be placed): now.
			if m, ok := t.dueCopy(&rec, -1); ok {
				due = append(due, m)
			}
			continue
		}
		e, err := t.wheel.Add(timerwheel.Entry{DeliverMs: slot, ExactMs: out, Phys: rec.PhysOffset, Size: rec.TotalSize,
			QueueOffset: res.QueueOffsets[i]})
		if err != nil {
			return 0, err
		}
		if slot == t.readMs && t.curLoaded { // the slot being read: into cur too
			j, _ := slices.BinarySearchFunc(t.cur, e, func(a, b timerwheel.Entry) int { return cmp.Compare(a.ExactMs, b.ExactMs+1) })
			t.cur = slices.Insert(t.cur, j, e)
		}
		t.pending.Add(1)
	}
	if err := t.append(due); err != nil {
		return 0, err
	}
	t.queueOff = res.NextOffset
	t.queuePub.Store(t.queueOff)
	return len(res.Records), nil
}

// dueCopy is the delivered copy of a timer record: its timer properties
// kept for the consumer to see, REAL_TOPIC and REAL_QID removed,
// TIMER_ENQUEUE_MS and TIMER_DEQUEUE_MS added, as RocketMQ.
func (t *timers) dueCopy(rec *record.Record, enqueueMs int64) (*storage.Message, bool) {
	m, ok := dueMessage(rec, false)
	if !ok {
		t.cfg.Logger.Error("broker: timer message without REAL_TOPIC/REAL_QID; dropped", "phys", rec.PhysOffset)
		return nil, false
	}
	now := strconv.FormatInt(t.cfg.Now().UnixMilli(), 10)
	if enqueueMs < 0 {
		m.Properties = record.AppendProperty(m.Properties, propTimerEnqueueMs, now)
	} else {
		m.Properties = record.AppendProperty(m.Properties, propTimerEnqueueMs, strconv.FormatInt(enqueueMs, 10))
	}
	m.Properties = record.AppendProperty(m.Properties, propTimerDequeueMs, now)
	return m, true
}

// deliverEntries delivers the timers of entries.
func (t *timers) deliverEntries(entries []timerwheel.Entry) error {
	batch := make([]*storage.Message, 0, min(len(entries), 256))
	bytes := 0
	for _, e := range entries {
		raw, err := t.cfg.Store.ReadAt(e.Phys, e.Size)
		if err != nil {
			t.cfg.Logger.Error("broker: a timer message is gone from the CommitLog; skipped", "phys", e.Phys, "err", err)
			continue
		}
		var rec record.Record
		if err := record.Decode(raw, e.Phys, &rec); err != nil {
			t.cfg.Logger.Error("broker: a timer message is corrupt; skipped", "phys", e.Phys, "err", err)
			continue
		}
		m, ok := t.dueCopy(&rec, e.DeliverMs)
		if !ok {
			continue
		}
		batch = append(batch, m)
		bytes += len(m.Body) + len(m.Properties) + 256
		if len(batch) == 256 || bytes >= t.cfg.MaxBatchBytes {
			if err := t.append(batch); err != nil {
				return err
			}
			batch, bytes = batch[:0], 0
		}
	}
	t.pending.Add(-int64(len(entries)))
	return t.append(batch)
}

// append stores delivered copies; a failure leaves the slot to be read
// again (its earlier copies then twice).
func (t *timers) append(ms []*storage.Message) error {
	if len(ms) == 0 {
		return nil
	}
	res, err := t.cfg.Store.AppendBatch(context.Background(), ms)
	if err != nil && !errors.Is(err, storage.ErrFlushTimeout) {
		return err
	}
	last := res[len(res)-1]
	t.flushTo = last.PhysicalOffset + int64(last.Size)
	for _, m := range ms {
		t.cfg.Delivered(m.Topic, len(m.Body))
	}
	return nil
}

func (t *timers) flushDelivered() error {
	if t.flushTo == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return t.cfg.Store.FlushTo(ctx, t.flushTo)
}

// checkpoint flushes the delivered copies, then the wheel, then records
// progress, and drops log segments wholly read.
func (t *timers) checkpoint() error {
	t.lastCheck = time.Now()
	if err := t.flushDelivered(); err != nil {
		return err
	}
	if err := t.wheel.Checkpoint(timerwheel.Checkpoint{ReadMs: t.readMs, QueueOffset: t.queueOff}); err != nil {
		return err
	}
	_, err := t.wheel.Trim(t.readMs)
	return err
}
