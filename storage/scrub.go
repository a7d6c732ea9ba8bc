package storage

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// The scrubber re-reads sealed, durable segments at rest and validates
// every record (checkAt: size, magic, physical offset, both CRCs; past a
// bad record findValid resumes the walk), so damage in segments recovery
// never reads (it scans only after the last checkpoint) is found before a
// consumer trips on it or a replica copies it. Options.Scrub sets its rate
// and period.
//
// It reads through the open segments (backend.Segment.ReadAt), one chunk
// (scanChunk) at a time, holding the segment list's read lock only for
// that chunk's read and re-checking the segment is still listed, so
// retention can delete a segment mid-walk (the walk moves on) and appends
// never wait for it. The rate limiter sleeps between chunks, outside the
// lock, and wakes at Close.
//
// Findings: each distinct bad record is logged once at Warn, counted in
// Metrics.ScrubCorrupt and listed by ScrubStatus (the first
// maxScrubFindings) and Damaged, for the broker's repairer (RepairRange)
// or the operator (samsa store verify on a stopped store). The scrubber
// changes no byte of the log; it moves the verified mark (verified.go):
// up over a clean segment the mark reaches, down to a bad record.

// maxScrubFindings bounds the findings ScrubStatus lists.
const maxScrubFindings = 100

// ScrubStatus is the scrubber's progress and findings.
type ScrubStatus struct {
	// Enabled: the background scrubber runs (Scrub.BytesPerSecond >= 0).
	Enabled bool
	// Running: a pass is under way; Current is the base offset of the
	// segment it reads (-1 between passes).
	Running bool
	Current int64
	// Passes counts finished passes; LastPass is when the last ended.
	Passes   int64
	LastPass time.Time
	// Segments, Bytes and Records count what was checked, all passes.
	Segments, Bytes, Records int64
	// CorruptRecords counts the distinct bad records found; Corrupt lists
	// the first maxScrubFindings of them.
	CorruptRecords int64
	Corrupt        []ScrubFinding
}

// ScrubFinding is one bad record the scrubber found.
type ScrubFinding struct {
	Offset  int64 // CommitLog offset of the bad record
	Segment string
	Resume  int64 // the next valid record in the segment, -1 if none
	Err     string
	Found   time.Time
}

// scrubState is the scrubber's part of the Store.
type scrubState struct {
	mu      sync.Mutex
	status  ScrubStatus
	known   map[int64]bool // offsets already reported
	running bool
}

// ScrubStatus returns the scrubber's progress and findings.
func (s *Store) ScrubStatus() ScrubStatus {
	s.scrub.mu.Lock()
	defer s.scrub.mu.Unlock()
	st := s.scrub.status
	st.Enabled = s.opts.Scrub.BytesPerSecond >= 0
	st.Running = s.scrub.running
	if !st.Running {
		st.Current = -1
	}
	st.Corrupt = append([]ScrubFinding(nil), st.Corrupt...)
	return st
}

var (
	errScrubStopped = errors.New("storage: scrub stopped")
	errSegmentGone  = errors.New("storage: segment deleted during the scrub")
)

// startScrubber starts the scrubber's goroutine unless Scrub is off, and
// returns a function that waits for it to exit (it exits when Close
// closes stop.background). The background goroutine calls both.
func (s *Store) startScrubber() (wait func()) {
	if s.opts.Scrub.BytesPerSecond < 0 {
		return func() {}
	}
	done := make(chan struct{})
	go s.runScrubber(done)
	return func() { <-done }
}

// runScrubber is the scrubber's goroutine. A timer wakes it for each pass
// (min(Interval, 1m) after Open, then Interval after each pass's start);
// it owns the progress fields of the scrub status; it exits when Close
// closes stop.background.
func (s *Store) runScrubber(done chan struct{}) {
	defer close(done)
	o := s.opts.Scrub
	lim := newRateLimiter(o)
	stop := s.stop.background
	wait := min(o.Interval, time.Minute)
	for {
		if !lim.sleep(wait, stop) {
			return
		}
		start := lim.now()
		if err := s.scrubPass(lim, stop); errors.Is(err, errScrubStopped) {
			return
		} else if err != nil {
			s.log.Error("storage: scrub pass failed", "err", err)
		}
		wait = max(o.Interval-lim.now().Sub(start), 0)
	}
}

