package storage

import (
	"context"
	"fmt"
	"time"
)

// runFlusher is the flusher goroutine. It is the only caller of
// Segment.Flush and the only writer of durable while the store is open
// (Open and Close flush when it is not running).
//
//   - sync: woken by every sync append's kick; runs group-commit rounds.
//   - async: woken by a ticker every Flush.Interval.
//   - none: flushes nothing by itself.
//
// Under every policy a kick with waiters queued (FlushTo's) runs a round
// at once, gathered as a sync round is (gather.go). It exits when Close closes stop.flusher, after a last round
// that releases every waiter.
func (s *Store) runFlusher() {
	defer s.wg.Done()
	switch s.policy {
	case FlushSync:
		s.syncFlusher()
	case FlushAsync:
		s.asyncFlusher()
	default:
		var spare []*waiter
		g := newGatherer(s)
		for {
			select {
			case <-s.flushKick:
				s.flushToRound(&spare, g)
			case <-s.stop.flusher:
				s.flushRound(&spare, nil)
				return
			}
		}
	}
}

// syncFlusher is group commit, pebble's way: appenders enqueue a waiter
// under the append lock and kick; a round takes the queue *before* it
// reads how far the log is written, flushes up to there (one fsync per
// segment touched, usually one), and releases every waiter it took. What
// is appended during the fsync waits for the next round, so groups grow
// with load and a lone writer waits for no timer.
func (s *Store) syncFlusher() {
	var spare []*waiter
	var lastEnd time.Time
	var lingerTimer *time.Timer
	if s.opts.Flush.MinInterval > 0 {
		lingerTimer = time.NewTimer(time.Hour)
		lingerTimer.Stop()
	}
	g := newGatherer(s)
	for {
		select {
		case <-s.flushKick:
		case <-s.stop.flusher:
			// Appends are closed: the queue is complete.
			s.flushRound(&spare, nil)
			return
		}
		if lingerTimer != nil {
			s.linger(lastEnd, lingerTimer)
		}
		if g != nil {
			g.wait()
		}
		s.flushRound(&spare, g)
		lastEnd = time.Now()
	}
}

// flushRound snapshots the waiters, flushes everything written, and
// releases the snapshot with the result, telling g (if any) what it saw.
// It holds flushMu throughout: a cut (TruncateTo) between the snapshot and
// the flush would leave a waiter above what the flush can reach.
func (s *Store) flushRound(spare *[]*waiter, g *gatherer) {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.flushRoundLocked(spare, g, true)
}

// flushRoundLocked is flushRound; callers hold flushMu. With kickNow
// false the dispatcher is not kicked: the caller dispatches (lone.go).
// moved says whether the round made bytes durable.
func (s *Store) flushRoundLocked(spare *[]*waiter, g *gatherer, kickNow bool) (moved bool) {
	s.mu.Lock()
	batch := s.mu.pending
	s.mu.pending = (*spare)[:0]
	s.pendingN.Store(0)
	s.mu.Unlock()
	wanted := s.flushWanted.Swap(false)
	if len(batch) == 0 && !wanted {
		*spare = batch
		return false
	}
	// Read after the snapshot: every waiter taken ends at or below w.
	w := s.written.Load()
	start := time.Now()
	moved, err := s.flushNoKick(w)
	if moved && kickNow {
		kick(s.dispatchKick) // sync flush: records become visible at durable
	}
	// A lone writer: two rounds running, one waiter and nobody queued
	// behind it by now. One such round alone is not enough: after a large
	// group, its writers are still on their way back when a straggler's
	// round releases it, and an own round then would fsync for one while
	// the rest queue behind it (64 writers ran 5-53 own rounds a 3 s run).
	if len(batch) == 1 && s.pendingN.Load() == 0 {
		s.loneRun.Store(min(s.loneRun.Load()+1, 2))
	} else {
		s.loneRun.Store(0)
	}
	if len(batch) == 0 {
		*spare = batch
		return moved // a failed flush broke the store: nobody to tell but Err
	}
	if err == nil {
		s.m.groups.Add(1)
		s.m.groupWaiters.Add(int64(len(batch)))
	}
	if g != nil {
		// Before releasing: none of batch can be waiting again yet.
		g.observe(int64(len(batch)), s.pendingN.Load(), time.Since(start))
	}
	for i, wt := range batch {
		if err == nil && wt.end > s.durable.Load() {
			// Cannot happen: the snapshot precedes w. Refuse to lie.
			s.release(wt, s.breakWith(fmt.Errorf("storage: internal: waiter for %d above durable %d", wt.end, s.durable.Load())))
		} else {
			s.release(wt, err)
		}
		batch[i] = nil
	}
	*spare = batch[:0]
	return moved
}

// flushToRound is a round for FlushTo's waiters under the async and none
// policies: gathered as sync rounds are (g may be nil), so callers that
// flush again as soon as they are released (a slave's appends, a
// producer's sync replication) share one round instead of settling into
// two alternating halves.
func (s *Store) flushToRound(spare *[]*waiter, g *gatherer) {
	if g != nil {
		g.wait()
	}
	s.flushRound(spare, g)
}

// linger waits until MinInterval after the last fsync ended, or until
// MaxBatchBytes bytes wait, or until Close.
func (s *Store) linger(lastEnd time.Time, t *time.Timer) {
	deadline := lastEnd.Add(s.opts.Flush.MinInterval)
	maxBytes := s.opts.Flush.MaxBatchBytes
	for {
		d := time.Until(deadline)
		if d <= 0 {
			return
		}
		if maxBytes > 0 && s.written.Load()-s.durable.Load() >= maxBytes {
			return
		}
		t.Reset(d)
		select {
		case <-t.C:
			return
		case <-s.flushKick: // more bytes: check MaxBatchBytes again
			t.Stop()
		case <-s.stop.flusher:
			t.Stop()
			return
		}
	}
}

