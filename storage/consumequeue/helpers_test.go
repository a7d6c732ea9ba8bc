package consumequeue

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// testLogger discards recovery notes unless -v.
func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func openTable(t testing.TB, fs vfs.FS, dir string, perFile int) *Table {
	t.Helper()
	tb, err := OpenTable(Options{FS: fs, Dir: dir, EntriesPerFile: perFile, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("OpenTable: %v", err)
	}
	return tb
}

func osDir(t testing.TB) (vfs.FS, string) {
	return vfs.Default, filepath.Join(t.TempDir(), "consumequeue")
}

// entryFor is the deterministic i-th entry of test queues: growing,
// non-overlapping records with varied sizes and tags.
func entryFor(i int64) Entry {
	return Entry{PhysOffset: 1000 + i*100, Size: int32(40 + i%50), TagsCode: i*7 - 3}
}

func appendN(t testing.TB, q *Queue, from, to int64) {
	t.Helper()
	for i := from; i < to; i++ {
		e := entryFor(i)
		if err := q.Append(i, e.PhysOffset, e.Size, e.TagsCode); err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
	}
}

// checkRange reads [from, to) one by one and in batches of several sizes.
func checkRange(t testing.TB, q *Queue, from, to int64) {
	t.Helper()
	if err := verifyRange(q, from, to); err != nil {
		t.Fatal(err)
	}
}

func verifyRange(q *Queue, from, to int64) error {
	for i := from; i < to; i++ {
		e, err := q.Entry(i)
		if err != nil {
			return fmt.Errorf("Entry(%d): %w", i, err)
		}
		if e != entryFor(i) {
			return fmt.Errorf("Entry(%d) = %v, want %v", i, e, entryFor(i))
		}
	}
	var dst []Entry
	for _, batch := range []int{1, 3, 7, 64, 10_000} {
		for off := from; off < to; off += int64(batch) {
			var err error
			n := int(min(int64(batch), to-off))
			dst, err = q.Entries(off, n, dst)
			if err != nil {
				return fmt.Errorf("Entries(%d, %d): %w", off, batch, err)
			}
			if want := min(int64(n), q.MaxOffset()-off); int64(len(dst)) != want {
				return fmt.Errorf("Entries(%d, %d): %d entries, want %d", off, batch, len(dst), want)
			}
			for j, e := range dst {
				if e != entryFor(off+int64(j)) {
					return fmt.Errorf("Entries(%d, %d)[%d] = %v, want %v", off, batch, j, e, entryFor(off+int64(j)))
				}
			}
		}
	}
	return nil
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}