// scrubPass checks every sealed, durable segment once, oldest first.
func (s *Store) scrubPass(lim *rateLimiter, stop <-chan struct{}) error {
	s.scrub.mu.Lock()
	s.scrub.running = true
	s.scrub.mu.Unlock()
	defer func() {
		s.scrub.mu.Lock()
		s.scrub.running = false
		s.scrub.mu.Unlock()
	}()
	for _, g := range s.segmentsSnapshot() {
		if !g.sealed.Load() || g.end(s.segSize) > s.durable.Load() {
			continue // not at rest yet
		}
		s.scrub.mu.Lock()
		s.scrub.status.Current = g.base
		s.scrub.mu.Unlock()
		gen := s.cuts.Load()
		clean, err := s.scrubSegment(g, gen, lim, stop)
		if errors.Is(err, errSegmentGone) {
			continue // retention deleted it
		}
		if err != nil {
			return err
		}
		if clean { // the verified mark follows a clean segment it reaches (verified.go)
			s.raiseVerified(gen, g.base, g.end(s.segSize))
		}
		s.m.scrubSegments.Add(1)
		s.scrub.mu.Lock()
		s.scrub.status.Segments++
		s.scrub.mu.Unlock()
	}
	s.scrub.mu.Lock()
	s.scrub.status.Passes++
	s.scrub.status.LastPass = lim.now()
	s.scrub.mu.Unlock()
	return nil
}

// scrubSegment walks one segment record by record; clean says it found
// nothing bad.
func (s *Store) scrubSegment(g *segment, gen int64, lim *rateLimiter, stop <-chan struct{}) (clean bool, err error) {
	r := &segReader{f: &scrubReader{s: s, g: g, lim: lim, stop: stop}, size: g.seg.Written()}
	sc := s.scanner()
	var records int64
	defer func() {
		s.scrub.mu.Lock()
		s.scrub.status.Records += records
		s.scrub.mu.Unlock()
	}()
	clean = true
	for pos := int64(0); ; {
		rec, blank, bad, err := sc.checkAt(r, g.base, pos)
		switch {
		case err != nil:
			return false, err
		case blank:
			return clean, nil
		case bad == nil:
			records++
			pos += int64(len(rec))
			continue
		}
		clean = false
		next, err := sc.findValid(r, g.base, pos, r.size)
		if err != nil {
			return false, err
		}
		s.scrubFound(g, gen, g.base+pos, next, bad)
		if next < 0 {
			return false, nil
		}
		pos = next - g.base
	}
}

// scrubFound records a bad record the scrubber found, reading at cut
// generation gen.
func (s *Store) scrubFound(g *segment, gen, off, resume int64, bad error) {
	s.noteBad(g, gen, off, resume, bad, "storage: scrub found a bad record in a sealed segment")
}

// noteBad records a bad record a check found (the scrubber, Open's
// verification): listed once per offset, logged at Warn with msg, and the
// verified mark lowered to it so that a restart before it is repaired
// finds it again (verified.go).
//
// gen is the cut generation (Store.cuts) the finding's reads began at: when
// a cut (TruncateTo, ResetTo, a repair) ran since, the reads may have seen
// the log mid-cut, so the record at off is read again as the log is now
// and the finding dropped unless it is still bad there. A replica that
// lists a sound record as damaged is kept from being elected (broker), so
// a finding the cut made up must not stay.
func (s *Store) noteBad(g *segment, gen, off, resume int64, bad error, msg string) {
	if s.cuts.Load() != gen && !s.stillBad(off) {
		s.log.Info("storage: a bad record found by a read a cut overtook is sound as the log is now; not listed", "offset", off, "err", bad)
		return
	}
	if err := s.lowerVerified(off); err != nil {
		s.log.Error("storage: could not lower the verified mark to a bad record", "offset", off, "err", err)
	}
	s.scrub.mu.Lock()
	if s.scrub.known == nil {
		s.scrub.known = map[int64]bool{}
	}
	if s.scrub.known[off] {
		s.scrub.mu.Unlock()
		return
	}
	s.scrub.known[off] = true
	st := &s.scrub.status
	st.CorruptRecords++
	if len(st.Corrupt) < maxScrubFindings {
		st.Corrupt = append(st.Corrupt, ScrubFinding{Offset: off, Segment: g.path, Resume: resume, Err: bad.Error(), Found: s.clock()})
	}
	s.scrub.mu.Unlock()
	s.m.scrubCorrupt.Add(1)
	s.log.Warn(msg, "segment", g.path, "offset", off,
		"resume", resume, "err", bad, "hint", fmt.Sprintf("stop the broker and run 'samsa store verify %s'", s.dir))
}

