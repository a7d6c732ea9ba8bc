package storage

import "errors"

// ErrFenced: Append refused because the store is fenced: its broker is not
// (or no longer) the master of its group, so its log takes only what the
// master ships (AppendReplicated). Nothing was written.
var ErrFenced = errors.New("storage: fenced: this replica is not the master (appends refused; send to the master)")

// SetFenced makes Append (and AppendBatch) refuse with ErrFenced (on) or
// take records again (off). AppendReplicated, TruncateTo and ResetTo are not
// affected: a fenced store is what a slave's replication link writes to.
//
// When SetFenced(true) returns, no Append is writing and none will until
// SetFenced(false): the flag is read under the append lock, which SetFenced
// takes once after setting it. A broker losing mastership (fail-over) calls
// it before the replication link may cut the log (TruncateTo's caller
// guarantees no concurrent append). Appends already written and waiting for
// durability are not affected.
func (s *Store) SetFenced(on bool) {
	s.fenced.Store(on)
	if on {
		s.mu.Lock()
		//lint:ignore SA2001 an empty critical section on purpose: it waits out the appends in progress
		s.mu.Unlock()
	}
}

// Fenced reports whether Append refuses (SetFenced).
func (s *Store) Fenced() bool { return s.fenced.Load() }
