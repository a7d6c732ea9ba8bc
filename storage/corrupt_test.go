package storage

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// corruptFixture writes n records with FlushSync, checkpoints after the
// first ck of them, and returns the power-loss image (only what was synced
// survives: everything) with the results.
func corruptFixture(t *testing.T, n, ck int, segSize int64) (*vfs.MemFS, Options, []AppendResult) {
	t.Helper()
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	opts.SegmentSize = segSize
	s := mustOpen(t, opts)
	var res []AppendResult
	for i := 0; i < n; i++ {
		if i == ck {
			if err := s.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
		r, err := s.Append(context.Background(), testMessage("T", int32(i%2), 150+i))
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if ck >= n {
		if err := s.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	img := mem.CrashClone(nil) // the abort marker is there: Open scans
	s.Close()
	opts.FS = img
	return img, opts, res
}

// patch rewrites bytes of the segment holding phys in the image, durably.
func patch(t *testing.T, mem *vfs.MemFS, opts Options, phys int64, fn func(f vfs.File, off int64)) {
	t.Helper()
	base := phys / opts.SegmentSize * opts.SegmentSize
	f, err := mem.Open(filepath.Join(opts.Dir, "commitlog", segmentName(base)), vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fn(f, phys-base)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func flipByte(t *testing.T, mem *vfs.MemFS, opts Options, at int64) {
	patch(t, mem, opts, at, func(f vfs.File, off int64) {
		b := make([]byte, 1)
		f.ReadAt(b, off)
		b[0] ^= 0x40
		f.WriteAt(b, off)
	})
}

func TestMidLogCorruptionFailsOpen(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segSize int64
		victim  int // record to damage
		ck      int // checkpoint after this many records
		inBody  bool
	}{
		{"body", 64 << 10, 10, 20, true},
		{"header", 64 << 10, 10, 20, false},
		{"first record", 64 << 10, 0, 20, false},
		// Several segments, the checkpoint in the first: the damage is in a
		// sealed segment the scan covers (recovery scans from the
		// checkpoint's segment on; older ones are not read).
		{"sealed segment", 4 << 10, 3, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, opts, res := corruptFixture(t, 20, tc.ck, tc.segSize)
			if tc.segSize < 8<<10 && res[tc.victim].PhysicalOffset/tc.segSize == res[19].PhysicalOffset/tc.segSize {
				t.Fatal("fixture: the victim is not in an earlier segment")
			}
			v := res[tc.victim]
			at := v.PhysicalOffset + 20 // QUEUEOFFSET
			if tc.inBody {
				at = v.PhysicalOffset + 90
			}
			flipByte(t, mem, opts, at)
			_, err := Open(opts)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open after damaging record %d: %v, want ErrCorrupt", tc.victim, err)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Offset != v.PhysicalOffset {
				t.Fatalf("error %v does not name offset %d", err, v.PhysicalOffset)
			}
			if next := res[tc.victim+1].PhysicalOffset; ce.Resume != next {
				t.Fatalf("resume %d, want %d (the next record)", ce.Resume, next)
			}
			if !strings.Contains(err.Error(), "offset") {
				t.Fatalf("message %q", err)
			}
			// Nothing was cut: it fails the same way again.
			if _, err2 := Open(opts); !errors.As(err2, &ce) || ce.Offset != v.PhysicalOffset {
				t.Fatalf("second Open: %v", err2)
			}
		})
	}
}

func TestTornTailIsCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(t *testing.T, mem *vfs.MemFS, opts Options, last AppendResult)
	}{
		{"short file", func(t *testing.T, mem *vfs.MemFS, opts Options, last AppendResult) {
			patch(t, mem, opts, last.PhysicalOffset, func(f vfs.File, off int64) { f.Truncate(off + int64(last.Size)/2) })
		}},
		{"zeroed tail", func(t *testing.T, mem *vfs.MemFS, opts Options, last AppendResult) {
			patch(t, mem, opts, last.PhysicalOffset, func(f vfs.File, off int64) {
				f.WriteAt(make([]byte, last.Size-40), off+40)
			})
		}},
		{"damaged last", func(t *testing.T, mem *vfs.MemFS, opts Options, last AppendResult) {
			flipByte(t, mem, opts, last.PhysicalOffset+int64(last.Size)-5)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The checkpoint covers 20 records; the 21st is past it.
			mem, opts, res := corruptFixture(t, 21, 20, 64<<10)
			last := res[20]
			tc.tear(t, mem, opts, last)
			s, err := Open(opts)
			if err != nil {
				t.Fatalf("Open after tearing the last record: %v", err)
			}
			defer s.Close()
			if s.WrittenOffset() != last.PhysicalOffset {
				t.Fatalf("log ends at %d, want the cut at %d", s.WrittenOffset(), last.PhysicalOffset)
			}
			for _, r := range res[:20] {
				if _, err := s.ReadAt(r.PhysicalOffset, r.Size); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.MaxQueueOffset("T", 0); got != 10 {
				t.Fatalf("queue T/0 max offset %d, want 10", got)
			}
			// The tail is gone for good: a shorter record takes its place and
			// nothing of the old one is read back.
			r, err := s.Append(context.Background(), testMessage("T", 0, 10))
			if err != nil || r.PhysicalOffset != last.PhysicalOffset || r.QueueOffset != 10 {
				t.Fatalf("append after the cut: %+v %v", r, err)
			}
			// The file may run past the new record (a reservation), but
			// only with zeros: the cut removed the torn bytes.
			end := r.PhysicalOffset + int64(r.Size)
			patch(t, mem, opts, 0, func(f vfs.File, _ int64) {
				size, err := f.Size()
				if err != nil || size < end {
					t.Fatalf("segment file has %d bytes (%v), want at least %d", size, err, end)
				}
				rest := make([]byte, size-end)
				if _, err := f.ReadAt(rest, end); err != nil && err != io.EOF {
					t.Fatal(err)
				}
				if i := slices.IndexFunc(rest, func(b byte) bool { return b != 0 }); i >= 0 {
					t.Fatalf("byte %d past the new record is %#x, want the cut's zeros", end+int64(i), rest[i])
				}
			})
		})
	}
}

// A damaged last record below the checkpoint's durable offset was
// acknowledged: it is corruption, not a torn tail.
func TestDamageBelowCheckpointIsCorruption(t *testing.T) {
	mem, opts, res := corruptFixture(t, 21, 21, 64<<10)
	last := res[20]
	patch(t, mem, opts, last.PhysicalOffset, func(f vfs.File, off int64) { f.Truncate(off + 30) })
	_, err := Open(opts)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != last.PhysicalOffset || ce.Resume != -1 {
		t.Fatalf("Open: %v, want a CorruptError at %d with nothing after", err, last.PhysicalOffset)
	}
}

func TestSegmentSizeIsFixed(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	s := mustOpen(t, opts)
	s.Append(context.Background(), testMessage("T", 0, 10))
	s.Close()
	opts.SegmentSize *= 2
	if _, err := Open(opts); err == nil || !strings.Contains(err.Error(), "SegmentSize") {
		t.Fatalf("Open with another SegmentSize: %v", err)
	}
}
