package storage

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// waiter is a sync append waiting for durability. Waiters are pooled and
// each owns its channel and timer, so a steady-state Append allocates
// nothing.
//
// Ownership: the appender hands the waiter to the flusher when it enqueues
// it. The flusher releases it (state waiting -> released, then sends the
// result); an appender that gives up first (timeout, context) abandons it
// (waiting -> abandoned) and the flusher puts it back in the pool instead.
type waiter struct {
	end   int64 // CommitLog offset the append needs durable
	done  chan error
	timer *time.Timer
	state atomic.Int32
}

const (
	waiting int32 = iota
	released
	abandoned
)

func newWaiter() *waiter {
	t := time.NewTimer(math.MaxInt64)
	t.Stop()
	return &waiter{done: make(chan error, 1), timer: t}
}

func (s *Store) getWaiter() *waiter { return s.waiters.Get().(*waiter) }

func (s *Store) putWaiter(w *waiter) {
	w.end = 0
	w.state.Store(waiting)
	s.waiters.Put(w)
}

// acquireSlot takes one of MaxPending places in the waiter queue, waiting
// while it is full.
func (s *Store) acquireSlot(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	default:
	}
	s.m.pendingFull.Add(1)
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return ErrClosed
	}
}

// release hands the flush result to w's appender (or recycles an abandoned
// w) and frees its queue slot. Only the flusher calls it.
func (s *Store) release(w *waiter, err error) {
	if w.state.CompareAndSwap(waiting, released) {
		w.done <- err
	} else {
		s.putWaiter(w)
	}
	<-s.sem
}

// wait blocks until the flusher releases w, Flush.Timeout passes or ctx
// ends.
func (s *Store) wait(ctx context.Context, w *waiter) error {
	w.timer.Reset(s.opts.Flush.Timeout)
	var err error
	select {
	case err = <-w.done:
		w.timer.Stop()
		s.putWaiter(w)
		return err
	case <-w.timer.C:
		err = fmt.Errorf("%w: %v for offset %d (durable %d)", ErrFlushTimeout, s.opts.Flush.Timeout, w.end, s.durable.Load())
	case <-ctx.Done():
		w.timer.Stop()
		err = ctx.Err()
	}
	if w.state.CompareAndSwap(waiting, abandoned) {
		s.m.waitAbandoned.Add(1)
		return err // the flusher recycles w
	}
	// Released meanwhile: the result is on its way.
	err = <-w.done
	s.putWaiter(w)
	return err
}
