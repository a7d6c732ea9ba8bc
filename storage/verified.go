package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// The verified mark.
//
// A clean Open trusts its checkpoint and reads nothing, and the scrubber
// gets to a segment minutes or hours later, so without more a restarted
// replica could be elected master over bytes a bit flip or a stray write
// damaged while the broker was stopped. The verified mark V says how far
// the log is known good: every record below V was read back and checked
// record by record (scanner.checkAt: size, magic, physical offset, both
// CRCs) some time after it was written, and found good; a check that finds
// a bad record lowers V to it (a finding lives in memory only, so a
// restart before it is repaired finds it again from V). Open checks
// [max(V, log start), end) in the background at full speed (verify_open.go)
// and Unverified says how much of it is still to do.
//
// What moves V, under verified.mu (a leaf lock: nothing else is taken
// under it but scrub.mu):
//
//   - Up, only over bytes checked since they were written, contiguous
//     with what is below V: the scrubber after a clean walk of a sealed
//     segment whose base is at or below V, Open's verification at each
//     segment's end and its end, an unclean Open's recovery scan (it
//     checked from its first segment's base to the end it recovered).
//     Never past the durable offset (a power loss cannot take bytes below
//     V), never past a bad record found and not repaired, and not at all
//     if a cut or repair ran since the bytes were read (Store.cuts).
//   - Down: a cut (TruncateTo: min(V, cut); ResetTo: min(V, base) before
//     the reset is decided, base once it is done), a bad record found
//     below V, and Open, to the end of the log it recovered (a Repair
//     at rest may have cut it). Each is durable before the log changes:
//     if the file cannot be written it is removed (a missing file is 0).
//   - Appends leave it alone, and so does retention (V below the log's
//     start is fine: max(V, CommitLogMinOffset) is where checking starts).
//
// Dir/verified holds it, replaced atomically (writeFileAtomic) whenever
// it moves; a missing or damaged file is 0 (a damaged one is logged at
// Warn, never fatal: the cost is a longer check).
//
//	bytes  field   why
//	0..8   magic   "SAMSAVF1": not some other file's bytes
//	8..16  V       big-endian CommitLog offset
//	16..20 CRC-32  IEEE of bytes 0..16: a torn or flipped file reads as 0

const (
	verifiedMagic = "SAMSAVF1"
	verifiedSize  = 20
)

// verifiedState is the verified mark and Open's verification of what lies
// above it (verify_open.go).
type verifiedState struct {
	mu struct {
		sync.Mutex
		off   int64 // V
		saved int64 // V as Dir/verified holds it (0: no file)
	}
	// The startup verification checks [from, end), both fixed before its
	// goroutine starts; left is what it has not checked yet (0 once done).
	from, end int64
	left      atomic.Int64
	done      chan struct{} // closed when the walk ends (nil: none ran)
	// saveFailed: a raise could not be saved (logged once until one is).
	saveFailed atomic.Bool
}

func (s *Store) verifiedPath() string { return filepath.Join(s.dir, "verified") }

