package storage

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// verifyOptions are a store of 4 KiB segments with the scrubber off, so
// only Open's verification and the cuts move the verified mark.
func verifyOptions(mem *vfs.MemFS) Options {
	opts := testOptions(mem, "pwrite", FlushSync)
	opts.SegmentSize = 4 << 10
	opts.Scrub.BytesPerSecond = -1
	return opts
}

// appendRecs appends n records and returns their results.
func appendRecs(t *testing.T, s *Store, n int) []AppendResult {
	t.Helper()
	var res []AppendResult
	for i := 0; i < n; i++ {
		r, err := s.Append(context.Background(), testMessage("T", int32(i%2), 150+i))
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	return res
}

// waitVerifyDone waits (with a generous deadline) until Open's
// verification has ended, if one ran.
func waitVerifyDone(t *testing.T, s *Store) {
	t.Helper()
	if s.verified.done == nil {
		return
	}
	select {
	case <-s.verified.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("Open's verification did not end: %d bytes left", s.Unverified())
	}
}

// savedVerified reads the verified mark from the file.
func savedVerified(t *testing.T, fsys vfs.FS, opts Options) int64 {
	t.Helper()
	b, err := readFile(fsys, opts.Dir+"/verified")
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeVerified(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func closeStore(t *testing.T, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// Damage done while the store is stopped, after a clean Close (Open then
// reads nothing), in a sealed segment and in the active one, is found by
// Open's verification and listed by Damaged; the mark stops at the first
// bad record, so after a repair of that one and a restart the other, not
// repairable in place, is found again.
func TestVerifyOnOpenFindsDamageAtRest(t *testing.T) {
	mem := vfs.NewMem()
	opts := verifyOptions(mem)
	s := mustOpen(t, opts)
	res := appendRecs(t, s, 40)
	end := s.WrittenOffset()
	active := s.segmentsSnapshot()[len(s.segmentsSnapshot())-1].base
	sealed, last := res[3], res[len(res)-1]
	if sealed.PhysicalOffset+int64(sealed.Size) > active || last.PhysicalOffset < active {
		t.Fatalf("fixture: records at %d and %d, active segment at %d", sealed.PhysicalOffset, last.PhysicalOffset, active)
	}
	healthy := mustRead(t, s, sealed.PhysicalOffset, int(sealed.Size))
	closeStore(t, s)

	flipByte(t, mem, opts, sealed.PhysicalOffset+90)
	flipByte(t, mem, opts, last.PhysicalOffset+90)
	log, logs := newLogCapture()
	opts.Logger = log
	gate := make(chan struct{}) // holds the walk's first read
	opts.verifyPace = func(stop <-chan struct{}) bool {
		select {
		case <-gate:
			return true
		case <-stop:
			return false
		}
	}
	s = mustOpen(t, opts)
	if u := s.Unverified(); u != end {
		t.Fatalf("Unverified right after Open: %d, want %d", u, end)
	}
	close(gate)
	waitVerifyDone(t, s)
	d := s.Damaged()
	if len(d) != 2 || d[0].From != sealed.PhysicalOffset || d[1].From != last.PhysicalOffset || !strings.HasPrefix(d[0].Why, "scrub: ") {
		t.Fatalf("Damaged: %+v, want the records at %d and %d", d, sealed.PhysicalOffset, last.PhysicalOffset)
	}
	m := s.Metrics()
	if s.Unverified() != 0 || m.Unverified != 0 || m.StartupVerifiedBytes != end || m.ScrubCorrupt != 2 {
		t.Fatalf("Unverified %d, metrics %+v; want 0 left, %d checked, 2 bad", s.Unverified(), m, end)
	}
	if v := s.VerifiedOffset(); v != sealed.PhysicalOffset || savedVerified(t, mem, opts) != v {
		t.Fatalf("verified mark %d (saved %d), want the first bad record %d", v, savedVerified(t, mem, opts), sealed.PhysicalOffset)
	}
	if l, ok := logs.find("startup verification done"); !ok || l.level != slog.LevelInfo || l.attrs["badRecords"] != "2" {
		t.Fatalf("no Info line with 2 bad records: %+v", l)
	}
	if l, ok := logs.find("startup verification found a bad record"); !ok || l.level != slog.LevelWarn {
		t.Fatalf("no Warn line for a bad record: %v", logs.atLeast(slog.LevelWarn))
	}

	// The repairer fixes the sealed one; the mark stays (the walk that
	// passed it was not clean); a restart checks from there again.
	if err := s.RepairRange(sealed.PhysicalOffset, healthy); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	opts.Logger, opts.verifyPace = quietLogger(), nil
	s = mustOpen(t, opts)
	defer s.Close()
	waitVerifyDone(t, s)
	if d := s.Damaged(); len(d) != 1 || d[0].From != last.PhysicalOffset {
		t.Fatalf("Damaged after the repair and a restart: %+v, want the record at %d", d, last.PhysicalOffset)
	}
	if m := s.Metrics(); m.StartupVerifiedBytes != end-sealed.PhysicalOffset || s.VerifiedOffset() != last.PhysicalOffset {
		t.Fatalf("checked %d bytes, mark %d; want %d bytes, mark at %d", m.StartupVerifiedBytes, s.VerifiedOffset(),
			end-sealed.PhysicalOffset, last.PhysicalOffset)
	}
}

// The mark persists: each Open checks only what was appended since the
// last verified point (counted, not timed), and nothing when nothing was.
// VerifyOnOpen off checks nothing.
func TestVerifyOnOpenChecksOnlyNewBytes(t *testing.T) {
	mem := vfs.NewMem()
	opts := verifyOptions(mem)
	s := mustOpen(t, opts)
	if s.verified.done != nil || s.Unverified() != 0 {
		t.Fatal("a new store verifies something")
	}
	appendRecs(t, s, 30)
	e1 := s.WrittenOffset()
	if s.VerifiedOffset() != 0 {
		t.Fatalf("appends moved the mark to %d", s.VerifiedOffset())
	}
	closeStore(t, s)

	check := func(want, mark int64) {
		t.Helper()
		s = mustOpen(t, opts)
		waitVerifyDone(t, s)
		m := s.Metrics()
		if m.StartupVerifiedBytes != want || m.Unverified != 0 || s.VerifiedOffset() != mark || m.VerifiedOffset != mark {
			t.Fatalf("checked %d bytes, %d left, mark %d; want %d checked, mark %d", m.StartupVerifiedBytes, m.Unverified, s.VerifiedOffset(), want, mark)
		}
		if want > 0 && savedVerified(t, mem, opts) != mark {
			t.Fatalf("saved mark %d, want %d", savedVerified(t, mem, opts), mark)
		}
	}
	check(e1, e1)
	closeStore(t, s)
	check(0, e1)
	res := appendRecs(t, s, 25)
	e2 := s.WrittenOffset()
	if e2 <= e1 || res[0].PhysicalOffset != e1 {
		t.Fatalf("fixture: %d after %d", e2, e1)
	}
	closeStore(t, s)
	check(e2-e1, e2)
	appendRecs(t, s, 5)
	closeStore(t, s)

	opts.VerifyOnOpen = VerifyOff
	check(0, e2)
	closeStore(t, s)
}

// An unclean Open's scan moves the mark to the end it recovered when it
// started at or below the mark.
func TestVerifyRecoveryScanRaisesMark(t *testing.T) {
	mem := vfs.NewMem()
	opts := verifyOptions(mem)
	s := mustOpen(t, opts)
	appendRecs(t, s, 20)
	closeStore(t, s)
	s = mustOpen(t, opts) // checks [0, e1)
	waitVerifyDone(t, s)
	appendRecs(t, s, 20)
	end := s.WrittenOffset()
	img := mem.CrashClone(nil) // FlushSync: every record survives
	closeStore(t, s)
	opts.FS = img
	s = mustOpen(t, opts)
	defer s.Close()
	waitVerifyDone(t, s)
	if s.VerifiedOffset() != end || s.Metrics().StartupVerifiedBytes != 0 {
		t.Fatalf("after an unclean Open: mark %d, checked %d; want the mark at %d, nothing checked", s.VerifiedOffset(), s.Metrics().StartupVerifiedBytes, end)
	}
}

// TruncateTo lowers the mark to the cut and ResetTo to its base (first
// durably below it, then to it once done), each saved; appends do not
// raise it; the next Open checks from there.
func TestVerifyMarkFollowsCuts(t *testing.T) {
	mem := vfs.NewMem()
	opts := verifyOptions(mem)
	s := mustOpen(t, opts)
	res := appendRecs(t, s, 40)
	end := s.WrittenOffset()
	closeStore(t, s)
	s = mustOpen(t, opts)
	waitVerifyDone(t, s)
	if s.VerifiedOffset() != end {
		t.Fatalf("mark %d, want %d", s.VerifiedOffset(), end)
	}
	cut := res[25].PhysicalOffset
	if err := s.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if v := s.VerifiedOffset(); v != cut || savedVerified(t, mem, opts) != cut {
		t.Fatalf("after TruncateTo(%d): mark %d, saved %d", cut, v, savedVerified(t, mem, opts))
	}
	appendRecs(t, s, 10)
	e2 := s.WrittenOffset()
	if s.VerifiedOffset() != cut {
		t.Fatalf("appends after the cut moved the mark to %d", s.VerifiedOffset())
	}
	closeStore(t, s)
	s = mustOpen(t, opts)
	waitVerifyDone(t, s)
	if m := s.Metrics(); m.StartupVerifiedBytes != e2-cut || s.VerifiedOffset() != e2 {
		t.Fatalf("after the cut and a restart: checked %d, mark %d; want %d, %d", m.StartupVerifiedBytes, s.VerifiedOffset(), e2-cut, e2)
	}

	for _, base := range []int64{0, 64 * opts.SegmentSize} {
		if err := s.ResetTo(base); err != nil {
			t.Fatal(err)
		}
		if v := s.VerifiedOffset(); v != base || savedVerified(t, mem, opts) != base {
			t.Fatalf("after ResetTo(%d): mark %d, saved %d", base, v, savedVerified(t, mem, opts))
		}
	}
	closeStore(t, s)
}

// A bad record the scrubber finds below the mark lowers it (a restart
// before the repair finds it again); a clean pass over sealed segments
// the mark reaches raises it, but not past the durable offset or into
// the active segment.
func TestVerifyMarkAndScrubber(t *testing.T) {
	mem := vfs.NewMem()
	opts := verifyOptions(mem)
	opts.VerifyOnOpen = VerifyOff
	s := mustOpen(t, opts)
	defer s.Close()
	res := appendRecs(t, s, 40)
	segs := s.segmentsSnapshot()
	active := segs[len(segs)-1].base
	lim := newRateLimiter(ScrubOptions{})
	if err := s.scrubPass(lim, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	if v := s.VerifiedOffset(); v != active {
		t.Fatalf("after a clean pass: mark %d, want the active segment's base %d", v, active)
	}
	victim := res[3]
	flipByte(t, mem, opts, victim.PhysicalOffset+90)
	if err := s.scrubPass(lim, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	if v := s.VerifiedOffset(); v != victim.PhysicalOffset || savedVerified(t, mem, opts) != v {
		t.Fatalf("after a bad record: mark %d, want %d", v, victim.PhysicalOffset)
	}
}

// A damaged or foreign verified file does not fail Open: it is logged and
// taken for 0 (the whole log is checked).
func TestVerifyDamagedMarkFile(t *testing.T) {
	for name, b := range map[string][]byte{
		"flipped": func() []byte { b := encodeVerified(1 << 20); b[10] ^= 1; return b }(),
		"short":   encodeVerified(1 << 20)[:12],
		"foreign": []byte("not a verified mark at all"),
	} {
		t.Run(name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := verifyOptions(mem)
			s := mustOpen(t, opts)
			appendRecs(t, s, 20)
			end := s.WrittenOffset()
			closeStore(t, s)
			f, err := mem.Create(opts.Dir+"/verified", vfs.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt(b, 0)
			f.Sync()
			f.Close()
			log, logs := newLogCapture()
			opts.Logger = log
			s = mustOpen(t, opts)
			defer s.Close()
			waitVerifyDone(t, s)
			if l, ok := logs.find("verified mark is unreadable"); !ok || l.level != slog.LevelWarn {
				t.Fatalf("no Warn about the file: %v", logs.atLeast(slog.LevelWarn))
			}
			if m := s.Metrics(); m.StartupVerifiedBytes != end || s.VerifiedOffset() != end || savedVerified(t, mem, opts) != end {
				t.Fatalf("checked %d, mark %d; want the whole log %d", m.StartupVerifiedBytes, s.VerifiedOffset(), end)
			}
		})
	}
}

// Close during Open's verification returns (the walk stops at the next
// chunk; here it waits on a read that never comes) and leaves no
// goroutine; what was not checked stays unverified and the mark where the
// walk got. Appends go on during the walk.
func TestVerifyStopsAtClose(t *testing.T) {
	mem := vfs.NewMem()
	opts := verifyOptions(mem)
	s := mustOpen(t, opts)
	appendRecs(t, s, 60)
	end := s.WrittenOffset()
	closeStore(t, s)

	reads := 0
	paused := make(chan struct{})
	opts.verifyPace = func(stop <-chan struct{}) bool {
		if reads++; reads < 3 {
			return true
		}
		if reads == 3 {
			close(paused)
		}
		<-stop // a read that takes until Close
		return false
	}
	s = mustOpen(t, opts)
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the walk never reached its third read")
	}
	appendRecs(t, s, 5) // the walk holds nothing appends need
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close waits for Open's verification")
	}
	if u, v := s.Unverified(), s.VerifiedOffset(); u <= 0 || v <= 0 || v >= end {
		t.Fatalf("stopped walk: %d left, mark %d; want some left and the mark inside (0, %d)", u, v, end)
	}
	buf := make([]byte, 1<<20)
	if st := string(buf[:runtime.Stack(buf, true)]); strings.Contains(st, "runVerifyOnOpen") {
		t.Fatalf("Open's verification goroutine outlived Close:\n%s", st)
	}
}