// asyncFlusher flushes every Interval if at least DirtyPages pages are
// dirty, and whatever is dirty at least every FullInterval (RocketMQ's
// FlushRealTimeService).
func (s *Store) asyncFlusher() {
	f := s.opts.Flush
	t := time.NewTicker(f.Interval)
	defer t.Stop()
	lastFull := time.Now()
	threshold := f.dirtyThreshold()
	var spare []*waiter
	g := newGatherer(s)
	for {
		select {
		case <-t.C:
		case <-s.flushKick: // FlushTo
			s.flushToRound(&spare, g)
			continue
		case <-s.stop.flusher:
			s.flushRound(&spare, nil)
			return
		}
		s.flushMu.Lock()
		w := s.written.Load()
		dirty := w - s.durable.Load()
		full := time.Since(lastFull) >= f.FullInterval
		if (dirty > 0 && dirty >= threshold) || (full && (dirty > 0 || s.dirDirty.Load())) {
			if err := s.flushTo(w); err != nil {
				s.log.Error("storage: async flush failed", "err", err)
			}
		}
		s.flushMu.Unlock()
		if full {
			lastFull = time.Now()
		}
	}
}

// flushTo makes the log durable at least up to w (a value of written read
// by the caller before the call; callers hold flushMu): it syncs the commitlog directory if a
// segment was created, then flushes every segment holding bytes in
// [durable, w). An error is terminal: it becomes the sticky ErrBroken
// error, and durable never moves again. The one exception is a directory
// that cannot even be opened for its sync for want of a descriptor
// (ErrResourceBusy): nothing was synced, so nothing can have been lost,
// and the next round tries again.
func (s *Store) flushTo(w int64) error {
	moved, err := s.flushNoKick(w)
	if moved {
		kick(s.dispatchKick) // sync flush: records become visible at durable
	}
	return err
}

// flushNoKick is flushTo without the dispatcher's kick; moved says whether
// durable moved (the kick is due).
func (s *Store) flushNoKick(w int64) (moved bool, err error) {
	if err := s.Err(); err != nil {
		return false, err
	}
	d := s.durable.Load()
	dirSync := s.dirDirty.Swap(false)
	if w <= d && !dirSync {
		return false, nil
	}
	start := time.Now()
	s.flushStart.Store(start.UnixNano())
	defer s.flushStart.Store(0)
	if dirSync {
		s.m.dirSyncs.Add(1)
		if err := s.fs.SyncDir(s.clDir); err != nil {
			if IsResourceError(err) {
				// The directory could not be opened (no descriptor):
				// nothing was synced and nothing is lost. The next round
				// tries again; durable stays where it is meanwhile.
				s.dirDirty.Store(true)
				return false, fmt.Errorf("%w: sync dir %s: %w", ErrResourceBusy, s.clDir, err)
			}
			return false, s.breakWith(fmt.Errorf("sync dir %s: %w", s.clDir, err))
		}
	}
	if w > d {
		for _, g := range s.segmentsSnapshot() {
			end := g.end(s.segSize)
			if end <= d || g.base >= w {
				continue
			}
			n, err := g.seg.Flush()
			if err != nil {
				return false, s.breakWith(fmt.Errorf("flush %s: %w", g.path, err))
			}
			// A segment ending at or below w was sealed before w was read:
			// its blank is covered.
			if w < end && g.base+n < w {
				return false, s.breakWith(fmt.Errorf("storage: internal: flush of %s reached %d, written %d", g.path, g.base+n, w))
			}
		}
		// Durable is w, not as far as the flushes went: bytes appended
		// after w was read wait for the next round, and durable (and
		// handed) stay on a record boundary or a segment end, never
		// after the header of a blank that was being written.
		s.durable.Store(w)
		s.storeHanded(w) // a flush writes out before it syncs
		s.m.flushedBytes.Add(w - d)
		moved = true
	}
	s.m.recordFlush(time.Since(start))
	return moved, nil
}

// FlushStalled is how long the flush in progress (its fdatasyncs and
// directory sync) has been running; 0 when none runs. A disk whose syncs
// take seconds shows here while they last, before any append times out:
// a controller-mode master steps down on it (broker).
func (s *Store) FlushStalled() time.Duration {
	if ns := s.flushStart.Load(); ns != 0 {
		return max(time.Since(time.Unix(0, ns)), 0)
	}
	return 0
}

// finalFlush flushes everything written (Close, after the flusher stopped).
func (s *Store) finalFlush() error {
	if err := s.Err(); err != nil {
		return err
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	return s.flushTo(s.written.Load())
}

// FlushTo returns once DurableOffset() >= off, joining the group commit:
// it queues a waiter as a sync Append does and wakes the flusher, whose
// round flushes everything written and releases it. Under the async and
// none policies that round starts at once, not at the next tick. off >
// WrittenOffset() is an error. Like a sync Append it gives up with
// ErrFlushTimeout after Flush.Timeout, with the context's error, or with
// the sticky ErrBroken error.
func (s *Store) FlushTo(ctx context.Context, off int64) error {
	if s.durable.Load() >= off {
		return nil
	}
	if err := s.acquireSlot(ctx); err != nil {
		return err
	}
	w := s.getWaiter()
	s.mu.Lock()
	err := s.appendableLocked(false)
	if written := s.written.Load(); err == nil && off > written {
		err = fmt.Errorf("storage: flush to %d: past the written offset %d", off, written)
	}
	if err == nil {
		s.pendLocked(w, off)
	}
	s.mu.Unlock()
	if err != nil {
		s.putWaiter(w)
		<-s.sem
		return err
	}
	kick(s.flushKick)
	return s.wait(ctx, w)
}
