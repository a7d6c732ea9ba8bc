package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// The index reserve: an acknowledged record is readable on a full disk.
//
// A CommitLog segment is allocated whole when it is made (mmap, odirect
// and uring always; pwrite with Preallocate), so on a full disk appends
// still land in the log while the ConsumeQueues, whose files grow entry by
// entry, cannot: the records acknowledged before the dispatcher met the
// full disk would wait unreadable until space was freed. The store keeps
// Options.IndexReserve bytes allocated in Dir/index.reserve. When a
// ConsumeQueue entry fails for lack of space, the dispatcher removes the
// reserve (spendReserve) and retries the held entries on its next round
// (a millisecond later) in the space it held; the store is read-only from
// that moment (roIndex, then roReserve), so the entries that space must
// hold are only those of the appends acknowledged before it.
//
// The store stays read-only (roReserve) until the reserve is allocated
// again: the dispatcher retries on its timer once every held entry is
// written (retryHeld). An Open that cannot allocate it opens read-only the
// same way. The reserve is space, not data: a crash may leave it whole,
// partial or missing, and Open makes it whole again.
//
// Invariant: while appends are accepted, the reserve is whole on disk.

// reservePath is Dir/index.reserve.
func (s *Store) reservePath() string { return filepath.Join(s.dir, "index.reserve") }

// makeReserve allocates the reserve if it is not whole. A lack of space
// is returned as is (the caller stays or turns read-only).
func (s *Store) makeReserve() error {
	n := s.opts.IndexReserve
	if n <= 0 {
		return nil
	}
	p := s.reservePath()
	if size, err := s.fs.Stat(p); err == nil && size >= n {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: stat %s: %w", p, err)
	}
	f, err := s.fs.Create(p, vfsOpts)
	if err != nil {
		return writeError("create "+p, err)
	}
	err = f.Allocate(0, n)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		// Leave no partial reserve holding space the indexes may need.
		if rerr := s.fs.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			s.log.Warn("storage: cannot remove a partial index reserve", "path", p, "err", rerr)
		}
		return writeError("allocate "+p, err)
	}
	return nil
}

// deferReserve is Open's answer to a reserve it could not make: on a full
// disk the store opens read-only and the dispatcher retries (true); any
// other error fails Open (false).
func (s *Store) deferReserve(err error) bool {
	if !errors.Is(err, syscall.ENOSPC) {
		return false
	}
	s.log.Warn("storage: disk full: cannot allocate the index reserve; the store opens read-only (reads served, appends refused) until it can",
		"err", err, "bytes", s.opts.IndexReserve)
	h := &s.hold
	h.reserveSpent = true
	h.backoff, h.lastTry = minRetry, time.Now()
	h.arm()
	s.setReadOnly(roReserve, true)
	return true
}

// spendReserve frees the reserve for the held entries and turns the store
// read-only until it is made again; false if there was none to spend. Run
// by the dispatcher when an entry fails for lack of space.
func (s *Store) spendReserve() bool {
	h := &s.hold
	if h.reserveSpent || s.opts.IndexReserve <= 0 {
		return false
	}
	s.setReadOnly(roReserve, true)
	h.reserveSpent = true
	p := s.reservePath()
	if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Error("storage: cannot remove the index reserve", "path", p, "err", err)
		return false
	}
	s.m.reserveSpent.Add(1)
	s.log.Warn("storage: disk full: the index reserve is spent on the entries of acknowledged records; appends are refused until it is allocated again",
		"bytes", s.opts.IndexReserve)
	return true
}

// retryReserve allocates the spent reserve again; it reports whether the
// reserve is whole (the store then takes appends, unless another reason
// holds it read-only). Run by the dispatcher once nothing is held.
func (s *Store) retryReserve() bool {
	if err := s.makeReserve(); err != nil {
		return false
	}
	s.hold.reserveSpent = false
	s.setReadOnly(roReserve, false)
	s.log.Info("storage: disk space back: the index reserve is allocated again; appends accepted")
	return true
}
