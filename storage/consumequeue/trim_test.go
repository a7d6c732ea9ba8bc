package consumequeue

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestTruncateFromPhys(t *testing.T) {
	// Cut points: inside the buffer, in a file's middle, at a file boundary,
	// at the first entry, past the end, between two records.
	for _, c := range []struct {
		name    string
		n       int64
		flush   bool
		cut     int64 // phys
		wantMax int64
	}{
		{"buffered", 95, false, entryFor(90).PhysOffset, 90},
		{"flushed-middle", 95, true, entryFor(43).PhysOffset, 43},
		{"file-boundary", 95, true, entryFor(40).PhysOffset, 40},
		{"between-records", 95, true, entryFor(42).PhysOffset + 1, 43},
		{"all", 95, true, entryFor(0).PhysOffset, 0},
		{"below-all", 95, true, 0, 0},
		{"past-end", 95, true, entryFor(94).PhysOffset + 1, 95},
		{"spilled-buffer", 300, false, entryFor(100).PhysOffset, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, dir := osDir(t)
			tb := openTable(t, fs, dir, 10)
			q := tb.Queue("T", 0)
			appendN(t, q, 0, c.n)
			if c.flush {
				if err := q.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.TruncateFromPhys(c.cut); err != nil {
				t.Fatal(err)
			}
			check := func(q *Queue) {
				t.Helper()
				if q.MaxOffset() != c.wantMax || q.MinOffset() != 0 {
					t.Fatalf("min %d max %d, want 0 %d", q.MinOffset(), q.MaxOffset(), c.wantMax)
				}
				checkRange(t, q, 0, c.wantMax)
				e, ok := q.LastEntry()
				if ok != (c.wantMax > 0) || ok && e != entryFor(c.wantMax-1) {
					t.Fatalf("last %v %v", e, ok)
				}
				_, err := q.Entry(c.wantMax)
				wantErr(t, err, ErrOffsetOverflow)
			}
			check(q)
			appendN(t, q, c.wantMax, c.wantMax+15)
			checkRange(t, q, 0, c.wantMax+15)
			if err := q.TruncateFromPhys(entryFor(c.wantMax).PhysOffset); err != nil {
				t.Fatal(err)
			}
			check(q)
			// Durable without Flush or Close: files on disk end at wantMax
			// (except buffered-only cuts, which had nothing on disk).
			if c.flush {
				files, _ := fs.List(filepath.Join(dir, "T", "0"))
				wantFiles := max(1, (c.wantMax+9)/10)
				if int64(len(files)) != wantFiles {
					t.Fatalf("%d files after cut, want %d", len(files), wantFiles)
				}
			}
			if err := tb.Close(); err != nil {
				t.Fatal(err)
			}
			tb = openTable(t, fs, dir, 10)
			defer tb.Close()
			check(tb.Queue("T", 0))
		})
	}
}

