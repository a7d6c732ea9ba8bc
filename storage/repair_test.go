package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

func mustRepair(t *testing.T, opts Options, dryRun bool) RepairReport {
	t.Helper()
	return mustRepairWith(t, RepairOptions{Dir: opts.Dir, FS: opts.FS, DryRun: dryRun})
}

func mustRepairWith(t *testing.T, ro RepairOptions) RepairReport {
	t.Helper()
	ro.Logger = quietLogger()
	r, err := Repair(ro)
	if err != nil {
		t.Fatal(err)
	}
	if *verbose {
		var b strings.Builder
		r.WriteText(&b)
		t.Log(b.String())
	}
	return r
}

// verifyClean fails the test if Verify finds corruption.
func verifyClean(t *testing.T, opts Options) {
	t.Helper()
	r := mustVerify(t, opts)
	if r.Corrupt() {
		var b strings.Builder
		r.WriteText(&b)
		t.Fatalf("Verify after repair: %s", b.String())
	}
}

// The operator's case: the last segment truncated after a clean stop.
// Open refuses; a dry run changes nothing; Repair cuts at the last whole
// record, keeps the cut bytes, and the store opens with everything before.
func TestRepairTruncatedAfterCleanStop(t *testing.T) {
	mem, opts, res := cleanFixture(t, 10)
	last := res[9]
	patch(t, mem, opts, last.PhysicalOffset, func(f vfs.File, off int64) { f.Truncate(off + 30) })
	seg := filepath.Join(opts.Dir, "commitlog", segmentName(last.PhysicalOffset/opts.SegmentSize*opts.SegmentSize))
	before := readMemFile(t, mem, seg)
	if _, err := Open(opts); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a truncated store: %v", err)
	}

	plan := mustRepair(t, opts, true)
	if !plan.Needed || plan.Cut != last.PhysicalOffset || plan.EntriesDropped != 1 || len(plan.Actions) == 0 {
		t.Fatalf("dry run: %+v", plan)
	}
	if got := readMemFile(t, mem, seg); !bytes.Equal(got, before) || len(lostFoundDirs(t, opts)) != 0 {
		t.Fatal("the dry run changed the store")
	}
	if _, err := Open(opts); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open after a dry run: %v", err)
	}

	rep := mustRepair(t, opts, false)
	if rep.Cut != last.PhysicalOffset || rep.LostFound == "" || rep.EntriesDropped != 1 {
		t.Fatalf("repair: %+v", rep)
	}
	m := readManifest(t, mem, rep.LostFound)
	kept := readMemFile(t, mem, filepath.Join(rep.LostFound, m.Files[0].Name))
	if off := last.PhysicalOffset % opts.SegmentSize; !bytes.Equal(kept, bytes.TrimRight(before[off:], "\x00")) {
		t.Fatalf("lost+found kept %d bytes, want the torn record's 30 up to its last non-zero one", len(kept))
	}
	verifyClean(t, opts)
	s := mustOpen(t, opts)
	if s.WrittenOffset() != last.PhysicalOffset || s.MaxQueueOffset("T", 1) != 4 || s.MaxQueueOffset("T", 0) != 5 {
		t.Fatalf("after repair: written %d, T/1 %d, T/0 %d", s.WrittenOffset(), s.MaxQueueOffset("T", 1), s.MaxQueueOffset("T", 0))
	}
	for _, r := range res[:9] {
		if _, err := s.ReadAt(r.PhysicalOffset, r.Size); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r := mustRepair(t, opts, false); r.Needed {
		t.Fatalf("a second repair found work: %+v", r)
	}
}

// A bad record below the durable offset after a crash, its header
// damaged (its queue offset), with later segments holding valid records:
// Open refuses; Repair cannot tell the damaged record apart, so it cuts
// there and keeps the later segments whole in lost+found.
func TestRepairCutKeepsLaterSegments(t *testing.T) {
	mem, opts, res, victim := midLogFixture(t)
	flipByte(t, mem, opts, res[victim].PhysicalOffset+record.OffQueueOffset+7)
	if _, err := Open(opts); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "samsa store repair") {
		t.Fatalf("Open: %v", err)
	}
	rep := mustRepair(t, opts, false)
	if len(rep.Holes) != 0 {
		t.Fatalf("repair wrote holes over a record whose queue offset is damaged: %+v", rep.Holes)
	}
	want := int64(39 - victim) // the victim itself is not valid
	if rep.Cut != res[victim].PhysicalOffset || rep.Lost.Valid.Records != want || rep.LostFound == "" {
		t.Fatalf("repair: cut %d, kept %d valid records; want %d, %d", rep.Cut, rep.Lost.Valid.Records, res[victim].PhysicalOffset, want)
	}
	verifyClean(t, opts)
	s := mustOpen(t, opts)
	defer s.Close()
	if s.WrittenOffset() != res[victim].PhysicalOffset {
		t.Fatalf("written %d", s.WrittenOffset())
	}
}

