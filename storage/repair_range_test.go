package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestRepairRange: a record damaged at rest in a sealed segment is found
// by a read (quarantined, listed by Damaged), written back whole from a
// healthy copy of it (what a peer's ReadLog gives), served again, and
// stays whole across a restart. Bad data and ranges that cannot be
// rewritten in place are refused, changing nothing.
func TestRepairRange(t *testing.T) {
	for _, be := range memBackends(t) {
		t.Run("backend="+be, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := testOptions(mem, be, FlushSync)
			opts.SegmentSize = 4 << 10
			s := mustOpen(t, opts)
			res := appendN(t, s, "T", 0, 30, 300)
			waitDispatched(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			const victim = 3
			v := res[victim]
			seg := filepath.Join(opts.Dir, "commitlog", segmentName(v.PhysicalOffset/opts.SegmentSize*opts.SegmentSize))
			file := readMemFile(t, mem, seg)
			pos := v.PhysicalOffset % opts.SegmentSize
			healthy := append([]byte(nil), file[pos:pos+int64(v.Size)]...)
			flipByte(t, mem, opts, v.PhysicalOffset+100)

			s = mustOpen(t, opts)
			if _, err := getAll(t, s, victim); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("pull at the damaged record: %v, want ErrCorrupt", err)
			}
			d := s.Damaged()
			if len(d) != 1 || d[0].From != v.PhysicalOffset || d[0].To != v.PhysicalOffset+int64(v.Size) {
				t.Fatalf("Damaged = %+v, want [%d, %d)", d, v.PhysicalOffset, v.PhysicalOffset+int64(v.Size))
			}

			// Refused: a damaged copy, a copy placed elsewhere, the active
			// segment.
			bad := append([]byte(nil), healthy...)
			bad[100] ^= 1
			last := res[len(res)-1]
			for _, tc := range []struct {
				from int64
				data []byte
			}{{v.PhysicalOffset, bad}, {res[victim+1].PhysicalOffset, healthy}, {last.PhysicalOffset, healthy}} {
				if err := s.RepairRange(tc.from, tc.data); err == nil {
					t.Fatalf("RepairRange(%d, %d bytes) succeeded", tc.from, len(tc.data))
				}
			}
			activeCopy := readMemFile(t, mem, filepath.Join(opts.Dir, "commitlog", segmentName(last.PhysicalOffset/opts.SegmentSize*opts.SegmentSize)))
			lp := last.PhysicalOffset % opts.SegmentSize
			if err := s.RepairRange(last.PhysicalOffset, activeCopy[lp:lp+int64(last.Size)]); !errors.Is(err, ErrNotRepairable) {
				t.Fatalf("repair in the active segment: %v, want ErrNotRepairable", err)
			}

			if err := s.RepairRange(v.PhysicalOffset, healthy); err != nil {
				t.Fatal(err)
			}
			if d := s.Damaged(); len(d) != 0 {
				t.Fatalf("Damaged after the repair = %+v", d)
			}
			check := func(s *Store, where string) {
				g, err := getAll(t, s, victim)
				if err != nil || len(g.Records) == 0 || g.QueueOffsets[0] != victim {
					t.Fatalf("%s: pull at the repaired record: %v, %d records", where, err, len(g.Records))
				}
				if string(g.Records[0]) != string(healthy) {
					t.Fatalf("%s: the repaired record differs from the healthy copy", where)
				}
			}
			check(s, "after the repair")
			if m := s.Metrics(); m.RepairedBytes != int64(len(healthy)) || m.Quarantined != 0 {
				t.Fatalf("metrics: repaired %d bytes, %d quarantined", m.RepairedBytes, m.Quarantined)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, opts)
			defer s.Close()
			check(s, "after a restart")
		})
	}
}

func TestMergeRanges(t *testing.T) {
	got := fmt.Sprint(mergeRanges([]DamagedRange{{From: 10, To: 20}, {From: 0, To: 5}, {From: 15, To: 30}, {From: 30, To: 31}}))
	if want := "[{0 5 } {10 31 }]"; got != want {
		t.Fatalf("mergeRanges = %s, want %s", got, want)
	}
}
