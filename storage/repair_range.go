package storage

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/samsamq/samsa/storage/record"
)

// Repair from a healthy copy.
//
// Replicas hold byte-identical logs (same records at the same offsets),
// so a record damaged at rest here (found by a read: the quarantine; or by
// the scrubber) can be fetched whole from a replica that holds it intact
// and written back in place. RepairRange does the writing; finding a peer
// and fetching is the broker's (its repairer).

// ErrNotRepairable: the range cannot be repaired in place now (it lies in
// the active segment or above the durable offset, spans segments, or the
// data does not fit it). The caller may try again later.
var ErrNotRepairable = errors.New("storage: range not repairable in place")

// DamagedRange is a span of the log known bad: a quarantined record, or a
// bad record the scrubber found up to where its walk resumed.
type DamagedRange struct {
	From, To int64
	// Why says what found it.
	Why string
}

// Damaged lists the ranges reads and the scrubber found bad and no repair
// has fixed, by offset (overlaps merged).
func (s *Store) Damaged() []DamagedRange {
	var out []DamagedRange
	for _, e := range s.Quarantined() {
		out = append(out, DamagedRange{From: e.PhysOffset, To: e.PhysOffset + int64(e.Size), Why: "quarantined: " + e.Reason})
	}
	s.scrub.mu.Lock()
	for _, f := range s.scrub.status.Corrupt {
		if !s.scrub.known[f.Offset] {
			continue // repaired
		}
		to := f.Resume
		if to < 0 {
			to = f.Offset/s.segSize*s.segSize + s.segSize // to the segment's end
		}
		out = append(out, DamagedRange{From: f.Offset, To: to, Why: "scrub: " + f.Err})
	}
	s.scrub.mu.Unlock()
	return mergeRanges(out)
}

func mergeRanges(rs []DamagedRange) []DamagedRange {
	if len(rs) < 2 {
		return rs
	}
	slices.SortFunc(rs, func(a, b DamagedRange) int { return cmp.Compare(a.From, b.From) })
	out := rs[:1]
	for _, r := range rs[1:] {
		if last := &out[len(out)-1]; r.From <= last.To {
			last.To = max(last.To, r.To)
			continue
		}
		out = append(out, r)
	}
	return out
}

// RepairRange writes data, whole records fetched from a healthy replica's
// log at from (its ReadLog), over the same bytes of this log, and forgets
// the damage found in that range (quarantine entries, scrub findings), so
// the records are served again. Every record must validate at its offset
// (size, magic, physical offset, both CRCs) and the range must lie in one
// sealed segment below the durable offset (ErrNotRepairable otherwise:
// the active segment is the appender's). The segment is closed, written
// through the file system, synced and opened again under the segment
// list's write lock, as a cut does, so readers see either the old bytes
// or the new ones; reads that ran through it retry (Store.cuts). Safe to
// call while the store takes appends.
func (s *Store) RepairRange(from int64, data []byte) error {
	to := from + int64(len(data))
	for p := 0; p < len(data); {
		n, err := record.Validate(data[p:], from+int64(p))
		if err != nil {
			return fmt.Errorf("storage: repair [%d, %d): record at %d: %w", from, to, from+int64(p), err)
		}
		p += n
	}
	if len(data) == 0 || from/s.segSize != (to-1)/s.segSize {
		return fmt.Errorf("%w: [%d, %d) is empty or spans segments", ErrNotRepairable, from, to)
	}
	if d := s.durable.Load(); to > d {
		return fmt.Errorf("%w: [%d, %d) reaches past the durable offset %d", ErrNotRepairable, from, to, d)
	}
	s.retainMu.Lock() // retention deletes no segment meanwhile
	defer s.retainMu.Unlock()
	s.cuts.Add(1) // reads running through it retry; the block cache's generation moves
	defer s.cuts.Add(1)
	if err := s.rewriteSealed(from, data); err != nil {
		return err
	}
	s.forgetDamage(from, to)
	s.m.repairedBytes.Add(int64(len(data)))
	s.log.Warn("storage: repaired a damaged range from a healthy copy", "from", from, "to", to)
	return nil
}

// rewriteSealed swaps the sealed segment holding from for one whose bytes
// at from are data.
func (s *Store) rewriteSealed(from int64, data []byte) error {
	s.segs.Lock()
	defer s.segs.Unlock()
	list := s.segs.list
	i := len(list) - 1
	for i >= 0 && list[i].base > from {
		i--
	}
	if i < 0 || i == len(list)-1 {
		return fmt.Errorf("%w: offset %d is not in a sealed segment", ErrNotRepairable, from)
	}
	g := list[i]
	written := g.seg.Written()
	pos := from - g.base
	if pos+int64(len(data)) > written {
		return fmt.Errorf("%w: [%d, %d) passes %s's written bytes", ErrNotRepairable, from, from+int64(len(data)), g.path)
	}
	s.m.addDeleted(g.seg.Stats())
	if err := g.seg.Close(); err != nil {
		return s.breakWith(fmt.Errorf("repair: close %s: %w", g.path, err))
	}
	werr := writeAtSynced(s, g.path, pos, data)
	ng, err := s.reopenSegment(g.base, written)
	if err != nil {
		return s.breakWith(fmt.Errorf("repair: %w", errors.Join(werr, err)))
	}
	ng.lastTs.Store(g.lastTs.Load())
	ng.hasRecords.Store(g.hasRecords.Load())
	// A new list, not list[i] = ng: segmentsSnapshot hands out the list
	// itself, and a walk over a snapshot must not see it change. A reader
	// holding the old *segment sees it closed.
	nl := slices.Clone(list)
	nl[i] = ng
	s.segs.list = nl
	if werr != nil {
		return fmt.Errorf("storage: repair [%d, %d): %w", from, from+int64(len(data)), werr)
	}
	return nil
}

// writeAtSynced writes data at pos of the file at path and syncs it.
func writeAtSynced(s *Store, path string, pos int64, data []byte) (err error) {
	f, err := s.fs.Open(path, vfsOpts)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	if _, err := f.WriteAt(data, pos); err != nil {
		return writeError("write "+path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// forgetDamage drops the quarantine entries and scrub findings in
// [from, to): those records are whole again.
func (s *Store) forgetDamage(from, to int64) {
	q := s.quarantine()
	q.mu.Lock()
	old := *q.byPhys.Load()
	m := make(map[int64]quarantined, len(old))
	for p, x := range old {
		if p < from || p >= to {
			m[p] = x
		}
	}
	if len(m) != len(old) {
		q.byPhys.Store(&m)
		s.writeQuarantineLocked(m)
	}
	q.mu.Unlock()
	s.scrub.mu.Lock()
	for off := range s.scrub.known {
		if off >= from && off < to {
			delete(s.scrub.known, off)
		}
	}
	s.scrub.mu.Unlock()
}
