package pop

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Check validates a request's bounds (the broker checks names and queues
// against its topics).
func (r *Request) Check() error {
	switch {
	case r.MaxMsgs < 1 || r.MaxMsgs > MaxMsgsPerPop:
		return fmt.Errorf("%w: maxMsgNums %d, want 1 to %d", ErrBadRequest, r.MaxMsgs, MaxMsgsPerPop)
	case r.Invisible < MinInvisible || r.Invisible > MaxInvisible:
		return fmt.Errorf("%w: invisibleTime %d ms, want %d to %d", ErrBadRequest, r.Invisible.Milliseconds(),
			MinInvisible.Milliseconds(), MaxInvisible.Milliseconds())
	case r.Poll < 0 || r.Poll > MaxPoll:
		return fmt.Errorf("%w: pollTime %d ms, want 0 to %d", ErrBadRequest, r.Poll.Milliseconds(), MaxPoll.Milliseconds())
	case r.Queues < 1 || r.QueueID < -1 || r.QueueID >= r.Queues:
		return fmt.Errorf("%w: queueId %d of a topic with %d queues", ErrBadRequest, r.QueueID, r.Queues)
	case r.InitMode != 0 && r.InitMode != 1:
		return fmt.Errorf("%w: initMode %d, want 0 (MIN) or 1 (MAX)", ErrBadRequest, r.InitMode)
	}
	return nil
}

// Pop hands out what is visible for the group, waiting up to r.Poll for
// something when there is nothing (an arrival on the topic or an
// in-flight message's invisible time passing wakes it); ctx ends the
// wait early (the client went away).
func (s *Service) Pop(ctx context.Context, r *Request) (Result, error) {
	if err := r.Check(); err != nil {
		return Result{}, err
	}
	var poll *time.Timer
	var w *waiter
	defer func() {
		if poll != nil {
			poll.Stop()
		}
		if w != nil {
			s.removeWaiter(w)
		}
	}()
	for {
		res, nextDue, err := s.popOnce(r)
		if err != nil || len(res.Records) > 0 || r.Poll == 0 {
			return res, err
		}
		if poll == nil {
			if w = s.addWaiter(r); w == nil {
				return res, ErrPollingFull
			}
			poll = time.NewTimer(r.Poll)
			continue // an arrival between the read and the registration
		}
		var due <-chan time.Time
		var t *time.Timer
		if nextDue > 0 {
			t = time.NewTimer(time.Duration(nextDue-s.cfg.Now().UnixMilli()+1) * time.Millisecond)
			due = t.C
		}
		select {
		case <-w.ch:
		case <-due:
		case <-poll.C:
			res, _, err := s.popOnce(r)
			return res, err
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
		if t != nil {
			t.Stop()
		}
	}
}

// popOnce takes what is visible now; nextDue is when the first of the
// group's messages in flight on the topic becomes visible again (0: none).
func (s *Service) popOnce(r *Request) (res Result, nextDue int64, err error) {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return Result{}, 0, ErrClosed
	}
	if s.mu.err != nil {
		err := s.mu.err
		s.mu.Unlock()
		return Result{}, 0, err
	}
	now := s.cfg.Now().UnixMilli()
	res.PopTime, res.Invisible = now, r.Invisible.Milliseconds()
	first := r.QueueID
	n := int32(1)
	if first < 0 {
		s.mu.rr++
		first, n = int32(s.mu.rr%uint32(r.Queues)), r.Queues
	}
	var start, msgs, order strings.Builder
	bytes := 0
	for i := int32(0); i < n; i++ {
		qid := (first + i) % r.Queues
		k := qkey{r.Group, r.Topic, qid}
		q := s.queueLocked(k.group, k.topic, qid)
		from := len(res.Records)
		// ordered: a queue with a message still invisible is held by
		// whoever popped it; past that, what is left of its batch comes
		// back (in order) before anything new
		held := r.Order && s.heldLocked(q, now)
		if len(res.Records) < r.MaxMsgs && !held {
			s.takeDueLocked(r, k, q, now, &res, &bytes)
		}
		if len(res.Records) < r.MaxMsgs && bytes < maxBytesPerPop && !held && (!r.Order || len(q.inflight) == 0) {
			s.takeNewLocked(r, k, q, now, &res, &bytes)
		}
		if q.next >= 0 {
			res.RestNum += max(0, s.cfg.Store.MaxQueueOffset(r.Topic, qid)-q.next)
		}
		for _, e := range q.inflight {
			if at := s.visibleAt(e); at > now && (nextDue == 0 || at < nextDue) {
				nextDue = at
			}
		}
		if len(res.Records) > from {
			sep(&start)
			sep(&msgs)
			fmt.Fprintf(&start, "0 %d %d", qid, res.Offsets[from])
			fmt.Fprintf(&msgs, "0 %d ", qid)
			for j := from; j < len(res.Records); j++ {
				if j > from {
					msgs.WriteByte(',')
				}
				msgs.WriteString(strconv.FormatInt(res.Offsets[j], 10))
			}
			if r.Order {
				orderCountInfo(&order, qid, res.Offsets[from:], res.Times[from:])
			}
		}
	}
	res.StartOffsetInfo, res.MsgOffsetInfo, res.OrderCountInfo = start.String(), msgs.String(), order.String()
	seq, err := s.pendLocked()
	s.mu.Unlock()
	if err == nil {
		err = s.persist(seq)
	}
	if err != nil {
		return Result{}, 0, err // what was taken stays invisible, and comes back after its time
	}
	return res, nextDue, nil
}