func encodeVerified(off int64) []byte {
	b := make([]byte, 0, verifiedSize)
	b = append(b, verifiedMagic...)
	b = binary.BigEndian.AppendUint64(b, uint64(off))
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func decodeVerified(b []byte) (int64, error) {
	switch {
	case len(b) != verifiedSize:
		return 0, fmt.Errorf("%d bytes, want %d", len(b), verifiedSize)
	case string(b[:8]) != verifiedMagic:
		return 0, fmt.Errorf("bad magic %q", b[:8])
	case binary.BigEndian.Uint32(b[16:]) != crc32.ChecksumIEEE(b[:16]):
		return 0, errors.New("bad CRC")
	}
	off := int64(binary.BigEndian.Uint64(b[8:16]))
	if off < 0 {
		return 0, fmt.Errorf("negative offset %d", off)
	}
	return off, nil
}

// VerifiedOffset is the verified mark V: every record below it was read
// back and found good after it was written (see verified.go).
func (s *Store) VerifiedOffset() int64 {
	s.verified.mu.Lock()
	defer s.verified.mu.Unlock()
	return s.verified.mu.off
}

// loadVerified reads Dir/verified (Open, before anything moves V).
func (s *Store) loadVerified() {
	vs := &s.verified
	b, err := readFile(s.fs, s.verifiedPath())
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	off, derr := decodeVerified(b)
	if err == nil {
		err = derr
	}
	if err != nil {
		s.log.Warn("storage: the verified mark is unreadable; Open checks the whole log", "file", s.verifiedPath(), "err", err)
		return
	}
	vs.mu.off, vs.mu.saved = off, off
}

// settleVerified fits V to the log Open recovered, ending at end: down to
// end, durably (a Repair at rest may have cut the log); up to end if an
// unclean Open's scan checked from scanFrom on and V reaches scanFrom.
func (s *Store) settleVerified(end int64, scanned bool, scanFrom int64) error {
	if err := s.lowerVerified(end); err != nil {
		return err
	}
	if scanned {
		s.raiseVerified(s.cuts.Load(), scanFrom, end)
	}
	return nil
}

// raiseVerified moves V up to `to` if [from, to) was checked clean in cut
// generation gen (Store.cuts then) and V (or the log's start, if above)
// reaches from; not past the durable offset nor past a bad record found
// and not repaired. Saving is best effort: the file lagging V is safe.
func (s *Store) raiseVerified(gen, from, to int64) {
	if gen%2 != 0 {
		return // a cut was running
	}
	lo := s.CommitLogMinOffset() // before the lock: verified.mu is a leaf
	to = min(to, s.durable.Load())
	vs := &s.verified
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if s.cuts.Load() != gen || max(vs.mu.off, lo) < from {
		return
	}
	to = min(to, s.badFrom(vs.mu.off))
	if to <= vs.mu.off {
		return
	}
	vs.mu.off = to
	if err := s.writeFileAtomic(s.verifiedPath(), encodeVerified(to)); err != nil {
		if !vs.saveFailed.Swap(true) {
			s.log.Warn("storage: could not save the verified mark; the next Open checks from the last saved one",
				"verified", to, "saved", vs.mu.saved, "err", err)
		}
		return
	}
	vs.mu.saved = to
	vs.saveFailed.Store(false)
}

// badFrom is the offset of the first bad record found at or past from and
// not repaired (math.MaxInt64 if none).
func (s *Store) badFrom(from int64) int64 {
	first := int64(1<<63 - 1)
	s.scrub.mu.Lock()
	defer s.scrub.mu.Unlock()
	for off, bad := range s.scrub.known {
		if bad && off >= from {
			first = min(first, off)
		}
	}
	return first
}

// lowerVerified moves V down to `to` (if above), durably: the file says
// `to`, or is gone. An error means neither could be done (V is lowered in
// memory all the same); a cut must not go on then.
func (s *Store) lowerVerified(to int64) error {
	vs := &s.verified
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.mu.off = min(vs.mu.off, to)
	if vs.mu.saved <= to {
		return nil
	}
	err := s.writeFileAtomic(s.verifiedPath(), encodeVerified(to))
	if err == nil {
		vs.mu.saved = to
		return nil
	}
	// A file that is not there is 0: removing it needs no space.
	p := s.verifiedPath()
	if rerr := s.fs.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return fmt.Errorf("storage: lower the verified mark to %d: %w; remove %s: %w", to, err, p, rerr)
	}
	if serr := s.fs.SyncDir(s.dir); serr != nil {
		return fmt.Errorf("storage: lower the verified mark to %d: %w; sync dir %s: %w", to, err, s.dir, serr)
	}
	vs.mu.saved = 0
	s.log.Warn("storage: could not save a lower verified mark; removed it (the next Open checks the whole log)", "to", to, "err", err)
	return nil
}

// setVerifiedReset makes V base after a reset (finishReset; its callers
// have the store to themselves): the log starts there, empty. A reset is
// decided only once V <= base is durable (resetLocked), so this normally
// raises V, best effort; lowering it first covers a reset marker older
// than the mark.
func (s *Store) setVerifiedReset(base int64) error {
	if err := s.lowerVerified(base); err != nil {
		return err
	}
	vs := &s.verified
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.mu.off = base
	if vs.mu.saved == base {
		return nil
	}
	if err := s.writeFileAtomic(s.verifiedPath(), encodeVerified(base)); err != nil {
		s.log.Warn("storage: could not save the verified mark after a reset", "base", base, "err", err)
		return nil
	}
	vs.mu.saved = base
	return nil
}
