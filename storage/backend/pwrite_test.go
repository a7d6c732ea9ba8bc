package backend

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

func TestPwriteBasics(t *testing.T) {
	b, err := Get("pwrite")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg"), Capacity: 10000, Preallocate: true}
	s, err := b.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 700)
	if err := s.Append(data[:3001]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(data[3001:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(make([]byte, 3001)); !errors.Is(err, ErrSegmentFull) {
		t.Fatalf("append past capacity: %v", err)
	}
	if d, err := s.Flush(); err != nil || d != 7000 {
		t.Fatalf("flush %d %v", d, err)
	}
	got := make([]byte, 100)
	if n, err := s.ReadAt(got, 6950); err != io.EOF || n != 50 {
		t.Fatalf("read across the tail: %d %v", n, err)
	}
	// The first append finds the segment durable and is written through;
	// the second waits in the buffer for the Flush.
	if st := s.Stats(); st.WriteCalls != 2 || st.BytesWritten != 7000 || st.Fsyncs != 1 || st.FlushBatches != 1 {
		t.Fatalf("stats %+v", st)
	}
	s.Close()
	cfg.Written = 7000
	s, err = b.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	got = make([]byte, 7004)
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, append(data, "tail"...)) {
		t.Fatalf("read back after reopen: %v", err)
	}
}

func TestPwriteOptions(t *testing.T) {
	var o PwriteOptions
	o.EnsureDefaults()
	if o.BufferSize != defaultPwriteBufferSize || o.Validate() != nil {
		t.Fatalf("defaults %v: %v", o, o.Validate())
	}
	if got := o.String(); got != "buffer=262144" {
		t.Fatalf("String %q", got)
	}
	for _, n := range []int{-1, 100, 4095, 2 << 30} {
		if _, err := NewPwrite(PwriteOptions{BufferSize: n}); err == nil || !strings.Contains(err.Error(), "BufferSize") {
			t.Errorf("BufferSize %d: %v", n, err)
		}
	}
}

// pwriteSeg makes a buffered pwrite segment (4 KiB buffer unless bufSize)
// on fsys at /seg.
func pwriteSeg(t *testing.T, fsys vfs.FS, capacity int64, bufSize int, prealloc bool) *pwriteSegment {
	t.Helper()
	if bufSize == 0 {
		bufSize = 4096
	}
	b, err := NewPwrite(PwriteOptions{BufferSize: bufSize})
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Create(Config{FS: fsys, Path: "/seg", Capacity: capacity, Preallocate: prealloc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := fsys.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	return s.(*pwriteSegment)
}

func fileBytes(t *testing.T, fsys vfs.FS, n int) []byte {
	t.Helper()
	f, err := fsys.Open("/seg", vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, n)
	k, _ := f.ReadAt(p, 0)
	return p[:k]
}

// TestPwriteCoalesces: appends between flushes cost one write per buffer,
// are readable at once from the buffer, and reach the file by the Flush.
func TestPwriteCoalesces(t *testing.T) {
	mem := vfs.NewMem()
	s := pwriteSeg(t, mem, 1<<20, 4096, true)
	if _, err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	rec := bytes.Repeat([]byte("r"), 100)
	var want []byte
	for i := 0; i < 100; i++ { // 10,000 bytes: 2 full buffers, then a partial one
		rec[0] = byte(i)
		if err := s.Append(rec); err != nil {
			t.Fatal(err)
		}
		want = append(want, rec...)
		got := make([]byte, 100)
		if _, err := s.ReadAt(got, int64(i*100)); err != nil || !bytes.Equal(got, rec) {
			t.Fatalf("read back record %d at once: %v", i, err)
		}
	}
	// The first append is written through (the segment was durable); the
	// others fill 4 KiB buffers: restarting at 4096 and 8192 writes what
	// the previous one held.
	if st := s.Stats(); st.WriteCalls != 3 {
		t.Fatalf("%d write calls for 100 appends with a 4 KiB buffer: %+v", st.WriteCalls, st)
	}
	if got := fileBytes(t, mem, 10000); bytes.Equal(got, want) {
		t.Fatal("the file holds the buffered tail before any Flush")
	}
	got := make([]byte, len(want))
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read across file and buffer: %v", err)
	}
	if d, err := s.Flush(); err != nil || d != 10000 {
		t.Fatalf("flush: %d %v", d, err)
	}
	if st := s.Stats(); st.WriteCalls != 4 || st.BytesWritten != 10000 {
		t.Fatalf("after flush %+v", st)
	}
	if got := fileBytes(t, mem.CrashClone(nil), 10000); !bytes.Equal(got, want) {
		t.Fatal("flushed bytes lost in a crash")
	}
}

// TestPwriteLargeAppend: an append larger than the buffer goes straight
// to the file after what the buffer held.
func TestPwriteLargeAppend(t *testing.T) {
	mem := vfs.NewMem()
	s := pwriteSeg(t, mem, 1<<20, 4096, false)
	s.Flush()
	small := bytes.Repeat([]byte("s"), 1000)
	big := bytes.Repeat([]byte("B"), 10000)
	for _, p := range [][]byte{small, small, big, small} {
		if err := s.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	want := bytes.Join([][]byte{small, small, big, small}, nil)
	if got := fileBytes(t, mem, 12000); !bytes.Equal(got, want[:12000]) {
		t.Fatal("file does not hold the bytes up to the large append's end")
	}
	got := make([]byte, len(want))
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read: %v", err)
	}
}

// TestPwriteWriteThroughError: with nothing waiting for a flush, an append
// is written at once, so a failing write refuses it, as without a buffer.
func TestPwriteWriteThroughError(t *testing.T) {
	for _, rule := range []errorfs.Rule{
		{Op: errorfs.OpWrite, Err: syscall.ENOSPC},
		{Op: errorfs.OpWrite},
		{Op: errorfs.OpWrite, Tear: true, TearAt: 10},
	} {
		t.Run(rule.String(), func(t *testing.T) {
			efs := errorfs.Wrap(vfs.NewMem())
			s := pwriteSeg(t, efs, 64<<10, 4096, false)
			if err := s.Append([]byte("first")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			efs.AddRule(rule)
			err := s.Append(bytes.Repeat([]byte("x"), 100))
			if want := rule.Err; (want == 0 && !errors.Is(err, syscall.EIO)) || (want != 0 && !errors.Is(err, want)) {
				t.Fatalf("append with a failing write: %v", err)
			}
			if s.Written() != 5 {
				t.Fatalf("refused append moved Written to %d", s.Written())
			}
			// The segment carries on: the next append overwrites the garbage.
			if err := s.Append([]byte("second")); err != nil {
				t.Fatal(err)
			}
			if d, err := s.Flush(); err != nil || d != 11 {
				t.Fatalf("flush %d %v", d, err)
			}
			got := make([]byte, 11)
			if _, err := s.ReadAt(got, 0); err != nil || string(got) != "firstsecond" {
				t.Fatalf("read %q %v", got, err)
			}
		})
	}
}

// TestPwriteSpillError: a failed write of a full buffer refuses the
// append that needed the room and loses none of the buffered bytes.
func TestPwriteSpillError(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem)
	s := pwriteSeg(t, efs, 64<<10, 4096, true)
	s.Flush()
	rec := bytes.Repeat([]byte("a"), 1000)
	for i := 0; i < 4; i++ { // the first written through, 3 buffered
		if err := s.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Tear: true, TearAt: 500})
	if err := s.Append(rec); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append needing a spill over a failing write: %v", err)
	}
	if s.Written() != 4000 {
		t.Fatalf("Written %d", s.Written())
	}
	got := make([]byte, 4000)
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, bytes.Repeat(rec, 4)) {
		t.Fatalf("read after the failed spill: %v", err)
	}
	if d, err := s.Flush(); err != nil || d != 4000 {
		t.Fatalf("flush after the failed spill: %d %v", d, err)
	}
	if got := fileBytes(t, mem.CrashClone(nil), 4000); !bytes.Equal(got, bytes.Repeat(rec, 4)) {
		t.Fatal("buffered bytes lost")
	}
}

