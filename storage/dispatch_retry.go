package storage

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/samsamq/samsa/storage/consumequeue"
)

// A ConsumeQueue append that fails is retried until it succeeds, never
// given up on (a full disk used to stop the queue until a restart
// re-indexed it).
//
// The dispatcher indexes records in log order. When a record's entry
// cannot be appended (ENOSPC, EIO: package consumequeue then leaves the
// queue as it was and takes the same append again later) the record is
// held, and so is every later record of the same queue, so queue offsets
// land in order. Other queues carry on. Held records are retried, oldest
// of each queue first, by the dispatcher: on its retry timer (back-off
// from minRetry, doubling to maxRetry) and on any round once the back-off
// has passed (each successful Append starts a round), and once more by
// Close. A record's OnDispatch callbacks run when its entry lands, so a
// held long-poll is woken then. Recovery hands the records it could not
// re-index to the same list (reindexRecord, adoptHeld).
//
// Invariants:
//   - dispatchOK stays at the first held record: every record below it has
//     its entry. The checkpoint's DISPATCHED is read from it, so recovery
//     re-indexes from there (the entries other queues already hold past it
//     are no-ops then), and retention, bounded by the checkpoint's
//     DISPATCHED, never deletes a held record.
//   - dispatched moves on: every record below it is indexed or held.
//   - While a record is held for lack of space the store is read-only
//     (Append fails with ErrDiskFull; see readonly.go): what waits
//     unreadable is only what was acknowledged before the dispatcher saw the
//     failure, and the held list stays small. A record held for another
//     error (EIO) does not stop appends.
//
// One log line when the first record is held (an outage starts) and one when
// the last lands. Metrics: DispatchErrors (failed attempts), DispatchOutages,
// DispatchHeld (records held now).

const (
	minRetry = time.Millisecond
	maxRetry = 250 * time.Millisecond
)

// dispatchHold is the held records and the retry state. The dispatcher
// goroutine owns it (recovery before the dispatcher starts, Close after it
// exits); n, outages and ro are atomics for Metrics and Append.
type dispatchHold struct {
	queues  map[queueKey][]dispatchReq // per blocked queue, its held records in queue order
	full    bool                       // a held record failed with ENOSPC: the store is read-only
	backoff time.Duration
	lastTry time.Time
	timer   *time.Timer // armed while something waits for a retry
	since   time.Time   // when the outage began
	tries   int64       // failed attempts this outage
	first   error       // the outage's first error

	// needAbort: Open could not create the abort marker (disk full); it is
	// created before appends are let in (readonly.go).
	needAbort bool
	// reserveSpent: the index reserve is not on disk (reserve.go); it is
	// allocated again before appends are let in.
	reserveSpent bool
	// due: the retry timer fired (retry whatever the back-off says).
	due bool
	// badName: a record whose queue cannot exist was skipped (logged once).
	badName bool

	// ckptFull, cqFlushFull: the background checkpoint (its ConsumeQueue
	// flush) failed for lack of space and said so once (logOnceFull).
	ckptFull, cqFlushFull atomic.Bool

	n       atomic.Int64 // records held
	outages atomic.Int64
	ro      atomic.Int32 // read-only reasons (readonly.go)
}

// retryC is the channel of the retry timer, nil when nothing waits.
func (h *dispatchHold) retryC() <-chan time.Time {
	if h.timer == nil || (h.n.Load() == 0 && !h.needAbort && !h.reserveSpent) {
		return nil
	}
	return h.timer.C
}

// arm (re)starts the retry timer for the current back-off.
func (h *dispatchHold) arm() {
	if h.timer == nil {
		h.timer = time.NewTimer(h.backoff)
		return
	}
	h.timer.Reset(h.backoff)
}

// dispatchOne indexes r and runs the callbacks, or holds r (its queue is
// blocked, or its append fails).
func (s *Store) dispatchOne(r *dispatchReq, cbs []func(string, int32, int64)) {
	k := queueKey{r.topic, r.qid}
	if held, ok := s.hold.queues[k]; ok {
		s.hold.queues[k] = append(held, *r)
		s.hold.n.Add(1)
		return
	}
	if err := s.index(r); err != nil {
		if errors.Is(err, consumequeue.ErrInvalidName) {
			s.skipUnnamable(r, err)
			return
		}
		s.holdFailed(r, err)
		return
	}
	for _, fn := range cbs {
		fn(r.topic, r.qid, r.qoff)
	}
}

// holdFailed holds r, whose append just failed with err, and blocks its
// queue. The first hold of an outage logs it and arms the timer.
func (s *Store) holdFailed(r *dispatchReq, err error) {
	s.m.dispatchErrors.Add(1)
	if s.hold.queues == nil {
		s.hold.queues = make(map[queueKey][]dispatchReq)
	}
	s.hold.queues[queueKey{r.topic, r.qid}] = []dispatchReq{*r}
	if s.hold.n.Add(1) == 1 {
		s.hold.since, s.hold.tries, s.hold.first = time.Now(), 0, err
		s.hold.backoff, s.hold.lastTry = minRetry, time.Now()
		s.hold.outages.Add(1)
		s.log.Error("storage: consume queue append failed; holding the queue's records and retrying until it succeeds",
			"topic", r.topic, "queue", r.qid, "offset", r.qoff, "err", err)
		s.hold.arm()
	}
	s.hold.tries++
	if errors.Is(err, syscall.ENOSPC) && !s.hold.full {
		s.hold.full = true
		s.setReadOnly(roIndex, true)
		s.spendReserve() // the next retry writes into the space it held
	}
}

