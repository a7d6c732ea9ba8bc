package storage

import (
	"errors"
	"fmt"

	"github.com/samsamq/samsa/storage/consumequeue"
)

// runDispatcher is the dispatcher goroutine: it takes the records appended
// since its last round (in log order, from the append lock's queue), adds
// their ConsumeQueue entries, then runs the OnDispatch callbacks. It owns
// dispatched, dispatchOK and the held records (dispatch_retry.go). Woken by
// each append's kick and by the retry timer while records are held; exits
// when Close closes stop.dispatcher, after indexing everything written.
func (s *Store) runDispatcher() {
	defer s.wg.Done()
	var spare []dispatchReq
	for {
		// Under dispatchMu: a lone writer's own round (lone.go) may arm
		// the retry timer; it kicks this loop when it does.
		s.dispatchMu.Lock()
		retry := s.hold.retryC()
		s.dispatchMu.Unlock()
		select {
		case <-s.dispatchKick:
			s.dispatchRound(&spare)
		case <-retry:
			s.dispatchMu.Lock()
			s.hold.due = true
			s.dispatchRoundLocked(&spare)
			s.dispatchMu.Unlock()
		case <-s.stop.dispatcher:
			s.dispatchRound(&spare)
			return
		}
	}
}

// dispatchRound indexes the written records below the visible limit
// (visibleLimit: the acknowledgement level's offset), carrying the rest
// to a later round.
func (s *Store) dispatchRound(spare *[]dispatchReq) {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	s.dispatchRoundLocked(spare)
}

// dispatchRoundLocked is dispatchRound; callers hold dispatchMu.
func (s *Store) dispatchRoundLocked(spare *[]dispatchReq) {
	s.mu.Lock()
	fresh := s.mu.dispatch
	s.mu.dispatch = (*spare)[:0]
	written := s.written.Load() // everything below is in fresh, the carry or earlier rounds
	s.mu.Unlock()
	// Read after written: a limit is always a record boundary at or below it.
	upTo := min(s.visibleLimit(), written)
	// Records not yet visible from earlier rounds go first; with none
	// (the usual case) the round works in fresh itself, copying nothing.
	carried := len(s.carry) > 0
	all := fresh
	if carried {
		all = append(s.carry, fresh...)
		clear(fresh)
	}
	n := 0
	for n < len(all) && all[n].phys+int64(all[n].size) <= upTo {
		n++
	}
	batch := all[:n]
	var cbs []func(string, int32, int64)
	if p := s.callbacks.Load(); p != nil {
		cbs = *p
	}
	s.retryHeld(cbs, false)
	for i := range batch {
		r := &batch[i]
		if r.indexed {
			s.dispatchOne(r, cbs) // indexes it, or holds it for a retry
		}
		s.putTaken(r)
		*r = dispatchReq{}
	}
	// Once a round: the checkpoint, its only reader that matters, may
	// see the round's start meanwhile, which is below what it indexed.
	s.dispatchOK.Store(s.dispatchFloor(upTo))
	s.dispatched.Store(upTo)
	s.indexKeys(upTo) // the message key index (keyindex.go)
	// Keep the records not yet visible, in order, for the next round.
	if carried { // all is the carry's array
		m := copy(all, all[n:])
		clear(all[m:])
		s.carry = all[:m]
	} else {
		s.carry = append(s.carry, all[n:]...)
		clear(all[n:])
	}
	*spare = fresh[:0]
}

// index appends r's ConsumeQueue entry.
func (s *Store) index(r *dispatchReq) error {
	if err := s.appendEntry(r); err != nil {
		return fmt.Errorf("storage: index %s/%d offset %d: %w", r.topic, r.qid, r.qoff, err)
	}
	return nil
}

// appendEntry appends r's entry to its ConsumeQueue. A queue with no file
// yet whose first record has an offset above 0 starts at it, when the log
// does not begin at 0: a replica that began at a later segment base
// (ResetTo) meets queues whose earlier records lie below its log
// (AppendReplicated accepted the offset).
func (s *Store) appendEntry(r *dispatchReq) error {
	q := s.cq.Queue(r.topic, r.qid)
	err := q.Append(r.qoff, r.phys, r.size, r.tags)
	if errors.Is(err, consumequeue.ErrGap) && q.MaxOffset() == 0 && s.CommitLogMinOffset() > 0 {
		if q.StartAt(r.qoff) == nil {
			err = q.Append(r.qoff, r.phys, r.size, r.tags)
		}
	}
	return err
}