func TestDeleteBelowPhys(t *testing.T) {
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 10)
	q := tb.Queue("T", 0)
	appendN(t, q, 0, 55) // files 0..50, last holds 5
	if err := q.DeleteBelowPhys(0); err != nil {
		t.Fatal(err)
	}
	if q.MinOffset() != 0 {
		t.Fatalf("min %d", q.MinOffset())
	}
	// 23 is in the third file: two files go, min moves to 23.
	if err := q.DeleteBelowPhys(entryFor(23).PhysOffset); err != nil {
		t.Fatal(err)
	}
	if q.MinOffset() != 23 || q.MaxOffset() != 55 {
		t.Fatalf("min %d max %d", q.MinOffset(), q.MaxOffset())
	}
	_, err := q.Entry(22)
	wantErr(t, err, ErrOffsetTooSmall)
	_, err = q.Entries(20, 5, nil)
	wantErr(t, err, ErrOffsetTooSmall)
	checkRange(t, q, 23, 55)
	files, _ := fs.List(filepath.Join(dir, "T", "0"))
	if len(files) != 4 || files[0] != fileName(20) {
		t.Fatalf("files %v", files)
	}
	// Between two records: min goes to the next.
	if err := q.DeleteBelowPhys(entryFor(24).PhysOffset + 1); err != nil {
		t.Fatal(err)
	}
	if q.MinOffset() != 25 {
		t.Fatalf("min %d", q.MinOffset())
	}
	// Everything below: the last file stays, min == max.
	if err := q.DeleteBelowPhys(1 << 40); err != nil {
		t.Fatal(err)
	}
	if q.MinOffset() != 55 || q.MaxOffset() != 55 {
		t.Fatalf("min %d max %d", q.MinOffset(), q.MaxOffset())
	}
	if _, ok := q.LastEntry(); ok {
		t.Fatal("LastEntry with min == max")
	}
	files, _ = fs.List(filepath.Join(dir, "T", "0"))
	if len(files) != 1 || files[0] != fileName(50) {
		t.Fatalf("files %v", files)
	}
	appendN(t, q, 55, 70)
	checkRange(t, q, 55, 70)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	// After a restart min is the first file's start.
	tb = openTable(t, fs, dir, 10)
	defer tb.Close()
	q = tb.Queue("T", 0)
	if q.MinOffset() != 50 || q.MaxOffset() != 70 {
		t.Fatalf("reopened: min %d max %d", q.MinOffset(), q.MaxOffset())
	}
	checkRange(t, q, 50, 70)
	if err := q.DeleteBelowPhys(entryFor(57).PhysOffset); err != nil {
		t.Fatal(err)
	}
	if q.MinOffset() != 57 {
		t.Fatalf("min %d", q.MinOffset())
	}
	// A crash trim below min brings min down with max.
	if err := q.TruncateFromPhys(entryFor(52).PhysOffset); err != nil {
		t.Fatal(err)
	}
	if q.MinOffset() != 52 || q.MaxOffset() != 52 {
		t.Fatalf("after trim: min %d max %d", q.MinOffset(), q.MaxOffset())
	}
}

func TestOffsetByTime(t *testing.T) {
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 4)
	defer tb.Close()
	q := tb.Queue("T", 0)
	// Store times with ties: offsets 0..19 at 100,100,100,110,110,... (three
	// per 10 ms, the first five at 100).
	times := map[int64]int64{}
	for i := range int64(20) {
		e := entryFor(i)
		ts := int64(100)
		if i >= 5 {
			ts = 100 + 10*((i-5)/3+1)
		}
		times[e.PhysOffset] = ts
	}
	storeTime := func(phys int64, size int32) (int64, error) {
		ts, ok := times[phys]
		if !ok {
			return 0, errors.New("no record")
		}
		return ts, nil
	}
	got, err := q.OffsetByTime(50, storeTime)
	if err != nil || got != 0 {
		t.Fatalf("empty queue: %d %v", got, err)
	}
	appendN(t, q, 0, 20)
	for _, c := range []struct{ ms, want int64 }{
		{0, 0}, {99, 0}, {100, 0}, {101, 5}, {110, 5}, {111, 8}, {120, 8}, {150, 17}, {151, 20}, {1 << 40, 20},
	} {
		got, err := q.OffsetByTime(c.ms, storeTime)
		if err != nil || got != c.want {
			t.Errorf("OffsetByTime(%d) = %d, %v; want %d", c.ms, got, err, c.want)
		}
	}
	// Clamped to min after retention.
	if err := q.DeleteBelowPhys(entryFor(9).PhysOffset); err != nil {
		t.Fatal(err)
	}
	if got, _ := q.OffsetByTime(0, storeTime); got != 9 {
		t.Fatalf("after retention: %d, want 9", got)
	}
	boom := errors.New("boom")
	if _, err := q.OffsetByTime(120, func(int64, int32) (int64, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
}
