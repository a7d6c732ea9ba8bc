package storage

import (
	"errors"
	"fmt"
	"time"
)

// Open's verification: the bytes written since the last verified point.
//
// Right after recovery, Open starts a goroutine that checks every record
// in [max(V, log start), E), E the end of the log at Open (the active
// segment's part below it included), as the scrubber would (checkAt, and
// findValid past a bad record) but at full speed: the store is open and
// serving meanwhile, and Unverified says how much is left, so the broker
// keeps an unchecked replica from being elected master. What it finds is
// recorded as the scrubber's findings are (ScrubStatus, Damaged, a Warn
// line), and V follows it up (verified.go), saved at each segment's end.
//
// It reads one chunk (scanChunk) at a time under the segment list's read
// lock, checking the segment is still listed, like the scrubber: appends
// never wait for it (a roll waits for one chunk's read at most), retention
// may delete a segment under it (the walk moves on), a repair or a cut
// replaces one (the walk goes on in the new one, and V stays where it is
// for the rest of the walk). It stops at Close (stop.background); Close
// waits for it. Options.VerifyOnOpen turns it off.

// VerifyMode switches Open's verification (Options.VerifyOnOpen).
type VerifyMode int8

const (
	// VerifyOn (the default) checks what was written since the verified
	// mark, in the background, after each Open.
	VerifyOn VerifyMode = iota
	// VerifyOff checks nothing at Open (Unverified is 0): the scrubber
	// alone finds damage at rest.
	VerifyOff
)

func (m VerifyMode) String() string {
	switch m {
	case VerifyOn:
		return "on"
	case VerifyOff:
		return "off"
	}
	return fmt.Sprintf("VerifyMode(%d)", int(m))
}

// Unverified is how many bytes of the log Open's verification has still to
// check: 0 once it is done, when it is off, or when V reached the end of
// the log at Open. A broker keeps the replica from being elected while it
// is above 0. It stays as it was if Close stopped the verification.
func (s *Store) Unverified() int64 { return s.verified.left.Load() }

// startVerifyOnOpen starts Open's verification unless it is off or there
// is nothing to check. Open calls it before it returns, so Unverified is
// right from the start.
func (s *Store) startVerifyOnOpen() {
	vs := &s.verified
	vs.end = s.written.Load()
	vs.from = min(max(s.VerifiedOffset(), s.CommitLogMinOffset()), vs.end)
	if s.opts.VerifyOnOpen == VerifyOff || vs.from == vs.end {
		s.log.Debug("storage: nothing to verify at Open", "verified", s.VerifiedOffset(), "end", vs.end, "mode", s.opts.VerifyOnOpen)
		return
	}
	vs.left.Store(vs.end - vs.from)
	vs.done = make(chan struct{})
	s.log.Info("storage: startup verification started", "from", vs.from, "to", vs.end, "bytes", vs.end-vs.from)
	s.wg.Add(1)
	go s.runVerifyOnOpen()
}

// startupWalk is the state of Open's verification.
type startupWalk struct {
	s     *Store
	stop  <-chan struct{}
	gen   int64 // Store.cuts at the start: V moves only while it holds
	from  int64
	end   int64
	hi    int64 // checked up to here
	bad   int64 // bad records found
	clean bool  // nothing bad found yet: V may follow
}

// runVerifyOnOpen is Open's verification goroutine: it owns the walk's
// state, wakes for nothing (it reads until done) and exits when done or
// when Close closes stop.background.
func (s *Store) runVerifyOnOpen() {
	defer s.wg.Done()
	vs := &s.verified
	defer close(vs.done)
	w := &startupWalk{s: s, stop: s.stop.background, gen: s.cuts.Load(), from: vs.from, end: vs.end, hi: vs.from, clean: true}
	start := time.Now()
	err := w.run()
	if errors.Is(err, errScrubStopped) {
		s.log.Info("storage: startup verification stopped by Close", "checked", w.hi-w.from, "left", w.end-w.hi)
		return
	}
	vs.left.Store(0)
	s.log.Info("storage: startup verification done", "from", w.from, "to", w.end, "bytes", w.hi-w.from,
		"took", time.Since(start).Round(time.Millisecond), "badRecords", w.bad, "verified", s.VerifiedOffset())
}

