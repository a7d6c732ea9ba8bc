package storage

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
)

// Read-only on a full disk.
//
// The store refuses appends with ErrDiskFull (nothing written), and serves
// reads, while it cannot safely take them for lack of space:
//
//   - roAbort: Open could not create the abort marker. Without it, a crash
//     after an append would leave the last clean checkpoint trusted and the
//     appended records ignored, so no append is taken until the marker
//     exists. The dispatcher creates it on its retry timer
//     (dispatch_retry.go).
//   - roIndex: a ConsumeQueue entry is held for lack of space
//     (dispatch_retry.go).
//   - roReserve: the index reserve is spent or could not be allocated
//     (reserve.go); the dispatcher allocates it again.
//
// Each reason clears by itself once its write succeeds: no restart. The
// other writes Open makes tolerate a full disk without going read-only:
// recovery's checkpoint (the previous one stands and the abort marker makes
// the next Open recover from it; the background checkpoint writes the next),
// the ConsumeQueue entries recovery re-indexes (held for the dispatcher,
// dispatch_recover.go), and directories and files that already exist. A
// Close that cannot finish cleanly for lack of space only returns
// ErrDiskFullAtClose (closeError).
const (
	roAbort int32 = 1 << iota
	roIndex
	roReserve
)

// setReadOnly sets or clears one read-only reason.
func (s *Store) setReadOnly(reason int32, on bool) {
	if on {
		s.hold.ro.Or(reason)
	} else {
		s.hold.ro.And(^reason)
	}
}

// readOnlyErr is the error Append returns while the store is read-only
// (nil otherwise). Callers hold the append lock.
func (s *Store) readOnlyErr() error {
	ro := s.hold.ro.Load()
	switch {
	case ro == 0:
		return nil
	case ro&roAbort != 0:
		return fmt.Errorf("%w: the store opened read-only (its abort marker could not be created); appends resume once it can be", ErrDiskFull)
	case ro&roIndex == 0:
		return fmt.Errorf("%w: read-only until the index reserve is allocated again; appends resume once space is freed", ErrDiskFull)
	}
	return fmt.Errorf("%w: read-only while ConsumeQueue entries wait for space; appends resume once they are written", ErrDiskFull)
}

// ReadOnly reports whether the store refuses appends for lack of space
// (see ErrDiskFull); it leaves that state by itself once space is freed.
func (s *Store) ReadOnly() bool { return s.hold.ro.Load() != 0 }

// deferAbortMarker is Open's answer to a failed creation of the abort
// marker: on a full disk the store opens read-only and the dispatcher
// creates the marker later (true); any other error fails Open (false).
func (s *Store) deferAbortMarker(err error) bool {
	if !errors.Is(err, syscall.ENOSPC) {
		return false
	}
	s.log.Warn("storage: disk full: cannot create the abort marker; the store opens read-only (reads served, appends refused) until it can",
		"err", err)
	h := &s.hold
	h.needAbort = true
	h.backoff, h.lastTry = minRetry, time.Now()
	h.arm()
	s.setReadOnly(roAbort, true)
	return true
}

// retryAbortMarker tries to create the abort marker Open could not; it
// reports whether it exists now. Run by the dispatcher (or Close).
func (s *Store) retryAbortMarker() bool {
	if err := s.createAbortMarker(); err != nil {
		return false
	}
	s.hold.needAbort = false
	s.setReadOnly(roAbort, false)
	s.log.Info("storage: disk space back: the abort marker is created; appends accepted")
	return true
}

// deferCheckpoint is recovery's answer to a failed final checkpoint: on a
// full disk the previous checkpoint stands (true); any other error fails
// Open (false).
func (s *Store) deferCheckpoint(err error) bool {
	if !errors.Is(err, syscall.ENOSPC) {
		return false
	}
	s.log.Warn("storage: disk full: recovery's checkpoint is not written; the previous one stands and the background checkpoint retries",
		"err", err)
	return true
}

// closeError joins Close's errors. When every one of them is a lack of
// space (and the store is not broken), the close only stopped short of
// being clean: it returns ErrDiskFullAtClose wrapping them, and logs it.
func (s *Store) closeError(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	err := errors.Join(errs...)
	for _, e := range errs {
		if !errors.Is(e, syscall.ENOSPC) || errors.Is(e, ErrBroken) {
			return err
		}
	}
	s.log.Warn("storage: closed on a full disk: the abort marker stays and the next Open recovers everything acknowledged",
		"err", err)
	return fmt.Errorf("%w: %w", ErrDiskFullAtClose, err)
}

// logOnceFull logs a background write's failure; a lack of space only once
// until flag is cleared (the write succeeded again), not every interval.
func (s *Store) logOnceFull(flag *atomic.Bool, msg string, err error) {
	if !errors.Is(err, syscall.ENOSPC) {
		s.log.Error(msg, "err", err)
		return
	}
	if !flag.Swap(true) {
		s.log.Error(msg+" (disk full; not logged again until it succeeds)", "err", err)
	}
}