// scrubReader reads a segment for the scrubber: each read is paid for to
// the rate limiter first (outside any lock), then done under the segment
// list's read lock, if the segment is still listed.
type scrubReader struct {
	s    *Store
	g    *segment
	lim  *rateLimiter
	stop <-chan struct{}
}

func (r *scrubReader) ReadAt(p []byte, off int64) (int, error) {
	if !r.lim.take(len(p), r.stop) {
		return 0, errScrubStopped
	}
	s := r.s
	s.segs.RLock()
	defer s.segs.RUnlock()
	if s.segmentAtLocked(r.g.base) != r.g {
		return 0, errSegmentGone
	}
	n, err := r.g.seg.ReadAt(p, off)
	s.m.scrubBytes.Add(int64(n))
	s.scrub.mu.Lock()
	s.scrub.status.Bytes += int64(n)
	s.scrub.mu.Unlock()
	return n, err
}

// rateLimiter paces reads to a byte rate: each take moves a deadline on
// by n/rate and sleeps until it (no burst saved up while idle).
type rateLimiter struct {
	rate  int64
	now   func() time.Time
	sleep func(d time.Duration, stop <-chan struct{}) bool
	next  time.Time
}

func newRateLimiter(o ScrubOptions) *rateLimiter {
	l := &rateLimiter{rate: o.BytesPerSecond, now: o.now, sleep: o.sleep}
	if l.now == nil {
		l.now = time.Now
	}
	if l.sleep == nil {
		l.sleep = sleepOrStop
	}
	return l
}

// take waits until n more bytes are within the rate; false if stop
// closed first.
func (l *rateLimiter) take(n int, stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	default:
	}
	if l.rate <= 0 {
		return true
	}
	now := l.now()
	if l.next.Before(now) {
		l.next = now
	}
	l.next = l.next.Add(time.Duration(float64(n) * float64(time.Second) / float64(l.rate)))
	if d := l.next.Sub(now); d > 0 {
		return l.sleep(d, stop)
	}
	return true
}

// sleepOrStop sleeps for d; false if stop closed first.
func sleepOrStop(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// stillBad reads the record at off again as the log is now: false when
// off is past the written end or no segment holds it any more (a cut took
// it) or a valid record or a segment's blank starts there.
func (s *Store) stillBad(off int64) bool {
	s.segs.RLock()
	defer s.segs.RUnlock()
	if off >= s.written.Load() {
		return false
	}
	g := s.segmentAtLocked(off - off%s.segSize)
	if g == nil {
		return false
	}
	r := &segReader{f: g.seg, size: g.seg.Written()}
	_, _, bad, err := s.scanner().checkAt(r, g.base, off-g.base)
	return err != nil || bad != nil
}

// dropFindingsFrom forgets the scrubber's and Open's verification's
// findings at or past off (a cut removed their records; new ones will lie
// there), as dropQuarantineFrom does for the quarantine.
func (s *Store) dropFindingsFrom(off int64) {
	s.scrub.mu.Lock()
	defer s.scrub.mu.Unlock()
	st := &s.scrub.status
	kept := st.Corrupt[:0]
	for _, f := range st.Corrupt {
		if f.Offset < off {
			kept = append(kept, f)
		}
	}
	st.Corrupt = kept
	for o := range s.scrub.known {
		if o >= off {
			delete(s.scrub.known, o)
		}
	}
}