// heldLocked reports whether an ordered queue is held: a message of it is
// in flight and not visible again yet.
func (s *Service) heldLocked(q *queue, now int64) bool {
	for _, e := range q.inflight {
		if s.visibleAt(e) > now {
			return true
		}
	}
	return false
}

// orderCountInfo appends an ordered pop's counts for one queue as
// RocketMQ's ExtraInfoUtil builds them: "0 qo<queue>%<offset> <times>"
// for each message handed out before, then "0 <queue> <least times>".
func orderCountInfo(b *strings.Builder, qid int32, offsets []int64, times []int32) {
	least := int32(0)
	for i, t := range times {
		if t > 0 {
			sep(b)
			fmt.Fprintf(b, "0 qo%d%%%d %d", qid, offsets[i], t)
		}
		if i == 0 || t < least {
			least = t
		}
	}
	sep(b)
	fmt.Fprintf(b, "0 %d %d", qid, least)
}

func sep(b *strings.Builder) {
	if b.Len() > 0 {
		b.WriteByte(';')
	}
}

// takeDueLocked hands out again the messages whose invisible time (and
// back-off) passed, lowest offset first, or sends them to the DLQ past the
// group's max.
func (s *Service) takeDueLocked(r *Request, k qkey, q *queue, now int64, res *Result, bytes *int) {
	var due []int64
	for off, e := range q.inflight {
		if s.visibleAt(e) <= now {
			due = append(due, off)
		}
	}
	slices.Sort(due)
	st := s.statLocked(k.group)
	for _, off := range due {
		if len(res.Records) >= r.MaxMsgs || *bytes >= maxBytesPerPop {
			return
		}
		e := q.inflight[off]
		got, err := s.cfg.Store.GetMessages(k.topic, k.qid, off, 1, maxBytesPerPop, nil)
		if err != nil {
			s.cfg.Logger.Warn("pop: reading a message to hand out again", "group", k.group, "topic", k.topic,
				"queue", k.qid, "offset", off, "err", err)
			continue // it stays in flight; a later pop tries again
		}
		var rec record.Record
		if got.Status != storage.Found || got.QueueOffsets[0] != off || record.DecodeUnchecked(got.Records[0], &rec) != nil {
			s.removeLocked(k, q, off) // retention deleted it: nothing to hand out
			continue
		}
		attempts := e.attempts + 1
		times := rec.ReconsumeTimes + attempts
		if times > s.cfg.MaxReconsume(k.group) {
			if s.deadLetterLocked(k, &rec, times) {
				s.removeLocked(k, q, off)
				st.DeadLetters++
				q.deadLetters++
			}
			continue
		}
		f := rec.Fields()
		f.ReconsumeTimes = times
		size, err := f.Size()
		if err != nil {
			continue
		}
		b := make([]byte, size)
		if _, err := record.Encode(b, &f); err != nil {
			continue
		}
		e.popTime, e.deadline, e.attempts, e.changed = now, now+r.Invisible.Milliseconds(), attempts, false
		s.logLocked(kindPopped, k, off, e)
		st.Redelivered++
		q.redelivered++
		res.Times = append(res.Times, times)
		res.Records = append(res.Records, b)
		res.QueueIDs = append(res.QueueIDs, k.qid)
		res.Offsets = append(res.Offsets, off)
		*bytes += len(b)
	}
}