func TestRepairNothingToDo(t *testing.T) {
	_, opts, _ := cleanFixture(t, 10)
	rep := mustRepair(t, opts, false)
	if rep.Needed || len(lostFoundDirs(t, opts)) != 0 {
		t.Fatalf("repair of a sound store: %+v", rep)
	}
	s := mustOpen(t, opts)
	s.Close()
}

// A consume queue shorter than the checkpoint says (its file truncated
// after a clean stop): Open refuses; Repair makes the next Open re-index
// the log into it.
func TestRepairQueueBehindCheckpoint(t *testing.T) {
	mem, opts, _ := cleanFixture(t, 10)
	path := filepath.Join(opts.Dir, "consumequeue", "T", "0", strings.Repeat("0", 20))
	f, err := mem.Open(path, vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(2 * 20)
	f.Sync()
	f.Close()
	_, err = Open(opts)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "samsa store repair") {
		t.Fatalf("Open: %v", err)
	}
	rep := mustRepair(t, opts, false)
	if !rep.Needed || rep.LostFound != "" {
		t.Fatalf("repair: %+v", rep)
	}
	s := mustOpen(t, opts)
	defer s.Close()
	if got := s.MaxQueueOffset("T", 0); got != 5 {
		t.Fatalf("T/0 max offset %d after repair, want 5", got)
	}
}

// A damaged checkpoint: Open refuses and says what to run; Repair writes
// one that makes Open scan and re-index the whole log.
func TestRepairDamagedCheckpoint(t *testing.T) {
	mem, opts, res := cleanFixture(t, 10)
	ck := filepath.Join(opts.Dir, "checkpoint")
	f, err := mem.Open(ck, vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff, 0xff}, 20)
	f.Sync()
	f.Close()
	if _, err := Open(opts); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "samsa store repair") {
		t.Fatalf("Open: %v", err)
	}
	if r := mustVerify(t, opts); !r.Corrupt() {
		t.Fatalf("Verify missed the damaged checkpoint: %+v", r.Problems)
	}
	if rep := mustRepair(t, opts, false); !rep.Needed {
		t.Fatalf("repair: %+v", rep)
	}
	s := mustOpen(t, opts)
	defer s.Close()
	last := res[9]
	if s.WrittenOffset() != last.PhysicalOffset+int64(last.Size) || s.MaxQueueOffset("T", 1) != 5 {
		t.Fatalf("after repair: written %d, T/1 %d", s.WrittenOffset(), s.MaxQueueOffset("T", 1))
	}
}

// A segment file missing in the middle: Open refuses; Repair ends the log
// at the gap and keeps the segments after it in lost+found.
func TestRepairMissingSegment(t *testing.T) {
	mem, opts, res := cleanFixture(t, 40)
	if res[39].PhysicalOffset < 2*opts.SegmentSize {
		t.Fatal("fixture: want three segments")
	}
	if err := mem.Remove(filepath.Join(opts.Dir, "commitlog", segmentName(opts.SegmentSize))); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(opts); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "samsa store repair") {
		t.Fatalf("Open: %v", err)
	}
	rep := mustRepair(t, opts, false)
	if rep.Cut != opts.SegmentSize || rep.LostFound == "" || rep.Lost.Valid.Records == 0 {
		t.Fatalf("repair: %+v", rep)
	}
	verifyClean(t, opts)
	if _, ok := problemAt(mustVerify(t, opts), SevNote, -1); !ok {
		t.Fatal("Verify does not mention lost+found")
	}
	s := mustOpen(t, opts)
	defer s.Close()
	if s.WrittenOffset() != opts.SegmentSize {
		t.Fatalf("written %d, want the gap at %d", s.WrittenOffset(), opts.SegmentSize)
	}
}

