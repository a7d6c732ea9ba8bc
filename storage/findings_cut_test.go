package storage

import (
	"errors"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestCutDropsFindings: a finding (the scrubber's or Open's
// verification's) at or past a cut goes with the cut, as the quarantine's
// entries do: the replica's log no longer holds that record, and a
// damaged range left listed would keep a sound replica from being elected.
func TestCutDropsFindings(t *testing.T) {
	mem := vfs.NewMem()
	s := mustOpen(t, testOptions(mem, "pwrite", FlushSync))
	defer s.Close()
	var res []AppendResult
	for i := 0; i < 6; i++ {
		r, err := s.Append(t.Context(), testMessage("T", 0, 100))
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	g := s.segmentsSnapshot()[0]
	s.noteBad(g, s.cuts.Load(), res[1].PhysicalOffset, res[2].PhysicalOffset, errors.New("planted"), "test")
	s.noteBad(g, s.cuts.Load(), res[4].PhysicalOffset, res[5].PhysicalOffset, errors.New("planted"), "test")
	if n := len(s.Damaged()); n != 2 {
		t.Fatalf("%d damaged ranges listed, want the 2 planted", n)
	}
	waitDispatched(t, s)
	if err := s.TruncateTo(res[3].PhysicalOffset); err != nil {
		t.Fatal(err)
	}
	d := s.Damaged()
	if len(d) != 1 || d[0].From != res[1].PhysicalOffset {
		t.Fatalf("after the cut: damaged %+v, want only the one below it at %d", d, res[1].PhysicalOffset)
	}
	if err := s.ResetTo(0); err != nil {
		t.Fatal(err)
	}
	if d := s.Damaged(); len(d) != 0 {
		t.Fatalf("after the reset: damaged %+v", d)
	}
}

// TestFindingOvertakenByCut: a check whose reads began before a cut
// (another cut generation) reports a bad record; the record at that place
// is sound as the log is now (or gone), so nothing is listed.
func TestFindingOvertakenByCut(t *testing.T) {
	mem := vfs.NewMem()
	s := mustOpen(t, testOptions(mem, "pwrite", FlushSync))
	defer s.Close()
	var res []AppendResult
	for i := 0; i < 4; i++ {
		r, err := s.Append(t.Context(), testMessage("T", 0, 100))
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	g := s.segmentsSnapshot()[0]
	stale := s.cuts.Load() - 2 // reads that began before a cut
	s.noteBad(g, stale, res[2].PhysicalOffset, -1, errors.New("torn by the cut"), "test")
	s.noteBad(g, stale, res[3].PhysicalOffset+int64(res[3].Size)+100, -1, errors.New("past the end"), "test")
	if d := s.Damaged(); len(d) != 0 {
		t.Fatalf("listed %+v: findings a cut overtook, of a sound record and of one past the end", d)
	}
	// The same finding from reads of the current generation is listed.
	s.noteBad(g, s.cuts.Load(), res[2].PhysicalOffset, -1, errors.New("bad"), "test")
	if d := s.Damaged(); len(d) != 1 {
		t.Fatalf("listed %+v, want the one finding", d)
	}
}
