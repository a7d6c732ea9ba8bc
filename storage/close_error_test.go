package storage

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// A failed Close of a file the store wrote and keeps is an error, not a
// silent success: the lost+found copy (copyRange) and a cut segment file
// (truncateSegment) report it.
func TestWrittenFileCloseErrors(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem)
	if err := writeSynced(efs, "/src", make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpClose, Path: "dst"})
	if err := copyRange(efs, "/src", 0, 4096, "/dst"); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("copyRange with a failing close of the copy: %v", err)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpClose, Path: "src"})
	if err := truncateSegment(efs, "/src", 1024, 0); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("truncateSegment with a failing close: %v", err)
	}
	efs.ClearRules()
	if err := copyRange(efs, "/src", 0, 1024, "/dst2"); err != nil {
		t.Fatal(err)
	}
	if err := truncateSegment(efs, "/src", 512, 0); err != nil {
		t.Fatal(err)
	}
}

// TestTruncateToCloseError: the segment TruncateTo keeps fails to close.
// The cut fails and breaks the store (as any failure once the files are
// changed does); the next Open recovers a log that ends at or before the
// old end, and the cut then succeeds.
func TestTruncateToCloseError(t *testing.T) {
	for _, be := range memBackends(t) {
		t.Run("backend="+be, func(t *testing.T) {
			mem := vfs.NewMem()
			efs := errorfs.Wrap(mem)
			opts := testOptions(efs, be, FlushSync)
			s := mustOpen(t, opts)
			var last AppendResult
			for i := 0; s.WrittenOffset() < 3*s.segSize && i < 1000; i++ {
				r, err := s.Append(context.Background(), testMessage("T", int32(i%2), 300))
				if err != nil {
					t.Fatal(err)
				}
				last = r
			}
			w := s.WrittenOffset()
			if w < 3*s.segSize {
				t.Fatalf("%d bytes: fewer than 3 segments", w)
			}
			off := last.PhysicalOffset
			name := filepath.Base(s.segmentPath(off / s.segSize * s.segSize))
			efs.AddRule(errorfs.Rule{Op: errorfs.OpClose, Path: filepath.Join(filepath.Base(s.clDir), name)}) // not its copy in lost+found
			err := s.TruncateTo(off)
			if !errors.Is(err, ErrBroken) || !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("TruncateTo with a failing close of %s: %v, want ErrBroken wrapping the close error", name, err)
			}
			efs.ClearRules()
			_ = s.Close() // broken: its error is the break
			s = mustOpen(t, opts)
			defer s.Close()
			if got := s.WrittenOffset(); got < off || got > w {
				t.Fatalf("reopened at %d, want within [%d, %d]", got, off, w)
			}
			if err := s.TruncateTo(off); err != nil {
				t.Fatal(err)
			}
			checkCut(t, s, off, "after the retried cut")
		})
	}
}
