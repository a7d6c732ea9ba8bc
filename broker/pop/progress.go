package pop

import (
	"time"
)

// Progress: where a group's POP consumption of a queue stands, kept where
// a new master finds it.
//
// The in-flight state lives in pop.wal on the master alone. A replica
// elected master after a fail-over has none of it, and without more would
// start the group's queues over from their first offset: every message
// the group ever consumed handed out again. So the service commits each
// queue's floor (the lowest offset not acknowledged: the least in flight,
// else the next never handed out) as the group's consumer offset
// (Config.Commit: the broker's offset table, which slaves copy), every
// ProgressInterval and at Close; and a queue the service has no state for
// starts at the committed offset (Config.Committed) when there is one.
// After a fail-over the group then gets again only what was in flight or
// acknowledged within the last interval: at least once, never lost.

// DefaultProgressInterval is Config.ProgressInterval's default.
const DefaultProgressInterval = time.Second

// progress is the committing goroutine, started by New when
// Config.Commit is set.
func (s *Service) progress() {
	defer close(s.prog.done)
	t := time.NewTicker(s.cfg.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-s.prog.stop:
			s.commitFloors()
			return
		case <-t.C:
			s.commitFloors()
		}
	}
}

// floorsCommittedLocked takes every queue's floor as committed: New's,
// over the state pop.wal gave back. Only what moves in this process's life
// is committed, so a replica that restarts holding an old master's
// pop.wal, now a slave, commits nothing from it.
func (s *Service) floorsCommittedLocked() {
	for _, q := range s.mu.queues {
		q.committed = floorOf(q)
	}
}

// floorOf is q's lowest offset not acknowledged: the least in flight,
// else the next never handed out (-1 before the first pop).
func floorOf(q *queue) int64 {
	floor := q.next
	for off := range q.inflight {
		floor = min(floor, off)
	}
	return floor
}

// floorCommit is one queue's floor to commit.
type floorCommit struct {
	k   qkey
	off int64
}

// commitFloors commits every queue's floor that moved since the last
// commit (outside the service's lock).
func (s *Service) commitFloors() {
	s.mu.Lock()
	var todo []floorCommit
	for k, q := range s.mu.queues {
		if q.next < 0 {
			continue
		}
		if floor := floorOf(q); floor != q.committed {
			todo = append(todo, floorCommit{k, floor})
		}
	}
	s.mu.Unlock()
	for _, c := range todo {
		if err := s.cfg.Commit(c.k.group, c.k.topic, c.k.qid, c.off); err != nil {
			s.cfg.Logger.Warn("pop: cannot commit a group's progress", "group", c.k.group, "topic", c.k.topic,
				"queue", c.k.qid, "offset", c.off, "err", err)
			continue
		}
		s.mu.Lock()
		if q := s.mu.queues[c.k]; q != nil {
			q.committed = c.off
		}
		s.mu.Unlock()
	}
}

// startOffset is where a queue the service has no state for starts: the
// group's committed offset if there is one at or above lo, else lo (or
// hi, the queue's end, when the pop asks to start there).
func (s *Service) startOffset(k qkey, lo, hi int64, fromEnd bool) int64 {
	if s.cfg.Committed != nil {
		if off, ok := s.cfg.Committed(k.group, k.topic, k.qid); ok && off >= lo {
			return min(off, hi)
		}
	}
	if fromEnd {
		return hi
	}
	return lo
}

// Resync brings the state pop.wal gave back up to the committed floors,
// as a replica elected master calls it: another master may have consumed
// meanwhile, and what it committed is ahead. Of each queue whose
// committed offset is above its floor, the messages in flight below it
// are dropped (acknowledged elsewhere) and the cursor moves up to it.
// Queues at or above their committed offsets are left as they are.
func (s *Service) Resync() error {
	if s.cfg.Committed == nil {
		return nil
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	for k, q := range s.mu.queues {
		c, ok := s.cfg.Committed(k.group, k.topic, k.qid)
		if !ok || q.next < 0 || c <= floorOf(q) {
			continue
		}
		for off := range q.inflight {
			if off < c {
				s.removeLocked(k, q, off)
			}
		}
		if q.next < c {
			q.next = c
			s.logLocked(kindCursor, k, c, nil)
		}
		q.committed = floorOf(q)
	}
	seq, err := s.pendLocked()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.persist(seq)
}
