package pop

import (
	"context"
	"slices"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Peek returns up to r.MaxMsgs of what the group's next pop would hand
// out (PEEK_MESSAGE: messages whose invisible time and back-off passed,
// then new ones from its cursor, or where a queue it never popped starts
// by r.InitMode), as stored, changing nothing: nothing becomes invisible,
// no cursor moves, a queue never popped stays so. r.Invisible and r.Poll
// are not used.
func (s *Service) Peek(r *Request) (Result, error) {
	probe := *r
	probe.Invisible, probe.Poll = MinInvisible, 0
	if err := probe.Check(); err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return Result{}, ErrClosed
	}
	now := s.cfg.Now().UnixMilli()
	first, n := r.QueueID, int32(1)
	if first < 0 {
		first, n = 0, r.Queues
	}
	var res Result
	bytes := 0
	for i := int32(0); i < n && len(res.Records) < r.MaxMsgs && bytes < maxBytesPerPop; i++ {
		qid := first + i
		q := s.mu.queues[qkey{r.Group, r.Topic, qid}]
		if q != nil && r.Order && s.heldLocked(q, now) {
			continue
		}
		if q != nil {
			s.peekDueLocked(r, qid, q, now, &res, &bytes)
		}
		if len(res.Records) >= r.MaxMsgs || (q != nil && r.Order && len(q.inflight) > 0) {
			continue
		}
		s.peekNewLocked(r, qid, q, &res, &bytes)
	}
	return res, nil
}

// peekDueLocked adds q's messages visible again, lowest offset first.
func (s *Service) peekDueLocked(r *Request, qid int32, q *queue, now int64, res *Result, bytes *int) {
	var due []int64
	for off, e := range q.inflight {
		if s.visibleAt(e) <= now {
			due = append(due, off)
		}
	}
	slices.Sort(due)
	for _, off := range due {
		if len(res.Records) >= r.MaxMsgs || *bytes >= maxBytesPerPop {
			return
		}
		got, err := s.cfg.Store.GetMessages(r.Topic, qid, off, 1, maxBytesPerPop, nil)
		if err != nil || got.Status != storage.Found || got.QueueOffsets[0] != off {
			continue
		}
		res.add(got.Records[0], qid, off, q.inflight[off].attempts+1)
		*bytes += len(got.Records[0])
	}
}

// peekNewLocked adds what lies from the group's cursor on queue qid (q nil:
// never popped).
func (s *Service) peekNewLocked(r *Request, qid int32, q *queue, res *Result, bytes *int) {
	st := s.cfg.Store
	lo := st.MinQueueOffset(r.Topic, qid)
	var from int64
	if q != nil && q.next >= 0 {
		from = max(q.next, lo)
	} else {
		from = s.startOffset(qkey{r.Group, r.Topic, qid}, lo, st.MaxQueueOffset(r.Topic, qid), r.InitMode == 1)
	}
	got, err := st.GetMessages(r.Topic, qid, from, r.MaxMsgs-len(res.Records), maxBytesPerPop-*bytes, r.TagMatch)
	if err != nil {
		return
	}
	for i, b := range got.Records {
		off := got.QueueOffsets[i]
		if q != nil && q.inflight[off] != nil {
			continue
		}
		if r.Match != nil {
			var rec record.Record
			if record.DecodeUnchecked(b, &rec) != nil || !r.Match(rec.Properties) {
				continue
			}
		}
		res.add(b, qid, off, 0)
		*bytes += len(b)
	}
	res.RestNum += max(0, st.MaxQueueOffset(r.Topic, qid)-from)
}

func (res *Result) add(b []byte, qid int32, off int64, times int32) {
	res.Records = append(res.Records, b)
	res.QueueIDs = append(res.QueueIDs, qid)
	res.Offsets = append(res.Offsets, off)
	res.Times = append(res.Times, times)
}

// Notify reports whether the group has something to pop (NOTIFICATION),
// waiting up to r.Poll for it as a pop would: an arrival on the topic, an
// in-flight message becoming visible again, an acknowledgement freeing an
// ordered queue. ErrPollingFull when too many wait already.
func (s *Service) Notify(ctx context.Context, r *Request) (bool, error) {
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
	probe := *r
	probe.MaxMsgs = 1
	for {
		res, err := s.Peek(&probe)
		if err != nil || len(res.Records) > 0 || r.Poll == 0 {
			return len(res.Records) > 0, err
		}
		if poll == nil {
			if w = s.addWaiter(r); w == nil {
				return false, ErrPollingFull
			}
			poll = time.NewTimer(r.Poll)
			continue // an arrival between the look and the registration
		}
		var due <-chan time.Time
		var t *time.Timer
		if next := s.nextVisible(r); next > 0 {
			t = time.NewTimer(time.Duration(next-s.cfg.Now().UnixMilli()+1) * time.Millisecond)
			due = t.C
		}
		select {
		case <-w.ch:
		case <-due:
		case <-poll.C:
			res, err := s.Peek(&probe)
			return len(res.Records) > 0, err
		case <-ctx.Done():
			return false, ctx.Err()
		}
		if t != nil {
			t.Stop()
		}
	}
}

// nextVisible is when the first of the group's messages in flight on the
// topic becomes visible again (0: none).
func (s *Service) nextVisible(r *Request) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now().UnixMilli()
	var next int64
	for qid := range r.Queues {
		q := s.mu.queues[qkey{r.Group, r.Topic, qid}]
		if q == nil {
			continue
		}
		for _, e := range q.inflight {
			if at := s.visibleAt(e); at > now && (next == 0 || at < next) {
				next = at
			}
		}
	}
	return next
}

// PollingInfo is how many pops and notifications of group wait on queue
// qid of topic (POLLING_INFO): those waiting on that queue or on any of
// the topic's; with qid -1, all of the group's on the topic.
func (s *Service) PollingInfo(group, topic string, qid int32) int {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n := 0
	for w := range s.waiters {
		if w.group == group && w.topic == topic && (qid < 0 || w.qid < 0 || w.qid == qid) {
			n++
		}
	}
	return n
}
