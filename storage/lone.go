package storage

// A lone sync writer runs its own round.
//
// Group commit hands every sync append to the flusher goroutine and back:
// the appender kicks the flusher, the flusher fsyncs, kicks the dispatcher
// and releases the appender. With many writers those hand-offs are shared
// by a whole group. With one closed-loop writer there is nothing to group,
// and each hand-off that finds the other CPU idle wakes an idle thread
// (a futex wake; about 10 µs on the 2-vCPU VM of PERFORMANCE.md, 7% of a
// write+fdatasync there). So when the last two rounds each released a
// single waiter with nobody queued behind it, and the append's own waiter
// is the only one queued, the appender runs the round itself (flushing,
// releasing its own waiter) and, when no OnDispatch callback is
// registered and no record is held for a retry, indexes what became
// durable, as the dispatcher would. Any other writer that arrives
// meanwhile queues and kicks the flusher as usual, whose round waits for
// flushMu; the round it then runs releases more than one waiter, which
// ends the lone mode until a round finds one writer again.
//
// The trade: an appender in its own round waits for its fsync however long
// it takes. Flush.Timeout and the context bound the wait of appends queued
// for the flusher, not a lone writer's own fsync (Kafka's request handler
// fsyncs inline the same way with flush.messages=1); Flush.NoOwnRound
// turns own rounds off for a store that must answer within Timeout
// whatever the disk does (the broker). A linger (Flush.MinInterval)
// turns them off too: that policy wants the flusher to space fsyncs out.

// ownRound runs the flush round for a lone sync appender whose waiter is
// queued, if it is one (see above); it says whether it did. The caller
// then waits on its waiter as usual: it is released, or was taken by a
// round already under way.
func (s *Store) ownRound() bool {
	if s.opts.Flush.NoOwnRound || s.opts.Flush.MinInterval > 0 || s.loneRun.Load() != 2 || s.pendingN.Load() != 1 || !s.flushMu.TryLock() {
		return false
	}
	moved := s.flushRoundLocked(&s.ownWaiters, nil, false)
	s.flushMu.Unlock()
	s.m.ownRounds.Add(1)
	if moved {
		s.ownDispatchRound()
	}
	return true
}

// ownDispatchRound indexes what a lone writer's round made durable, unless
// callbacks are registered (they would run on the appender's goroutine:
// the broker's long-poll answers), a record is held for a retry (the
// dispatcher's timer owns those), or a dispatch round is running; then it
// kicks the dispatcher.
func (s *Store) ownDispatchRound() {
	if p := s.callbacks.Load(); p != nil && len(*p) > 0 {
		kick(s.dispatchKick)
		return
	}
	if !s.dispatchMu.TryLock() {
		kick(s.dispatchKick)
		return
	}
	if s.hold.n.Load() > 0 || s.hold.needAbort {
		s.dispatchMu.Unlock()
		kick(s.dispatchKick)
		return
	}
	s.dispatchRoundLocked(&s.ownDispatch)
	// A record this round held armed the retry timer: the dispatcher
	// must select on it.
	held := s.hold.n.Load() > 0
	s.dispatchMu.Unlock()
	if held {
		kick(s.dispatchKick)
	}
}
