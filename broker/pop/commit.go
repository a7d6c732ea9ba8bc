package pop

import (
	"fmt"
	"sync"
	"time"
)

// Writing and syncing pop.wal, off the Service's lock.
//
// A request changes the state under the Service's lock and appends its
// records to a pending buffer there, numbered (seq). After unlocking it
// calls persist: whoever takes the writer's lock first writes everything
// pending at that moment in one write (the records of every request that
// came meanwhile, in the order they were made), so a write covers many
// requests and no write runs under the Service's lock. In sync mode
// (Config.SyncInterval 0) the request then waits for a sync covering its
// number: whoever waits while no sync runs leads the next one, reads how
// far the writes go, syncs once outside every lock and wakes every waiter
// that sync covered (group commit; a lone request waits for no timer). In
// async mode the flusher syncs every SyncInterval.

// writer owns the open file; its lock orders the writes. Lock order:
// writer, then the Service's lock.
type writer struct {
	sync.Mutex
	wal  wal
	gen  int    // bumped by every rewrite of the file
	done uint64 // every change numbered up to here is written
}

// committer is the group commit of the syncs.
type committer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	syncing bool   // a leader is syncing
	synced  uint64 // every change numbered up to here is durable
	err     error  // sticky: a failed sync
}

// pendLocked numbers the records logged since the last call (0: none)
// for persist.
func (s *Service) pendLocked() (uint64, error) {
	if s.mu.err != nil {
		return 0, s.mu.err
	}
	if len(s.mu.buf) == 0 {
		return 0, nil
	}
	s.mu.seq++
	return s.mu.seq, nil
}

// persist returns once the change numbered seq is written and, in sync
// mode, synced.
func (s *Service) persist(seq uint64) error {
	if seq == 0 {
		return nil
	}
	if err := s.write(seq); err != nil {
		return err
	}
	if s.cfg.SyncInterval > 0 {
		return nil // the flusher syncs it
	}
	return s.durable(seq)
}

// write writes everything pending unless a write since covered seq; past
// Config.CompactBytes it rewrites the file as a snapshot instead.
func (s *Service) write(seq uint64) error {
	w := &s.wr
	w.Lock()
	defer w.Unlock()
	if w.done >= seq {
		return nil
	}
	s.mu.Lock()
	if s.mu.err != nil {
		err := s.mu.err
		s.mu.Unlock()
		return err
	}
	buf, upto := s.mu.buf, s.mu.seq
	s.mu.buf = s.mu.spare[:0]
	s.mu.spare = nil
	s.mu.Unlock()
	err := w.wal.write(buf)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.spare == nil {
		s.mu.spare = buf[:0]
	}
	if err != nil {
		s.mu.err = fmt.Errorf("pop: write %s: %w", walName, err)
		return s.mu.err
	}
	w.done = upto
	if w.wal.size > s.cfg.CompactBytes {
		// the snapshot holds every change made so far, pending or not
		s.mu.buf = s.mu.buf[:0]
		if err := s.compactLocked(); err != nil {
			return err
		}
		w.done = s.mu.seq
		s.markSynced(s.mu.seq)
	}
	return nil
}

// markSynced records that every change numbered up to seq is durable.
func (s *Service) markSynced(seq uint64) {
	c := &s.commit
	c.mu.Lock()
	c.synced = max(c.synced, seq)
	c.cond.Broadcast()
	c.mu.Unlock()
}

// flusher syncs pop.wal every Config.SyncInterval when something was
// written since the last sync; it owns nothing but its ticker, and stop
// ends it. A failed sync is sticky: every later request gets it.
func (s *Service) flusher() {
	defer close(s.stopped)
	t := time.NewTicker(s.cfg.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.wr.Lock()
		seq := s.wr.done
		s.wr.Unlock()
		if err := s.durable(seq); err != nil {
			s.cfg.Logger.Error("pop: background sync failed; POP refuses every request from now on", "err", err)
			return
		}
	}
}

// durable returns once the change numbered seq, written, is synced (or
// the sticky error of a failed sync or write).
func (s *Service) durable(seq uint64) error {
	if seq == 0 {
		return nil
	}
	c := &s.commit
	c.mu.Lock()
	for {
		switch {
		case c.err != nil:
			err := c.err
			c.mu.Unlock()
			return err
		case c.synced >= seq:
			c.mu.Unlock()
			return nil
		case !c.syncing:
			c.syncing = true
			c.mu.Unlock()
			upto, err := s.syncAll()
			c.mu.Lock()
			c.syncing = false
			if err != nil {
				c.err = err
			} else {
				c.synced = max(c.synced, upto)
			}
			c.cond.Broadcast()
		default:
			c.cond.Wait()
		}
	}
}

// syncAll syncs every write made so far and returns how far that is.
func (s *Service) syncAll() (uint64, error) {
	s.wr.Lock()
	f, gen, upto := s.wr.wal.f, s.wr.gen, s.wr.done
	s.wr.Unlock()
	s.mu.Lock()
	err := s.mu.err
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if f == nil {
		return upto, nil
	}
	if err := f.Sync(); err != nil {
		s.wr.Lock()
		defer s.wr.Unlock()
		if gen != s.wr.gen {
			// a rewrite replaced f meanwhile: its snapshot was synced
			// with everything f held
			return upto, nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.mu.err == nil {
			s.mu.err = fmt.Errorf("pop: sync %s: %w", walName, err)
		}
		return 0, s.mu.err
	}
	s.syncs.Add(1)
	return upto, nil
}