// retryHeld retries what waits (the abort marker Open could not create,
// then the held records), if the back-off has passed or force. It runs on
// the dispatcher at the start of each round.
func (s *Store) retryHeld(cbs []func(string, int32, int64), force bool) {
	h := &s.hold
	if h.n.Load() == 0 && !h.needAbort && !h.reserveSpent {
		return
	}
	if !force && !h.due && time.Since(h.lastTry) < h.backoff {
		return
	}
	h.due, h.lastTry = false, time.Now()
	if h.needAbort && !s.retryAbortMarker() {
		h.backoff = min(2*h.backoff, maxRetry)
		h.arm()
		return
	}
	var failed error
	for k, rs := range h.queues {
		n := 0
		for n < len(rs) {
			if err := s.index(&rs[n]); err != nil {
				failed = err
				s.m.dispatchErrors.Add(1)
				h.tries++
				break
			}
			for _, fn := range cbs {
				fn(rs[n].topic, rs[n].qid, rs[n].qoff)
			}
			rs[n] = dispatchReq{}
			n++
		}
		h.n.Add(-int64(n))
		if n == len(rs) {
			delete(h.queues, k)
		} else {
			h.queues[k] = rs[n:]
		}
	}
	if failed == nil {
		s.endOutage("storage: consume queues caught up; the held records are indexed")
		if !h.reserveSpent || s.retryReserve() {
			return
		}
	} else if errors.Is(failed, syscall.ENOSPC) && !h.full {
		h.full = true // an outage that began with another error
		s.setReadOnly(roIndex, true)
		s.spendReserve()
	}
	h.backoff = min(2*h.backoff, maxRetry)
	h.arm()
}

// endOutage ends the outage, logging msg, once no record is held.
func (s *Store) endOutage(msg string) {
	h := &s.hold
	if h.n.Load() == 0 && !h.since.IsZero() {
		s.log.Info(msg, "outage", time.Since(h.since).Round(time.Millisecond), "failedAttempts", h.tries, "firstErr", h.first)
		h.since, h.first, h.full = time.Time{}, nil, false
		h.queues = nil // drop the memory the outage grew
		s.setReadOnly(roIndex, false)
	}
}

// dropHeldFrom forgets the held records at or past off (a cut removed
// them from the log); callers hold dispatchMu.
func (s *Store) dropHeldFrom(off int64) {
	h := &s.hold
	for k, rs := range h.queues {
		n := len(rs)
		for n > 0 && rs[n-1].phys >= off {
			n--
		}
		h.n.Add(-int64(len(rs) - n))
		if n == 0 {
			delete(h.queues, k)
		} else {
			h.queues[k] = rs[:n]
		}
	}
	s.endOutage("storage: the held records were cut off the log; the outage ends")
}

// skipUnnamable drops the entry of a record whose topic or queue id cannot
// name a ConsumeQueue directory: no retry can index it, and holding it
// would stop the checkpoint (and retention) for good. Logged once.
func (s *Store) skipUnnamable(r *dispatchReq, err error) {
	s.m.dispatchErrors.Add(1)
	if !s.hold.badName {
		s.hold.badName = true
		s.log.Error("storage: a record's topic cannot name a consume queue; it is stored but not indexed",
			"topic", r.topic, "queue", r.qid, "offset", r.qoff, "err", err)
	}
}

// dispatchFloor is x, or the first held record if that is lower: the
// offset below which every record has its ConsumeQueue entry.
func (s *Store) dispatchFloor(x int64) int64 {
	if s.hold.n.Load() == 0 {
		return x
	}
	for _, rs := range s.hold.queues {
		if len(rs) > 0 {
			x = min(x, rs[0].phys)
		}
	}
	return x
}

// finishHeld is Close's last try (the dispatcher has exited): it returns
// an error if records are still held or the abort marker is still missing
// (wrapping ErrDiskFull when for lack of space); Close then leaves the
// abort marker and the next Open re-indexes them.
func (s *Store) finishHeld() error {
	var cbs []func(string, int32, int64)
	if p := s.callbacks.Load(); p != nil {
		cbs = *p
	}
	s.retryHeld(cbs, true)
	if s.hold.timer != nil {
		s.hold.timer.Stop()
	}
	if s.hold.needAbort {
		return fmt.Errorf("%w: the abort marker could not be created", ErrDiskFull)
	}
	n := s.hold.n.Load()
	if n == 0 {
		return nil
	}
	err := fmt.Errorf("storage: %d records have no consume queue entry yet (the next Open re-indexes them): %w", n, s.hold.first)
	if s.hold.full {
		err = fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}
