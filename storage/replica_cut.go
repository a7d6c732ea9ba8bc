package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// Cuts: TruncateTo ends the log at an earlier record boundary (a slave
// whose tail diverged from its master's), ResetTo discards it and starts
// it empty at a segment base.
//
// Both run with the store at rest (exclusive): retention, the dispatcher
// and the flusher are held off, everything written is flushed and indexed
// first, and the append lock is held throughout. Readers go on: they
// check offsets under the segment list's lock, which the cut holds while
// it changes segments, and GetMessages reads again when a cut ran during
// its read (Store.cuts).
//
// Crash safety. TruncateTo first writes a checkpoint that claims nothing
// at or past the cut (recovery would otherwise take a shorter log for
// corruption), then trims the ConsumeQueues, then removes the later
// segments newest first and truncates the cut segment, each step durable
// before the next: a crash anywhere leaves a log that ends at or before
// the old end, and recovery trims the queues to it. ResetTo writes
// Dir/reset, the checkpoint of the empty log at base, atomically: before
// it exists nothing has changed; once it does, Open finishes the reset
// (finishReset) whatever a crash left, and the last step renames it to
// Dir/checkpoint.

// resetPath is the reset marker: a checkpoint of the log reset to its base.
func (s *Store) resetPath() string { return filepath.Join(s.dir, "reset") }

// exclusive runs fn with the store at rest (see above), counting it in
// cuts. It takes retainMu, dispatchMu, flushMu, mu and ckpt, in that
// order.
func (s *Store) exclusive(fn func() error) error {
	s.retainMu.Lock()
	defer s.retainMu.Unlock()
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	w := s.written.Load()
	if err := s.flushTo(w); err != nil {
		return err
	}
	var spare []dispatchReq
	s.dispatchRoundLocked(&spare)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.appendableLocked(false); err != nil {
		return err
	}
	if s.written.Load() != w {
		return errors.New("storage: an append ran during a cut (TruncateTo and ResetTo need the log to themselves)")
	}
	s.ckpt.Lock()
	defer s.ckpt.Unlock()
	s.cuts.Add(1)
	defer s.cuts.Add(1)
	return fn()
}

// TruncateTo cuts the log at off, a record boundary with
// CommitLogMinOffset() <= off <= WrittenOffset() (a message record or a
// segment's blank filler starts there, checked by its header, physical
// offset and CRC; or off is WrittenOffset() or a segment base): bytes at
// and after off are gone, later segments removed, ConsumeQueues lose
// every entry pointing at or past off, queue counters fall back,
// written/handed/durable/dispatched become off. It is durable on return,
// and a crash at any point during it recovers to a consistent store whose
// log ends at or before the old end (never with ConsumeQueue entries past
// the log). The caller guarantees no Append/AppendReplicated runs
// concurrently (a slave has one apply goroutine); concurrent readers
// (GetMessages, ReadLog) stay safe: they may get errors or nothing, never
// a record from the other side of the cut as if it were in place. off not
// a record boundary: an error, nothing changed. Sync waiters (FlushTo)
// above off are released with an error. The cut bytes are kept, as
// recovery's are, in Dir/lost+found/<time>/ (copied and synced before
// anything changes; Metrics' CutRecords and CutBytes count them), and a
// Warn line says what went and where.
//
// An error once the files are being changed breaks the store (ErrBroken);
// the next Open recovers as from a crash.
func (s *Store) TruncateTo(off int64) error {
	return s.exclusive(func() error { return s.truncateLocked(off) })
}