// A flipped byte in a record's body in the middle of the log after a
// crash, valid records after it in its segment and in later ones: Open
// refuses; Repair with Holes (a store with no replica) writes a hole over
// the damaged record instead of cutting
// (its bytes to lost+found). Every other record stays at its offsets and
// readable, the victim's queue offset is skipped by reads, a read of its
// place finds nothing, and the store opens, verifies and appends.
func TestRepairHoleKeepsLaterRecords(t *testing.T) {
	mem, opts, res, victim := midLogFixture(t)
	v := res[victim]
	flipByte(t, mem, opts, v.PhysicalOffset+90) // in the body
	if _, err := Open(opts); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v", err)
	}
	end := res[39].PhysicalOffset + int64(res[39].Size)
	plan := mustRepairWith(t, RepairOptions{Dir: opts.Dir, FS: opts.FS, DryRun: true, Holes: true})
	if len(plan.Holes) != 1 || plan.Holes[0].Offset != v.PhysicalOffset || plan.Cut != end || len(lostFoundDirs(t, opts)) != 0 {
		t.Fatalf("dry run: holes %+v, cut %d (want a hole at %d, the log's end %d), lost+found %v", plan.Holes, plan.Cut, v.PhysicalOffset, end, lostFoundDirs(t, opts))
	}
	rep := mustRepairWith(t, RepairOptions{Dir: opts.Dir, FS: opts.FS, Holes: true})
	h := rep.Holes
	if len(h) != 1 || h[0].Offset != v.PhysicalOffset || h[0].Size != int(v.Size) || h[0].Topic != "T" ||
		h[0].QueueID != int32(victim%2) || h[0].QueueOffset != v.QueueOffset || rep.Cut != end || rep.HolesLostFound == "" {
		t.Fatalf("repair: holes %+v, cut %d, lost+found %q", h, rep.Cut, rep.HolesLostFound)
	}
	if kept := readMemFile(t, mem, filepath.Join(rep.HolesLostFound, fmt.Sprintf("damaged-%020d", v.PhysicalOffset))); len(kept) != int(v.Size) {
		t.Fatalf("lost+found kept %d bytes of the damaged record, want %d", len(kept), v.Size)
	}
	verifyClean(t, opts)
	qOf := func(i int) int32 { return int32(i % 2) }
	for round := 0; round < 2; round++ { // and again after a clean close
		s := mustOpen(t, opts)
		if s.WrittenOffset() != end {
			t.Fatalf("written %d, want %d", s.WrittenOffset(), end)
		}
		for i, r := range res {
			_, err := s.ReadAt(r.PhysicalOffset, r.Size)
			if i == victim {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("ReadAt the hole: %v", err)
				}
			} else if err != nil {
				t.Fatalf("ReadAt record %d: %v", i, err)
			}
		}
		for q := int32(0); q < 2; q++ {
			var offs []int64
			for next := int64(0); next < s.MaxQueueOffset("T", q); {
				g, err := s.GetMessages("T", q, next, 4, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				offs = append(offs, g.QueueOffsets...)
				if g.NextOffset <= next {
					t.Fatalf("T/%d: no progress at %d (%v)", q, next, g.Status)
				}
				next = g.NextOffset
			}
			var want []int64
			for i, r := range res {
				if qOf(i) == q && i != victim {
					want = append(want, r.QueueOffset)
				}
			}
			if !slices.Equal(offs, want) {
				t.Fatalf("T/%d read offsets %v, want %v", q, offs, want)
			}
		}
		r, err := s.Append(context.Background(), testMessage("T", int32(victim%2), 100))
		if err != nil {
			t.Fatal(err)
		}
		if len(res)%2 != victim%2 {
			r2, err := s.Append(context.Background(), testMessage("T", int32(len(res)%2), 100))
			if err != nil {
				t.Fatal(err)
			}
			res = append(res, r2)
		}
		res = append(res, r)
		end = s.WrittenOffset()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if r := mustRepair(t, opts, false); r.Needed {
		t.Fatalf("a second repair found work: %+v", r)
	}
}

// midLogFixture is corruptFixture's 40 records with a checkpoint after 20
// in 4 KiB segments, and victim: the first record of the checkpoint's
// segment, so that records follow it in its segment and in a later one.
func midLogFixture(t *testing.T) (*vfs.MemFS, Options, []AppendResult, int) {
	t.Helper()
	mem, opts, res := corruptFixture(t, 40, 20, 4<<10)
	seg := func(i int) int64 { return res[i].PhysicalOffset / opts.SegmentSize }
	victim := -1
	for i := 19; i > 0 && seg(i) == seg(20); i-- {
		victim = i
	}
	if victim < 0 || seg(39) == seg(20) {
		t.Fatal("fixture: want a victim below the checkpoint in its segment, and a later segment")
	}
	return mem, opts, res, victim
}