// TestPwriteFlushWriteErrorSticky: a Flush whose write-out fails fails
// for good, and Close leaves the file alone.
func TestPwriteFlushWriteErrorSticky(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	s := pwriteSeg(t, efs, 64<<10, 4096, true)
	s.Flush()
	s.Append([]byte("through"))
	s.Append([]byte("buffered"))
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite})
	if d, err := s.Flush(); !errors.Is(err, syscall.EIO) || d != 0 {
		t.Fatalf("flush over a failing write: %d %v", d, err)
	}
	efs.ClearRules()
	if _, err := s.Flush(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("second flush: %v", err)
	}
	writes := efs.Count(errorfs.OpWrite)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if efs.Count(errorfs.OpWrite) != writes {
		t.Fatal("Close wrote after a failed Flush")
	}
}

// TestPwriteReserves: appended bytes have their file range reserved, so a
// full disk refuses the append (ENOSPC), not the later Flush, and a
// write-through does not extend the file; a reservation settles for the
// append's own bytes when a step does not fit.
func TestPwriteReserves(t *testing.T) {
	mem := vfs.NewMem()
	s := pwriteSeg(t, mem, 1<<20, 64<<10, false)
	s.Append(make([]byte, 100)) // written through, into a reservation to 100 + 64 KiB
	if sz, _ := mem.Stat("/seg"); sz != 100+64<<10 {
		t.Fatalf("file is %d bytes after a write-through", sz)
	}
	s.Append(make([]byte, 100)) // buffered, within the reservation
	if sz, _ := mem.Stat("/seg"); sz != 100+64<<10 {
		t.Fatalf("file is %d bytes after a buffered append", sz)
	}
	mem.SetCapacity(mem.Used() + 1000)
	// Within the reservation: no more space needed.
	if err := s.Append(make([]byte, 2000)); err != nil {
		t.Fatalf("append within the reservation on a full disk: %v", err)
	}
	if err := s.Append(make([]byte, 64<<10)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append 2,100 bytes past the reservation with 1000 bytes free: %v", err)
	}
	if s.Written() != 2200 {
		t.Fatalf("Written %d", s.Written())
	}
	// 500 bytes past the reservation fit only without the step.
	if err := s.Append(make([]byte, 64<<10-2000+500)); err != nil {
		t.Fatalf("append that fits without the step: %v", err)
	}
	if d, err := s.Flush(); err != nil || d != 64<<10+700 {
		t.Fatalf("flush %d %v", d, err)
	}

	// No fallocate: nothing reserved, appends still buffer.
	efs := errorfs.Wrap(vfs.NewMem(), errorfs.Rule{Op: errorfs.OpAllocate, Sticky: true, Err: syscall.EOPNOTSUPP})
	s2 := pwriteSeg(t, efs, 1<<20, 4096, false)
	for i := 0; i < 3; i++ {
		if err := s2.Append(make([]byte, 100)); err != nil {
			t.Fatalf("append without fallocate: %v", err)
		}
	}
	if d, err := s2.Flush(); err != nil || d != 300 {
		t.Fatalf("flush %d %v", d, err)
	}
}