// truncateLocked is TruncateTo's work; exclusive holds everything.
func (s *Store) truncateLocked(off int64) error {
	w := s.written.Load()
	if lo := s.CommitLogMinOffset(); off < lo || off > w {
		return fmt.Errorf("storage: truncate to %d: outside the log [%d, %d]", off, lo, w)
	}
	if off == w && !s.mu.poisoned {
		return nil // flushed and indexed by exclusive: nothing to cut
	}
	list := s.segmentsSnapshot()
	i := len(list) - 1
	for i > 0 && list[i].base > off {
		i--
	}
	g := list[i]
	if err := s.checkBoundary(g, off, w); err != nil {
		return err
	}
	// The verified mark comes down first (harmless alone): records
	// appended at off later are not checked yet (verified.go).
	if err := s.lowerVerified(off); err != nil {
		return fmt.Errorf("storage: truncate to %d: %w", off, err)
	}
	// 0. What goes is kept first: a diverged tail may hold acknowledged
	// messages (lost+found; nothing is changed if this fails).
	lf, kept, err := s.keepCutLocked(list, i, off, w, fmt.Sprintf("TruncateTo: a replica cut its log from %d to %d to follow its master", w, off))
	if err != nil {
		return fmt.Errorf("storage: truncate to %d: keep the cut bytes: %w", off, err)
	}
	// 1. The checkpoint stops claiming anything at or past off.
	if err := s.writeCheckpointLocked(false, off); err != nil {
		return fmt.Errorf("storage: truncate to %d: %w", off, err)
	}
	s.log.Warn("storage: truncating the commit log (TruncateTo); the cut bytes are in lost+found", "from", off, "to", w, "bytes", w-off,
		"segmentsRemoved", len(list)-1-i, "lostFound", lf, "records", kept.Records)
	// 2. The ConsumeQueues.
	if _, err := s.dropEntriesFrom(off, "storage: TruncateTo dropped indexed records past the cut"); err != nil {
		return s.breakWith(fmt.Errorf("truncate to %d: %w", off, err))
	}
	if err := s.cutKeyIndex(off); err != nil {
		return s.breakWith(fmt.Errorf("truncate to %d: %w", off, err))
	}
	// 3. The log's files: later segments newest first, then the cut one.
	if err := s.cutSegments(list, i, off); err != nil {
		return s.breakWith(fmt.Errorf("truncate to %d: %w", off, err))
	}
	// 4. The rest of the state.
	s.resetOffsetsLocked(off, off)
	s.countersFromQueuesLocked(nil)
	s.heldCountersLocked()
	s.dispatchOK.Store(s.dispatchFloor(off))
	s.dropQuarantineFrom(off)
	s.dropFindingsFrom(off)
	// The first checkpoint already made the cut safe; this one only saves
	// the next recovery a scan.
	if err := s.writeCheckpointLocked(false, off); err != nil {
		s.log.Warn("storage: the checkpoint after TruncateTo failed; the one before it stands", "err", err)
	}
	return nil
}

// checkBoundary says whether a record starts at off in g: off is the
// written offset or g's base, or a valid record or g's blank lies there.
func (s *Store) checkBoundary(g *segment, off, written int64) error {
	pos := off - g.base
	if off == written || pos == 0 {
		return nil
	}
	var h [record.BlankSize]byte
	if pos+record.BlankSize > g.seg.Written() {
		return fmt.Errorf("storage: truncate to %d: not a record boundary (past the segment's tail)", off)
	}
	if _, err := g.seg.ReadAt(h[:], pos); err != nil {
		return fmt.Errorf("storage: truncate to %d: read: %w", off, err)
	}
	size, magic, _ := record.Header(h[:])
	if magic == record.MagicBlank && int64(size) == s.segSize-pos {
		return nil
	}
	if magic != record.MagicMessage || int(size) < record.MinSize || pos+int64(size) > g.seg.Written() {
		return fmt.Errorf("storage: truncate to %d: not a record boundary (size %d, magic %#08x)", off, size, uint32(magic))
	}
	b := make([]byte, size)
	if _, err := g.seg.ReadAt(b, pos); err != nil {
		return fmt.Errorf("storage: truncate to %d: read: %w", off, err)
	}
	if err := record.Verify(b, off); err != nil {
		return fmt.Errorf("storage: truncate to %d: not a record boundary: %w", off, err)
	}
	return nil
}

