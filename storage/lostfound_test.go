package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// readMemFile returns a file's bytes from a MemFS.
func readMemFile(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	b, err := readFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lostFoundDirs returns the lost+found directories of the store in opts.
func lostFoundDirs(t *testing.T, opts Options) []string {
	t.Helper()
	names, err := opts.FS.List(filepath.Join(opts.Dir, lostFoundDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		out = append(out, filepath.Join(opts.Dir, lostFoundDir, n))
	}
	return out
}

func readManifest(t *testing.T, fsys vfs.FS, dir string) LostFoundManifest {
	t.Helper()
	var m LostFoundManifest
	if err := json.Unmarshal(readMemFile(t, fsys, filepath.Join(dir, "manifest.json")), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// After a crash the active segment ends in reserved zeros (Preallocate
// reserves the whole segment): recovery ends the log there without a
// warning, and keeps nothing.
func TestZeroTailIsNotTorn(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	opts.SegmentSize = 64 << 10
	opts.Preallocate = true
	s := mustOpen(t, opts)
	var last AppendResult
	for i := 0; i < 10; i++ {
		r, err := s.Append(context.Background(), testMessage("T", 0, 100))
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	img := mem.CrashClone(nil)
	s.Close()
	opts.FS = img
	log, logs := newLogCapture()
	opts.Logger = log
	s = mustOpen(t, opts)
	defer s.Close()
	if end := last.PhysicalOffset + int64(last.Size); s.WrittenOffset() != end {
		t.Fatalf("log ends at %d, want %d", s.WrittenOffset(), end)
	}
	if w := logs.atLeast(slog.LevelWarn); len(w) > 0 {
		t.Fatalf("recovery of a log followed by zeros warned: %v", w)
	}
	if d := lostFoundDirs(t, opts); len(d) > 0 {
		t.Fatalf("lost+found made for zeros: %v", d)
	}
}

// A torn tail (non-zero bytes past the cut) is logged at Warn with the
// non-zero byte count, and its bytes are kept in lost+found.
func TestTornTailKeptInLostFound(t *testing.T) {
	mem, opts, res := corruptFixture(t, 21, 20, 64<<10)
	last := res[20]
	flipByte(t, mem, opts, last.PhysicalOffset+int64(last.Size)-5)
	want := readMemFile(t, mem, filepath.Join(opts.Dir, "commitlog", segmentName(0)))[last.PhysicalOffset : last.PhysicalOffset+int64(last.Size)]
	log, logs := newLogCapture()
	opts.Logger = log
	s := mustOpen(t, opts)
	defer s.Close()
	if s.WrittenOffset() != last.PhysicalOffset {
		t.Fatalf("log ends at %d, want %d", s.WrittenOffset(), last.PhysicalOffset)
	}
	w, ok := logs.find("torn tail")
	if !ok || w.level != slog.LevelWarn || w.attrs["nonZeroBytes"] == "" || w.attrs["nonZeroBytes"] == "0" || w.attrs["why"] == "" {
		t.Fatalf("no Warn with the non-zero byte count and reason: %v", logs.atLeast(slog.LevelDebug))
	}
	dirs := lostFoundDirs(t, opts)
	if len(dirs) != 1 {
		t.Fatalf("lost+found dirs %v, want one", dirs)
	}
	m := readManifest(t, mem, dirs[0])
	if m.Cut != last.PhysicalOffset || len(m.Files) != 1 || m.Valid.Records != 0 {
		t.Fatalf("manifest %+v", m)
	}
	got := readMemFile(t, mem, filepath.Join(dirs[0], m.Files[0].Name))
	if !bytes.Equal(got, want) {
		t.Fatalf("kept %d bytes, want the %d of the torn record", len(got), len(want))
	}
}

// The operator's case: a bad record cuts an older segment while later
// segments hold valid, acknowledged records. Recovery must not delete
// them: they go to lost+found, whole, with a manifest and a Warn naming
// their topics, queues and offsets; the log stays a prefix.
func TestCutKeepsLaterSegments(t *testing.T) {
	mem, opts, res := corruptFixture(t, 40, 2, 4<<10)
	victim := res[5]
	if res[39].PhysicalOffset/opts.SegmentSize < 2 {
		t.Fatal("fixture: want at least three segments")
	}
	flipByte(t, mem, opts, victim.PhysicalOffset+20)
	clDir := filepath.Join(opts.Dir, "commitlog")
	names, _ := mem.List(clDir)
	orig := map[string][]byte{}
	for _, n := range names[1:] {
		orig[n] = readMemFile(t, mem, filepath.Join(clDir, n))
	}

	log, logs := newLogCapture()
	opts.Logger = log
	s := mustOpen(t, opts)
	if s.WrittenOffset() != victim.PhysicalOffset {
		t.Fatalf("log ends at %d, want the cut at %d", s.WrittenOffset(), victim.PhysicalOffset)
	}
	if n, _ := mem.List(clDir); len(n) != 1 {
		t.Fatalf("commitlog holds %v after the cut", n)
	}
	dirs := lostFoundDirs(t, opts)
	if len(dirs) != 1 {
		t.Fatalf("lost+found dirs %v", dirs)
	}
	m := readManifest(t, mem, dirs[0])
	if m.Valid.Records != 34 || m.Valid.FirstPhys != res[6].PhysicalOffset || m.Valid.EndPhys != res[39].PhysicalOffset+int64(res[39].Size) {
		t.Fatalf("manifest counts %+v, want records 6..39", m.Valid)
	}
	if len(m.Valid.Queues) != 2 {
		t.Fatalf("queues %+v", m.Valid.Queues)
	}
	for _, q := range m.Valid.Queues {
		// Record i went to T/(i%2) at queue offset i/2.
		first := 6 + int(q.QueueID)
		if q.Topic != "T" || q.Records != 17 || q.FirstQueueOffset != int64(first/2) || q.LastQueueOffset != int64((38+int(q.QueueID))/2) ||
			q.FirstPhys != res[first].PhysicalOffset {
			t.Fatalf("queue %+v", q)
		}
	}
	for n, b := range orig {
		if got := readMemFile(t, mem, filepath.Join(dirs[0], n)); !bytes.Equal(got, b) {
			t.Fatalf("segment %s not kept byte for byte", n)
		}
	}
	w, ok := logs.find("lost+found")
	if !ok || w.level != slog.LevelWarn || !strings.Contains(w.attrs["valid"], "34 valid records") || !strings.Contains(w.attrs["valid"], "T/1: 17") {
		t.Fatalf("no Warn saying what was kept: %v", logs.atLeast(slog.LevelWarn))
	}

	// The log is a prefix: queues end at the cut, appends continue there,
	// and a reopen cuts nothing more.
	if got := s.MaxQueueOffset("T", 1); got != 2 {
		t.Fatalf("T/1 max offset %d, want 2", got)
	}
	r, err := s.Append(context.Background(), testMessage("T", 1, 10))
	if err != nil || r.PhysicalOffset != victim.PhysicalOffset || r.QueueOffset != 2 {
		t.Fatalf("append after the cut: %+v %v", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, opts)
	defer s.Close()
	if d := lostFoundDirs(t, opts); len(d) != 1 {
		t.Fatalf("a clean reopen made lost+found %v", d)
	}
}

// Open's error for a truncated last segment after a clean stop says what
// is missing and what to run.
func TestTruncatedAfterCleanStopNamesRepair(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	s := mustOpen(t, opts)
	var last AppendResult
	for i := 0; i < 5; i++ {
		last, _ = s.Append(context.Background(), testMessage("T", 0, 100))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	patch(t, mem, opts, last.PhysicalOffset, func(f vfs.File, off int64) { f.Truncate(off + 30) })
	_, err := Open(opts)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Missing != int64(last.Size)-30 {
		t.Fatalf("Open: %v, want a CorruptError with %d bytes missing", err, last.Size-30)
	}
	for _, want := range []string{"missing", "samsa store repair /store", "lost+found"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("message %q lacks %q", err, want)
		}
	}
}

// readTail counts non-zero bytes across its block and chunk boundaries.
func TestReadTail(t *testing.T) {
	mem := vfs.NewMem()
	mem.MkdirAll("/d")
	f, _ := mem.Create("/d/f", vfs.OpenOptions{})
	b := make([]byte, scanChunk+200<<10)
	for _, i := range []int{5, 70000, 131071, scanChunk, scanChunk + 1} {
		b[i] = 1
	}
	f.WriteAt(b, 0)
	f.Close()
	r, err := openSegReader(mem, "/d/f")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tc := range []struct {
		from, nonZero, end int64
	}{{0, 5, scanChunk + 2}, {6, 4, scanChunk + 2}, {scanChunk + 2, 0, scanChunk + 2}, {int64(len(b)), 0, int64(len(b))}} {
		got, err := readTail(r, tc.from)
		if err != nil || got.nonZero != tc.nonZero || got.end != tc.end {
			t.Fatalf("readTail from %d: %+v %v, want %d non-zero ending at %d", tc.from, got, err, tc.nonZero, tc.end)
		}
	}
}
