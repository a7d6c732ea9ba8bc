package pop

import "fmt"

// Handle names the message an ACK_MESSAGE or CHANGE_MESSAGE_INVISIBLETIME
// is about: the header's group, topic, queue and offset, and the receipt
// handle a pop gave.
type Handle struct {
	Group, Topic string
	QueueID      int32
	Offset       int64
	Extra        string
}

// check parses the handle and checks it against the header's fields and
// this broker.
func (s *Service) check(h *Handle) (ExtraInfo, error) {
	e, err := ParseExtraInfo(h.Extra)
	if err != nil {
		return e, err
	}
	switch {
	case e.QueueID != h.QueueID:
		return e, fmt.Errorf("%w: extraInfo names queue %d, the request queue %d", ErrBadExtraInfo, e.QueueID, h.QueueID)
	case e.QueueOffset >= 0 && e.QueueOffset != h.Offset:
		return e, fmt.Errorf("%w: extraInfo names offset %d, the request offset %d", ErrBadExtraInfo, e.QueueOffset, h.Offset)
	case e.BrokerName != s.cfg.BrokerName:
		return e, fmt.Errorf("%w: extraInfo names broker %q, this is %q", ErrBadExtraInfo, e.BrokerName, s.cfg.BrokerName)
	case e.Retry != "0":
		return e, fmt.Errorf("%w: extraInfo names a POP retry topic (flag %s); this broker hands out again from the topic itself",
			ErrBadExtraInfo, e.Retry)
	}
	return e, nil
}

// inflightLocked finds the message a handle names, or says why not.
func (s *Service) inflightLocked(h *Handle, e ExtraInfo) (qkey, *queue, *entry, error) {
	k := qkey{h.Group, h.Topic, h.QueueID}
	q := s.mu.queues[k]
	if q == nil {
		return k, nil, nil, fmt.Errorf("%w: group %s never popped queue %d of %s", ErrStale, h.Group, h.QueueID, h.Topic)
	}
	en := q.inflight[h.Offset]
	if en == nil {
		return k, q, nil, fmt.Errorf("%w: offset %d of %s queue %d is not in flight for %s (acknowledged, sent to the DLQ, or never popped)",
			ErrStale, h.Offset, h.Topic, h.QueueID, h.Group)
	}
	if en.popTime != e.PopTime {
		return k, q, nil, fmt.Errorf("%w: offset %d of %s queue %d was handed out again at pop time %d (this handle's is %d)",
			ErrStale, h.Offset, h.Topic, h.QueueID, en.popTime, e.PopTime)
	}
	return k, q, en, nil
}

// Ack acknowledges a message: it is never handed out again.
func (s *Service) Ack(h *Handle) error {
	e, err := s.check(h)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	k, q, _, err := s.inflightLocked(h, e)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.removeLocked(k, q, h.Offset)
	freed := len(q.inflight) == 0
	seq, err := s.pendLocked()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if freed {
		s.OnDispatch(h.Topic, h.QueueID, 0) // an ordered pop held by this queue looks again
	}
	return s.persist(seq)
}

// ChangeInvisible makes a message in flight invisible for ms from now;
// the answer is its new pop time (the old handle is stale from then on).
func (s *Service) ChangeInvisible(h *Handle, ms int64) (popTime int64, err error) {
	if ms < MinInvisible.Milliseconds() || ms > MaxInvisible.Milliseconds() {
		return 0, fmt.Errorf("%w: invisibleTime %d ms, want %d to %d", ErrBadRequest, ms, MinInvisible.Milliseconds(), MaxInvisible.Milliseconds())
	}
	e, err := s.check(h)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	k, _, en, err := s.inflightLocked(h, e)
	if err != nil {
		s.mu.Unlock()
		return 0, err
	}
	now := s.cfg.Now().UnixMilli()
	en.popTime = max(now, en.popTime+1) // a new identity even within one millisecond
	en.deadline = now + ms
	en.changed = true
	s.logLocked(kindPopped, k, h.Offset, en)
	popTime = en.popTime
	seq, err := s.pendLocked()
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return popTime, s.persist(seq)
}

// BatchAck acknowledges the offsets of one queue handed out at popTime
// (BATCH_ACK_MESSAGE): those still in flight with that pop time are
// acknowledged, the rest (stale) counted and left alone, as RocketMQ's
// batch ack skips them.
func (s *Service) BatchAck(group, topic string, qid int32, popTime int64, offsets []int64) (acked, stale int, err error) {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return 0, 0, ErrClosed
	}
	k := qkey{group, topic, qid}
	q := s.mu.queues[k]
	for _, off := range offsets {
		var en *entry
		if q != nil {
			en = q.inflight[off]
		}
		if en == nil || en.popTime != popTime {
			stale++
			continue
		}
		s.removeLocked(k, q, off)
		acked++
	}
	freed := acked > 0 && len(q.inflight) == 0
	seq, err := s.pendLocked()
	s.mu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	if freed {
		s.OnDispatch(topic, qid, 0) // an ordered pop held by this queue looks again
	}
	return acked, stale, s.persist(seq)
}
