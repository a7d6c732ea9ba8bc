package consumequeue

import (
	"errors"
	"fmt"
)

// Flush writes the buffered entries and syncs every file written since the
// last Flush: when it returns nil, every entry appended before the call is
// durable. A failed write of the buffer is returned and changes nothing (the
// next Flush or Append writes it again); a failed fsync sticks (later
// Appends and Flushes return it).
func (q *Queue) Flush() error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.structMu.RLock()
	defer q.structMu.RUnlock()

	q.mu.Lock()
	if q.mu.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if q.mu.err != nil {
		err := q.mu.err
		q.mu.Unlock()
		return err
	}
	if err := q.writeBufLocked(); err != nil {
		q.mu.Unlock()
		return err
	}
	var dirty [4]*segFile
	toSync := dirty[:0]
	for _, f := range q.mu.files {
		if f.dirty {
			f.dirty = false
			toSync = append(toSync, f)
		}
	}
	q.mu.Unlock()

	for _, f := range toSync {
		if err := f.f.Sync(); err != nil {
			err = fmt.Errorf("consumequeue: %s: sync %s: %w", q, f.path, err)
			q.mu.Lock()
			if q.mu.err == nil {
				q.mu.err = err
			}
			q.mu.Unlock()
			return err
		}
	}
	return nil
}

// MarkUnsynced makes the next Flush sync every file of the queue. Recovery
// calls it after a crash: a dead process may have written entries it
// never synced, which re-indexing then finds in place (so writes nothing
// and marks nothing), and the checkpoint recovery writes must not call
// them durable before they are.
func (q *Queue) MarkUnsynced() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, f := range q.mu.files {
		f.dirty = true
	}
}

// close flushes and closes the queue's files; later calls return ErrClosed
// (Flush, Append) or nothing (close).
func (q *Queue) close() error {
	q.appendMu.Lock()
	defer q.appendMu.Unlock()
	q.retainMu.Lock()
	defer q.retainMu.Unlock()
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.structMu.Lock()
	defer q.structMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return nil
	}
	q.mu.closed = true
	var errs []error
	if q.mu.err == nil {
		if err := q.writeBufLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range q.mu.files {
		if f.dirty && q.mu.err == nil && len(errs) == 0 {
			if err := f.f.Sync(); err != nil {
				errs = append(errs, fmt.Errorf("consumequeue: %s: sync %s: %w", q, f.path, err))
			}
		}
		if err := f.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("consumequeue: %s: close %s: %w", q, f.path, err))
		}
	}
	q.mu.files = nil
	if q.mu.err != nil {
		errs = append(errs, q.mu.err)
	}
	return errors.Join(errs...)
}
