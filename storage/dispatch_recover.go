package storage

import (
	"errors"
	"fmt"

	"github.com/samsamq/samsa/storage/consumequeue"
)

// reindexRecord appends r's ConsumeQueue entry for recovery (reindex). An
// entry the queue contradicts (ErrConflict, ErrGap, ErrInvalidEntry,
// ErrOffsetTooSmall) is corruption. Any other failure (a full disk, EIO)
// is not: r is held, and so is every later record of its queue, for the
// dispatcher to retry once it runs (dispatch_retry.go; adoptHeld then
// fixes the counters and dispatchOK).
func (s *Store) reindexRecord(r *dispatchReq) error {
	k := queueKey{r.topic, r.qid}
	if held, ok := s.hold.queues[k]; ok {
		s.hold.queues[k] = append(held, *r)
		s.hold.n.Add(1)
		return nil
	}
	err := s.appendEntry(r)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, consumequeue.ErrConflict), errors.Is(err, consumequeue.ErrGap),
		errors.Is(err, consumequeue.ErrInvalidEntry), errors.Is(err, consumequeue.ErrOffsetTooSmall):
		return fmt.Errorf("%w: re-index %s/%d offset %d (record at %d): %w",
			ErrCorrupt, r.topic, r.qid, r.qoff, r.phys, err)
	case errors.Is(err, consumequeue.ErrInvalidName):
		s.skipUnnamable(r, err)
		return nil
	}
	s.holdFailed(r, fmt.Errorf("storage: re-index %s/%d offset %d (record at %d): %w", r.topic, r.qid, r.qoff, r.phys, err))
	return nil
}

// adoptHeld runs at the end of recovery, after the counters are rebuilt
// from the queues and dispatchOK set to the end of the log: a held queue's
// counter continues after its last held record, and dispatchOK stops at
// the first held one.
func (s *Store) adoptHeld() {
	if s.hold.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	s.heldCountersLocked()
	s.mu.Unlock()
	s.dispatchOK.Store(s.dispatchFloor(s.dispatchOK.Load()))
	s.log.Warn("storage: recovery could not re-index every record; the dispatcher retries them",
		"records", s.hold.n.Load(), "queues", len(s.hold.queues), "from", s.dispatchOK.Load())
}

// heldCountersLocked moves each held queue's counter past its last held
// record (they are not in the ConsumeQueue the counters were taken from).
func (s *Store) heldCountersLocked() {
	for k, rs := range s.hold.queues {
		c := s.counterLocked(k.topic, k.qid)
		*c = max(*c, rs[len(rs)-1].qoff+1)
	}
}