// TestPwriteCloseWritesOut: Close puts buffered bytes in the file (not
// durable), as an unbuffered segment would have, and drops the buffer.
func TestPwriteCloseWritesOut(t *testing.T) {
	mem := vfs.NewMem()
	s := pwriteSeg(t, mem, 64<<10, 4096, false)
	s.Append([]byte("hello, "))
	s.Append([]byte("world"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fileBytes(t, mem, 12); string(got) != "hello, world" {
		t.Fatalf("file after Close: %q", got)
	}
	if _, err := s.ReadAt(make([]byte, 1), 0); !errors.Is(err, errSegmentClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if err := s.Append([]byte("x")); !errors.Is(err, errSegmentClosed) {
		t.Fatalf("append after Close: %v", err)
	}
	if s.Close() == nil {
		t.Fatal("second Close succeeded")
	}
}

// TestPwriteFullSegmentDropsBuffer: a full, written-out segment holds no
// buffer, and one opened full never allocates one.
func TestPwriteFullSegmentDropsBuffer(t *testing.T) {
	mem := vfs.NewMem()
	s := pwriteSeg(t, mem, 10000, 4096, false)
	s.Flush()
	for i := 0; i < 10; i++ {
		if err := s.Append(bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if s.buf != nil {
		t.Fatal("full segment keeps its buffer")
	}
	got := make([]byte, 1000)
	if _, err := s.ReadAt(got, 9000); err != nil || got[0] != 9 {
		t.Fatalf("read of a full segment: %v", err)
	}
	s.Close()
	b, _ := NewPwrite(PwriteOptions{BufferSize: 4096})
	s2, err := b.Open(Config{FS: mem, Path: "/seg", Capacity: 10000, Written: 10000})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.ReadAt(got, 0); err != nil || s2.(*pwriteSegment).buf != nil {
		t.Fatalf("full segment opened: %v, buffer %d", err, len(s2.(*pwriteSegment).buf))
	}
}

// TestPwriteAppendZeroAllocs: steady-state buffered appends (with their
// spills) allocate nothing.
func TestPwriteAppendZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	b, _ := Get("pwrite")
	s, err := b.Create(Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg"), Capacity: 64 << 20, Preallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := make([]byte, 1151)
	for i := 0; i < 1000; i++ {
		s.Append(rec)
	}
	if allocs := testing.AllocsPerRun(20000, func() {
		if err := s.Append(rec); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Fatalf("Append allocates %.2f times per call", allocs)
	}
}

// BenchmarkPwriteBufferSize: 1151-byte appends (a 1 KiB message's record)
// into a preallocated OS file with no Flush until the segment is full, as
// under async flush, for several buffer sizes (the smallest, 4 KiB, is a
// write every 3 appends: near the unbuffered cost).
func BenchmarkPwriteBufferSize(b *testing.B) {
	const capacity = 256 << 20
	rec := make([]byte, 1151)
	for _, size := range []int{4 << 10, 64 << 10, 256 << 10, 1 << 20} {
		b.Run("buffer="+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			be, err := NewPwrite(PwriteOptions{BufferSize: size})
			if err != nil {
				b.Fatal(err)
			}
			total := appendBench(b, be, capacity, rec, 0, false)
			b.ReportMetric(float64(total.WriteCalls)*1000/float64(b.N), "writes/1000appends")
		})
	}
}