// cutSegments removes list[i+1:] (newest first) and truncates list[i] at
// off, durably, and makes it the active segment (a new *segment, so a
// reader holding the old one sees it is gone).
func (s *Store) cutSegments(list []*segment, i int, off int64) error {
	s.segs.Lock()
	defer s.segs.Unlock()
	s.segs.list = list[:i:i] // nothing past list[i] is readable from here on
	for j := len(list) - 1; j > i; j-- {
		g := list[j]
		s.m.addDeleted(g.seg.Stats())
		_ = g.seg.Close() // removed next: nothing in it is kept
		if err := s.fs.Remove(g.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", g.path, err)
		}
		if err := s.fs.SyncDir(s.clDir); err != nil {
			return fmt.Errorf("sync dir %s: %w", s.clDir, err)
		}
	}
	g := list[i]
	pos := off - g.base
	s.m.addDeleted(g.seg.Stats())
	// Its bytes below off stay: a failed close (a write-out the flush
	// missed) fails the cut, which breaks the store.
	if err := g.seg.Close(); err != nil {
		return fmt.Errorf("close %s: %w", g.path, err)
	}
	var reserve int64
	if s.opts.Preallocate {
		reserve = s.segSize - pos
	}
	if err := truncateSegment(s.fs, g.path, pos, reserve); err != nil {
		return err
	}
	ng, err := s.reopenSegment(g.base, pos)
	if err != nil {
		return err
	}
	ng.lastTs.Store(g.lastTs.Load())
	ng.hasRecords.Store(pos > 0 && g.hasRecords.Load())
	s.segs.list = append(s.segs.list, ng)
	s.mu.active, s.mu.poisoned = ng, false
	s.written.Store(off) // under segs: readers check it there
	s.handed.Store(off)
	return nil
}

// reopenSegment opens the segment file at base with written bytes.
func (s *Store) reopenSegment(base, written int64) (*segment, error) {
	path := s.segmentPath(base)
	sg, err := s.be.Open(s.segConfig(path, written))
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", path, err)
	}
	return &segment{base: base, path: path, seg: sg}, nil
}

// resetOffsetsLocked makes off the end of everything after a cut at from
// (off, or -1 for a reset: everything goes): the offsets, the records
// waiting to be indexed and the held ones at or past from, and the waiters
// above from (released with an error). Callers run exclusive.
func (s *Store) resetOffsetsLocked(off, from int64) {
	s.written.Store(off)
	s.handed.Store(off)
	s.durable.Store(off)
	s.dispatched.Store(off)
	s.dispatchOK.Store(off)
	keep := func(rs []dispatchReq) []dispatchReq {
		n := 0
		for n < len(rs) && rs[n].phys < from {
			n++
		}
		clear(rs[n:])
		return rs[:n]
	}
	s.mu.dispatch = keep(s.mu.dispatch)
	s.carry = keep(s.carry)
	s.dropHeldFrom(from)
	n := 0
	for _, w := range s.mu.pending {
		if w.end > from {
			s.release(w, fmt.Errorf("storage: the log was cut at %d, below %d", off, w.end))
			continue
		}
		s.mu.pending[n] = w
		n++
	}
	clear(s.mu.pending[n:])
	s.mu.pending = s.mu.pending[:n]
	s.pendingN.Store(int64(n))
}

// ResetTo discards the whole log and all ConsumeQueues and makes the log
// start empty at base, a multiple of SegmentSize() (the next
// AppendReplicated must have from == base; its queues may start at any
// offset). For a slave whose log has nothing in common with what its
// master still retains, or a new slave copying from its master's oldest
// retained segment. Durable on return; recovery after a crash in it gives
// either the old store or the reset one. Same concurrency contract as
// TruncateTo. The quarantine is emptied; lost+found is left alone.
func (s *Store) ResetTo(base int64) error {
	if base < 0 || base%s.segSize != 0 {
		return fmt.Errorf("storage: reset to %d: not a multiple of the segment size %d", base, s.segSize)
	}
	return s.exclusive(func() error { return s.resetLocked(base) })
}

