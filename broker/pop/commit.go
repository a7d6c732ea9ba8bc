package pop

import (
	"fmt"
	"sync"
)

// Group commit of pop.wal. Every change is written under the Service's
// lock and numbered (written); a request is answered once a sync covers
// its number. Whoever waits while no sync runs leads the next one: it
// reads how far the writes go, syncs once outside every lock, and wakes
// every waiter that sync covered. Pops and acks arriving during one sync
// share the next, so the rate of changes is no longer bound by one fsync
// each; a lone request waits for no timer.
type committer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	syncing bool   // a leader is syncing
	synced  uint64 // every write numbered up to here is durable
	err     error  // sticky: a failed sync
}

// flushLocked writes the pending records and returns their number for
// durable (0: nothing to wait for).
func (s *Service) flushLocked() (uint64, error) {
	if s.mu.err != nil {
		return 0, s.mu.err
	}
	if len(s.mu.buf) == 0 {
		return 0, nil
	}
	err := s.mu.wal.write(s.mu.buf)
	s.mu.buf = s.mu.buf[:0]
	if err != nil {
		s.mu.err = fmt.Errorf("pop: write %s: %w", walName, err)
		return 0, s.mu.err
	}
	s.mu.written++
	if s.mu.wal.size > s.cfg.CompactBytes {
		if err := s.compactLocked(); err != nil {
			return 0, err
		}
		// the snapshot is synced: it holds every write numbered so far
	}
	return s.mu.written, nil
}

// durable returns once the write numbered seq is synced (or the sticky
// error of a failed sync or write).
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
	s.mu.Lock()
	if s.mu.err != nil {
		err := s.mu.err
		s.mu.Unlock()
		return 0, err
	}
	f, gen, upto := s.mu.wal.f, s.mu.gen, s.mu.written
	s.mu.Unlock()
	if f == nil {
		return upto, nil
	}
	if err := f.Sync(); err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if gen != s.mu.gen {
			// a rewrite replaced f meanwhile: its snapshot was synced
			// with everything f held
			return upto, nil
		}
		if s.mu.err == nil {
			s.mu.err = fmt.Errorf("pop: sync %s: %w", walName, err)
		}
		return 0, s.mu.err
	}
	s.syncs.Add(1)
	return upto, nil
}