// takeNewLocked hands out messages from the group's cursor on the queue.
func (s *Service) takeNewLocked(r *Request, k qkey, q *queue, now int64, res *Result, bytes *int) {
	st := s.cfg.Store
	lo := st.MinQueueOffset(k.topic, k.qid)
	if q.next < 0 {
		q.next = s.startOffset(k, lo, st.MaxQueueOffset(k.topic, k.qid), r.InitMode == 1)
		s.logLocked(kindCursor, k, q.next, nil)
	}
	if q.next < lo {
		q.next = lo // retention passed the cursor
		s.logLocked(kindCursor, k, q.next, nil)
	}
	got, err := st.GetMessages(k.topic, k.qid, q.next, r.MaxMsgs-len(res.Records), maxBytesPerPop-*bytes, r.TagMatch)
	if err != nil {
		s.cfg.Logger.Warn("pop: reading a queue", "group", k.group, "topic", k.topic, "queue", k.qid, "offset", q.next, "err", err)
		return
	}
	for i, b := range got.Records {
		if r.Match != nil {
			var rec record.Record
			if record.DecodeUnchecked(b, &rec) != nil || !r.Match(rec.Properties) {
				continue
			}
		}
		off := got.QueueOffsets[i]
		if _, ok := q.inflight[off]; ok {
			continue // cannot be: the cursor is past every offset in flight
		}
		e := &entry{popTime: now, deadline: now + r.Invisible.Milliseconds()}
		q.inflight[off] = e
		s.statLocked(k.group).InFlight++
		s.logLocked(kindPopped, k, off, e)
		res.Times = append(res.Times, 0)
		res.Records = append(res.Records, b)
		res.QueueIDs = append(res.QueueIDs, k.qid)
		res.Offsets = append(res.Offsets, off)
		*bytes += len(b)
	}
	if next := min(got.NextOffset, st.MaxQueueOffset(k.topic, k.qid)); next > q.next {
		q.next = next
		s.logLocked(kindCursor, k, q.next, nil)
	}
}

// removeLocked forgets a message in flight.
func (s *Service) removeLocked(k qkey, q *queue, off int64) {
	if _, ok := q.inflight[off]; !ok {
		return
	}
	delete(q.inflight, off)
	s.statLocked(k.group).InFlight--
	s.logLocked(kindRemoved, k, off, nil)
}

// deadLetterLocked stores rec in the group's DLQ with its reconsume
// times; false when it could not (it stays in flight and is tried again).
func (s *Service) deadLetterLocked(k qkey, rec *record.Record, times int32) bool {
	topic, err := s.cfg.DLQ(k.group)
	if err == nil {
		props := rec.UserProperties()
		if _, ok := record.LookupProperty(props, "RETRY_TOPIC"); !ok {
			props = record.AppendProperty(append([]byte(nil), props...), "RETRY_TOPIC", k.topic)
		}
		m := &storage.Message{Topic: topic, QueueID: 0, Flag: rec.Flag,
			SysFlag: rec.SysFlag &^ (record.FlagBornHostV6 | record.FlagStoreHostV6), Body: rec.Body,
			Properties: props, TagsCode: record.TagsCodeOf(props), BornTimestamp: rec.BornTimestamp,
			BornHost: rec.BornHost, StoreHost: rec.StoreHost, ReconsumeTimes: times}
		_, err = s.cfg.Store.Append(context.Background(), m)
	}
	if err != nil {
		s.cfg.Logger.Warn("pop: storing a dead letter", "group", k.group, "topic", k.topic, "queue", k.qid,
			"offset", rec.QueueOffset, "err", err)
		return false
	}
	return true
}

// OnDispatch is the store's dispatch callback: a message arrived on
// topic; pops waiting on it look again. It never blocks.
func (s *Service) OnDispatch(topic string, _ int32, _ int64) {
	if s.held.Load() == 0 {
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for w := range s.waiters {
		if w.topic == topic {
			wake(w)
		}
	}
}

func wake(w *waiter) {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (s *Service) addWaiter(r *Request) *waiter {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if len(s.waiters) >= s.cfg.MaxHeld {
		return nil
	}
	w := &waiter{topic: r.Topic, group: r.Group, qid: r.QueueID, ch: make(chan struct{}, 1)}
	s.waiters[w] = struct{}{}
	s.held.Add(1)
	return w
}

func (s *Service) removeWaiter(w *waiter) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, ok := s.waiters[w]; ok {
		delete(s.waiters, w)
		s.held.Add(-1)
	}
}

// wakeAll wakes every waiting pop (Close).
func (s *Service) wakeAll() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for w := range s.waiters {
		wake(w)
	}
}