// resetLocked is ResetTo's work; exclusive holds everything.
func (s *Store) resetLocked(base int64) error {
	ck := checkpoint{segSize: s.segSize, durable: base, dispatched: base, timeMs: s.clock().UnixMilli(),
		queues: map[queueKey]int64{}}
	// The verified mark is at most base before the reset is decided
	// (verified.go); finishReset sets it to base.
	if err := s.lowerVerified(base); err != nil {
		return fmt.Errorf("storage: reset to %d: %w", base, err)
	}
	if err := s.writeFileAtomic(s.resetPath(), ck.encode()); err != nil {
		return fmt.Errorf("storage: reset to %d: %w", base, err)
	}
	s.log.Warn("storage: resetting the commit log (ResetTo)", "base", base, "discarded", s.written.Load()-s.CommitLogMinOffset(),
		"oldMin", s.CommitLogMinOffset(), "oldEnd", s.written.Load())
	// From here on the reset is decided: a failure breaks the store and
	// the next Open finishes it.
	empty := map[int64]quarantined{}
	s.quarantine().byPhys.Store(&empty) // finishReset removes the file
	s.dropFindingsFrom(math.MinInt64)
	s.segs.Lock()
	defer s.segs.Unlock()
	for _, g := range s.segs.list {
		s.m.addDeleted(g.seg.Stats())
		_ = g.seg.Close() // the reset discards every segment
	}
	s.segs.list = nil
	cqErr := errors.Join(s.cq.Clear(), s.cutKeyIndex(0))
	if err := s.finishReset(); err != nil {
		return s.breakWith(fmt.Errorf("reset to %d: %w", base, errors.Join(err, cqErr)))
	}
	ng, err := s.reopenSegment(base, 0)
	if err != nil {
		return s.breakWith(fmt.Errorf("reset to %d: %w", base, err))
	}
	s.segs.list = []*segment{ng}
	s.mu.active, s.mu.poisoned = ng, false
	clear(s.mu.counters)
	clear(s.mu.topics)
	s.resetOffsetsLocked(base, -1) // under segs: readers check written there
	s.ckpt.last = ck
	return nil
}

// finishReset carries out the reset Dir/reset says was decided, if there
// is one (ResetTo, and Open after a crash in it): it removes every segment
// file, the ConsumeQueues' files and the quarantine, creates the empty
// segment at the base, and renames the marker to Dir/checkpoint, each
// step durable. Every step can be done again after a crash.
func (s *Store) finishReset() error {
	b, err := readFile(s.fs, s.resetPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: read %s: %w", s.resetPath(), err)
	}
	ck, err := decodeCheckpoint(b)
	if err != nil || ck.segSize != s.segSize {
		return fmt.Errorf("%w: %s: %v (segment size %d, the store's %d)", ErrCorrupt, s.resetPath(), err, ck.segSize, s.segSize)
	}
	names, err := s.fs.List(s.clDir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", s.clDir, err)
	}
	for _, n := range slices.Backward(names) { // newest first, as a cut: what stays is contiguous
		if _, ok := parseSegmentName(n); ok {
			if err := s.fs.Remove(filepath.Join(s.clDir, n)); err != nil {
				return fmt.Errorf("storage: remove %s: %w", n, err)
			}
		}
	}
	if err := s.fs.SyncDir(s.clDir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", s.clDir, err)
	}
	if err := removeContents(s.fs, filepath.Join(s.dir, "consumequeue")); err != nil {
		return err
	}
	if err := s.fs.Remove(s.quarantinePath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: remove %s: %w", s.quarantinePath(), err)
	}
	g, err := s.createSegment(ck.durable)
	if err != nil {
		return err
	}
	if err := g.seg.Close(); err != nil {
		return fmt.Errorf("storage: close %s: %w", g.path, err)
	}
	if err := s.fs.SyncDir(s.clDir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", s.clDir, err)
	}
	if err := s.fs.Rename(s.resetPath(), s.checkpointPath()); err != nil {
		return fmt.Errorf("storage: rename %s: %w", s.resetPath(), err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", s.dir, err)
	}
	if err := s.setVerifiedReset(ck.durable); err != nil {
		return err
	}
	s.log.Info("storage: the commit log is reset", "base", ck.durable)
	return nil
}

// removeContents removes everything below dir (files and directories,
// depth first), syncing each directory it emptied.
func removeContents(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", dir, err)
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, lerr := fsys.List(p); lerr == nil { // a directory
			if err := removeContents(fsys, p); err != nil {
				return err
			}
		}
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("storage: remove %s: %w", p, err)
		}
	}
	if len(names) > 0 {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("storage: sync dir %s: %w", dir, err)
		}
	}
	return nil
}
