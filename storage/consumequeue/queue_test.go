package consumequeue

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestAppendReadAcrossFiles(t *testing.T) {
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 7)
	defer tb.Close()
	q := tb.Queue("TopicA", 3)
	if q.MinOffset() != 0 || q.MaxOffset() != 0 {
		t.Fatalf("new queue: min %d max %d", q.MinOffset(), q.MaxOffset())
	}
	if _, ok := q.LastEntry(); ok {
		t.Fatal("LastEntry on an empty queue")
	}
	// 600 entries: buffer spills (256) and 86 files of 7.
	appendN(t, q, 0, 600)
	checkRange(t, q, 0, 600)
	if got, ok := q.LastEntry(); !ok || got != entryFor(599) {
		t.Fatalf("LastEntry = %v %v", got, ok)
	}
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	checkRange(t, q, 0, 600)
	names, err := fs.List(filepath.Join(dir, "TopicA", "3"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 86 || names[0] != "00000000000000000000" || names[1] != "00000000000000000140" {
		t.Fatalf("files: %d, %v", len(names), names[:min(3, len(names))])
	}
	if size, _ := fs.Stat(filepath.Join(dir, "TopicA", "3", names[85])); size != (600-85*7)*EntrySize {
		t.Fatalf("last file size %d", size)
	}
}

func TestAppendRejects(t *testing.T) {
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 10)
	defer tb.Close()
	q := tb.Queue("T", 0)
	wantErr(t, q.Append(1, 0, 10, 0), ErrGap)
	wantErr(t, q.Append(0, 0, 0, 0), ErrInvalidEntry)
	wantErr(t, q.Append(0, -1, 10, 0), ErrInvalidEntry)
	if err := q.Append(0, 100, 10, 1); err != nil {
		t.Fatal(err)
	}
	wantErr(t, q.Append(1, 105, 10, 1), ErrInvalidEntry) // overlaps [100, 110)
	wantErr(t, q.Append(2, 200, 10, 1), ErrGap)
	if err := q.Append(1, 110, 10, 1); err != nil {
		t.Fatal(err)
	}
	wantErr(t, tb.Queue("", 0).Append(0, 0, 1, 0), ErrInvalidName)
	wantErr(t, tb.Queue("a/b", 0).Append(0, 0, 1, 0), ErrInvalidName)
	wantErr(t, tb.Queue("..", 0).Append(0, 0, 1, 0), ErrInvalidName)
	wantErr(t, tb.Queue("T", -1).Append(0, 0, 1, 0), ErrInvalidName)
}

func TestReappendIdempotent(t *testing.T) {
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 10)
	defer tb.Close()
	q := tb.Queue("T", 1)
	appendN(t, q, 0, 300) // some in files, some buffered
	for _, i := range []int64{0, 9, 10, 255, 256, 299} {
		e := entryFor(i)
		if err := q.Append(i, e.PhysOffset, e.Size, e.TagsCode); err != nil {
			t.Fatalf("re-append %d: %v", i, err)
		}
		wantErr(t, q.Append(i, e.PhysOffset, e.Size, e.TagsCode+1), ErrConflict)
	}
	if q.MaxOffset() != 300 {
		t.Fatalf("max %d", q.MaxOffset())
	}
	checkRange(t, q, 0, 300)
}

func TestEntriesBounds(t *testing.T) {
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 10)
	defer tb.Close()
	q := tb.Queue("T", 0)
	dst, err := q.Entries(0, 10, nil)
	if err != nil || len(dst) != 0 {
		t.Fatalf("empty queue: %v %v", dst, err)
	}
	appendN(t, q, 0, 25)
	_, err = q.Entry(25)
	wantErr(t, err, ErrOffsetOverflow)
	_, err = q.Entry(-1)
	wantErr(t, err, ErrOffsetTooSmall)
	_, err = q.Entries(26, 1, nil)
	wantErr(t, err, ErrOffsetOverflow)
	_, err = q.Entries(-1, 1, nil)
	wantErr(t, err, ErrOffsetTooSmall)
	if dst, err = q.Entries(25, 5, dst); err != nil || len(dst) != 0 {
		t.Fatalf("at max: %v %v", dst, err)
	}
	if dst, err = q.Entries(20, 0, dst); err != nil || len(dst) != 0 {
		t.Fatalf("max 0: %v %v", dst, err)
	}
	big := make([]Entry, 3, 100)
	got, err := q.Entries(5, 100, big)
	if err != nil || len(got) != 20 || &got[0] != &big[:1][0] {
		t.Fatalf("reuse: len %d err %v", len(got), err)
	}
	if !slices.Equal(got[:2], []Entry{entryFor(5), entryFor(6)}) {
		t.Fatalf("got %v", got[:2])
	}
}

func TestReopen(t *testing.T) {
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 10)
	appendN(t, tb.Queue("T", 0), 0, 95)
	appendN(t, tb.Queue("T", 1), 0, 30) // exactly three full files
	appendN(t, tb.Queue("U", 0), 0, 1)
	tb.Queue("empty", 0) // never appended: no directory
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, tb.Queue("T", 0).Append(95, 1e9, 1, 0), ErrClosed)

	tb = openTable(t, fs, dir, 10)
	defer tb.Close()
	var seen []string
	tb.Each(func(topic string, qid int32, q *Queue) {
		seen = append(seen, q.String())
	})
	if !slices.Equal(seen, []string{"T/0", "T/1", "U/0"}) {
		t.Fatalf("queues %v", seen)
	}
	for _, c := range []struct {
		q   *Queue
		max int64
	}{{tb.Queue("T", 0), 95}, {tb.Queue("T", 1), 30}, {tb.Queue("U", 0), 1}} {
		if c.q.MinOffset() != 0 || c.q.MaxOffset() != c.max {
			t.Fatalf("%s: min %d max %d, want 0 %d", c.q, c.q.MinOffset(), c.q.MaxOffset(), c.max)
		}
		checkRange(t, c.q, 0, c.max)
		if e, ok := c.q.LastEntry(); !ok || e != entryFor(c.max-1) {
			t.Fatalf("%s: last %v %v", c.q, e, ok)
		}
		appendN(t, c.q, c.max, c.max+21)
		checkRange(t, c.q, 0, c.max+21)
	}
}
