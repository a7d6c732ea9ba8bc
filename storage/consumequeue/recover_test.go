package consumequeue

import (
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// writeRaw writes b into a queue file at off (test tampering).
func writeRaw(t *testing.T, fs vfs.FS, path string, b []byte, off int64) {
	t.Helper()
	f, err := fs.Open(path, vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func createRaw(t *testing.T, fs vfs.FS, path string, b []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
}

func encoded(entries ...Entry) []byte {
	b := make([]byte, len(entries)*EntrySize)
	for i, e := range entries {
		putEntry(b[i*EntrySize:], e)
	}
	return b
}

// setupQueue writes n entries to T/0 with files of 10 and closes the table.
func setupQueue(t *testing.T, n int64) (vfs.FS, string, string) {
	t.Helper()
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 10)
	appendN(t, tb.Queue("T", 0), 0, n)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	return fs, dir, filepath.Join(dir, "T", "0")
}

func reopenCheck(t *testing.T, fs vfs.FS, dir string, wantMax int64) *Table {
	t.Helper()
	tb := openTable(t, fs, dir, 10)
	q := tb.Queue("T", 0)
	if q.MaxOffset() != wantMax {
		t.Fatalf("max %d, want %d", q.MaxOffset(), wantMax)
	}
	checkRange(t, q, q.MinOffset(), wantMax)
	// Appending past the cut and reopening must not bring back old bytes.
	appendN(t, q, wantMax, wantMax+3)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb = openTable(t, fs, dir, 10)
	if got := tb.Queue("T", 0).MaxOffset(); got != wantMax+3 {
		t.Fatalf("after re-append and reopen: max %d, want %d", got, wantMax+3)
	}
	checkRange(t, tb.Queue("T", 0), 0, wantMax+3)
	return tb
}

func TestRecoverZeroEntry(t *testing.T) {
	fs, dir, qdir := setupQueue(t, 37)
	writeRaw(t, fs, filepath.Join(qdir, fileName(30)), make([]byte, EntrySize), 4*EntrySize) // offset 34
	reopenCheck(t, fs, dir, 34).Close()
}

func TestRecoverTornEntry(t *testing.T) {
	fs, dir, qdir := setupQueue(t, 37)
	writeRaw(t, fs, filepath.Join(qdir, fileName(30)), encoded(entryFor(37))[:7], 7*EntrySize)
	reopenCheck(t, fs, dir, 37).Close()
}

func TestRecoverOutOfOrder(t *testing.T) {
	fs, dir, qdir := setupQueue(t, 37)
	// Offset 35 points before the end of 34's record: stale bytes.
	bad := entryFor(34)
	bad.PhysOffset += 10
	writeRaw(t, fs, filepath.Join(qdir, fileName(30)), encoded(bad), 5*EntrySize)
	reopenCheck(t, fs, dir, 35).Close()
}

func TestRecoverShortMiddleFile(t *testing.T) {
	// A file that is not whole ends the queue: later files go.
	fs, dir, qdir := setupQueue(t, 37)
	f, err := fs.Open(filepath.Join(qdir, fileName(10)), vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(6 * EntrySize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tb := reopenCheck(t, fs, dir, 16)
	tb.Close()
	files, _ := fs.List(qdir)
	if len(files) != 2 {
		t.Fatalf("files %v", files)
	}
}

func TestRecoverZeroInSealedFile(t *testing.T) {
	// A whole middle file whose last entry is zero is scanned.
	fs, dir, qdir := setupQueue(t, 37)
	writeRaw(t, fs, filepath.Join(qdir, fileName(10)), make([]byte, 3*EntrySize), 7*EntrySize)
	reopenCheck(t, fs, dir, 17).Close()
}

func TestRecoverEmptyLastFile(t *testing.T) {
	fs, dir, qdir := setupQueue(t, 30)
	createRaw(t, fs, filepath.Join(qdir, fileName(30)), nil)
	reopenCheck(t, fs, dir, 30).Close()
}

func TestRecoverOversizedLastFile(t *testing.T) {
	fs, dir, qdir := setupQueue(t, 30)
	writeRaw(t, fs, filepath.Join(qdir, fileName(20)), encoded(entryFor(30), entryFor(31)), 10*EntrySize)
	reopenCheck(t, fs, dir, 30).Close()
}

func TestRecoverMissingMiddleFile(t *testing.T) {
	fs, dir, qdir := setupQueue(t, 37)
	if err := fs.Remove(filepath.Join(qdir, fileName(10))); err != nil {
		t.Fatal(err)
	}
	_, err := OpenTable(Options{FS: fs, Dir: dir, EntriesPerFile: 10, Logger: testLogger(t)})
	wantErr(t, err, ErrCorrupt)
	// So does a change of EntriesPerFile that the names contradict.
	fs, dir, _ = setupQueue(t, 37)
	_, err = OpenTable(Options{FS: fs, Dir: dir, EntriesPerFile: 20, Logger: testLogger(t)})
	wantErr(t, err, ErrCorrupt)
}

func TestRecoverAfterRetention(t *testing.T) {
	fs, dir, qdir := setupQueue(t, 37)
	for _, s := range []int64{0, 10} {
		if err := fs.Remove(filepath.Join(qdir, fileName(s))); err != nil {
			t.Fatal(err)
		}
	}
	tb := openTable(t, fs, dir, 10)
	defer tb.Close()
	q := tb.Queue("T", 0)
	if q.MinOffset() != 20 || q.MaxOffset() != 37 {
		t.Fatalf("min %d max %d", q.MinOffset(), q.MaxOffset())
	}
	checkRange(t, q, 20, 37)
}

func TestRecoverSkipsStrangers(t *testing.T) {
	fs, dir, qdir := setupQueue(t, 12)
	createRaw(t, fs, filepath.Join(qdir, "00000000000000000200.tmp"), []byte("x"))
	createRaw(t, fs, filepath.Join(dir, "stray-file"), []byte("x"))
	for _, d := range []string{"T/notanumber", "T/007", "T/-1"} {
		if err := fs.MkdirAll(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.MkdirAll(filepath.Join(dir, "T", "5")); err != nil { // an empty queue dir
		t.Fatal(err)
	}
	tb := openTable(t, fs, dir, 10)
	defer tb.Close()
	var n int
	tb.Each(func(string, int32, *Queue) { n++ })
	if n != 2 {
		t.Fatalf("%d queues, want T/0 and T/5", n)
	}
	checkRange(t, tb.Queue("T", 0), 0, 12)
	q5 := tb.Queue("T", 5)
	if q5.MaxOffset() != 0 {
		t.Fatalf("T/5 max %d", q5.MaxOffset())
	}
	appendN(t, q5, 0, 11)
	checkRange(t, q5, 0, 11)
}

func TestRecoverTornTagsReplacedOnRedispatch(t *testing.T) {
	// A crash can zero the tail of the last entry (its tags code) without
	// any check noticing; the re-dispatch of that record replaces it.
	fs, dir, qdir := setupQueue(t, 37)
	torn := entryFor(36)
	torn.TagsCode &^= 0xffff
	writeRaw(t, fs, filepath.Join(qdir, fileName(30)), encoded(torn), 6*EntrySize)
	tb := openTable(t, fs, dir, 10)
	q := tb.Queue("T", 0)
	if e, _ := q.LastEntry(); e != torn || q.MaxOffset() != 37 {
		t.Fatalf("recovered last %v max %d", e, q.MaxOffset())
	}
	// Other recovered entries are not suspects.
	e35 := entryFor(35)
	wantErr(t, q.Append(35, e35.PhysOffset, e35.Size, e35.TagsCode+1), ErrConflict)
	for i := int64(30); i < 40; i++ { // the store re-dispatches from its checkpoint
		e := entryFor(i)
		if err := q.Append(i, e.PhysOffset, e.Size, e.TagsCode); err != nil {
			t.Fatalf("re-dispatch %d: %v", i, err)
		}
	}
	checkRange(t, q, 0, 40)
	// Once replaced or confirmed, a disagreement is a conflict.
	e36 := entryFor(36)
	wantErr(t, q.Append(36, e36.PhysOffset, e36.Size, 0), ErrConflict)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb = openTable(t, fs, dir, 10)
	defer tb.Close()
	checkRange(t, tb.Queue("T", 0), 0, 40)
}

func TestRecoverConfirmedLastIsNoLongerSuspect(t *testing.T) {
	fs, dir, _ := setupQueue(t, 37)
	tb := openTable(t, fs, dir, 10)
	defer tb.Close()
	q := tb.Queue("T", 0)
	e := entryFor(36)
	if err := q.Append(36, e.PhysOffset, e.Size, e.TagsCode); err != nil {
		t.Fatal(err)
	}
	wantErr(t, q.Append(36, e.PhysOffset, e.Size, e.TagsCode+1), ErrConflict)
	checkRange(t, q, 0, 37)
}