// run walks the segments over [from, end); only errScrubStopped ends it
// early.
func (w *startupWalk) run() error {
	s := w.s
	for _, g := range s.segmentsSnapshot() {
		limit := min(g.end(s.segSize), w.end)
		if limit <= w.hi {
			continue
		}
		if g.base >= w.end {
			break
		}
		err := w.segment(g, max(w.hi, g.base)-g.base, limit-g.base)
		switch {
		case errors.Is(err, errScrubStopped):
			return err
		case errors.Is(err, errSegmentGone): // retention deleted it, or a cut
		case err != nil:
			// A read error is damage too: the rest of the segment is
			// listed (resume -1) for the repairer to fetch.
			at := max(w.hi, g.base)
			w.found(g, at, -1, err)
			s.log.Error("storage: startup verification could not read a segment", "segment", g.path, "at", at, "err", err)
		}
		w.skip(limit)
		if w.clean {
			s.raiseVerified(w.gen, w.from, limit)
		}
	}
	w.skip(w.end)
	return nil
}

// segment checks g's records in [from, limit) (offsets in g). If the
// first check at from fails and from is not g's base, the walk starts
// again at the base once: V is always a record boundary, but a record
// boundary is all that is known of it, and a false finding would send the
// repairer after sound bytes.
func (w *startupWalk) segment(g *segment, from, limit int64) error {
	s := w.s
	r := &segReader{f: &verifyReader{s: s, g: g, stop: w.stop}, size: min(g.seg.Written(), limit)}
	sc := s.scanner()
	first := from > 0
	for pos := from; pos < r.size; {
		rec, blank, bad, err := sc.checkAt(r, g.base, pos)
		if errors.Is(err, errSegmentGone) {
			if ng := w.relist(g); ng != nil { // repaired or cut: go on in the new one
				g = ng
				r = &segReader{f: &verifyReader{s: s, g: g, stop: w.stop}, size: min(g.seg.Written(), limit)}
				continue
			}
		}
		switch {
		case err != nil:
			return err
		case blank:
			w.progress(g.base + limit)
			return nil
		case bad == nil:
			first = false
			pos += int64(len(rec))
			w.progress(g.base + pos)
			continue
		case first:
			first = false
			pos = 0
			continue
		}
		next, err := sc.findValid(r, g.base, pos, r.size)
		if err != nil {
			return err
		}
		w.found(g, g.base+pos, next, bad)
		if next < 0 {
			w.progress(g.base + r.size)
			return nil
		}
		pos = next - g.base
		w.progress(next)
	}
	return nil
}

// relist returns the segment now listed at g's base if it is not g (a
// repair or a cut replaced it), nil if none (retention deleted it).
func (w *startupWalk) relist(g *segment) *segment {
	s := w.s
	s.segs.RLock()
	defer s.segs.RUnlock()
	ng := s.segmentAtLocked(g.base)
	if ng == nil || ng == g || ng.base != g.base {
		return nil
	}
	return ng
}

// progress records that the walk checked up to off.
func (w *startupWalk) progress(off int64) {
	if off = min(off, w.end); off > w.hi {
		w.s.m.startupVerifiedBytes.Add(off - w.hi)
		w.skip(off)
	}
}

// skip moves the walk on to off over bytes that are gone.
func (w *startupWalk) skip(off int64) {
	if off = min(off, w.end); off > w.hi {
		w.hi = off
		w.s.verified.left.Store(max(w.end-off, 1)) // 0 once the walk is over
	}
}

// found records a bad record at off (resume: the next valid one, -1 if
// none): a finding like the scrubber's. V goes up to off if all before it
// was clean, and no further.
func (w *startupWalk) found(g *segment, off, resume int64, bad error) {
	if w.clean {
		w.s.raiseVerified(w.gen, w.from, off)
	}
	w.bad++
	w.clean = false
	w.s.noteBad(g, w.gen, off, resume, bad, "storage: startup verification found a bad record")
}

// verifyReader reads a segment for Open's verification: under the segment
// list's read lock, if the segment is still listed; errScrubStopped once
// Close began.
type verifyReader struct {
	s    *Store
	g    *segment
	stop <-chan struct{}
}

func (r *verifyReader) ReadAt(p []byte, off int64) (int, error) {
	if pace := r.s.opts.verifyPace; pace != nil && !pace(r.stop) {
		return 0, errScrubStopped
	}
	select {
	case <-r.stop:
		return 0, errScrubStopped
	default:
	}
	s := r.s
	s.segs.RLock()
	defer s.segs.RUnlock()
	if s.segmentAtLocked(r.g.base) != r.g {
		return 0, errSegmentGone
	}
	return r.g.seg.ReadAt(p, off)
}
