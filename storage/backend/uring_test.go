package backend

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/samsamq/samsa/storage/internal/uring"
	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

func uringWith(t *testing.T, opts UringOptions) uringBackend {
	t.Helper()
	b, err := NewUring(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b.(uringBackend)
}

// newUringTest makes a uring segment on fsys, skipping where the kernel
// refuses io_uring.
func newUringTest(t *testing.T, fsys vfs.FS, opts UringOptions, capacity int64) (*directSegment, Config) {
	t.Helper()
	dir := t.TempDir()
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	cfg := Config{FS: fsys, Path: filepath.Join(dir, "seg"), Capacity: capacity}
	s, err := uringWith(t, opts).Create(cfg)
	if errors.Is(err, ErrUringUnavailable) {
		t.Skipf("io_uring unavailable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*directSegment), cfg
}

func TestUringOptions(t *testing.T) {
	var o UringOptions
	o.EnsureDefaults()
	if err := o.Validate(); err != nil || o.String() != "buffer=4194304 stage=65536 stagedring=67108864 zeroahead=0 buffered=false entries=32 fixed=true" {
		t.Fatalf("defaults %q: %v", o, err)
	}
	err := UringOptions{ODirectOptions: ODirectOptions{BufferSize: 1, StageSize: 4096, StagedRingSize: 8192}, Entries: 2}.Validate()
	if err == nil || strings.Count(err.Error(), ";") != 1 {
		t.Fatalf("want two errors at once: %v", err)
	}
}

// TestUringRefused: where io_uring_setup fails with ENOSYS or EPERM,
// Create and Open on an OS file fail with ErrUringUnavailable; MemFS
// files, which use the emulation, do not need the kernel.
func TestUringRefused(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSYS, syscall.EPERM} {
		b := uringWith(t, UringOptions{})
		b.setup = uring.FailingSetup(errno)
		cfg := Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg"), Capacity: 64 << 10}
		_, err := b.Create(cfg)
		if !errors.Is(err, ErrUringUnavailable) || !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, errno) ||
			!strings.Contains(err.Error(), "io_uring") {
			t.Fatalf("%v: create: %v", errno, err)
		}
		if _, err := b.Open(cfg); !errors.Is(err, ErrUringUnavailable) {
			t.Fatalf("%v: open: %v", errno, err)
		}
		mem := vfs.NewMem()
		s, err := b.Create(Config{FS: mem, Path: "/seg", Capacity: 64 << 10})
		if err != nil {
			t.Fatalf("%v: MemFS create: %v", errno, err)
		}
		s.Close()
	}
}

// TestUringBatch: every flush, small or large, wrapped or not, is one
// submission with its fsync; spills are one submission without.
func TestUringBatch(t *testing.T) {
	m := vfs.NewMem()
	efs := errorfs.Wrap(m)
	s, cfg := newUringTest(t, efs, UringOptions{ODirectOptions: ODirectOptions{BufferSize: 16 << 10, StageSize: 4096}}, 1<<20)
	if _, ok := s.io.exec.(*uringIO).ring.(*emulRing); !ok {
		t.Fatal("a file without a descriptor did not get the emulated ring")
	}
	appendD(t, s, 100)
	flushD(t, s)
	appendD(t, s, 3*4096) // full blocks from the ring + tail from the stage
	flushD(t, s)
	appendD(t, s, 3*4096) // wraps: two ring writes + tail
	flushD(t, s)
	st := s.Stats()
	if st.WriteCalls != 3 || st.Fsyncs != 3 || st.FlushBatches != 3 {
		t.Fatalf("three flushes: %+v", st)
	}
	if w := efs.Count(errorfs.OpWrite); w != 1+2+3 {
		t.Fatalf("%d writes ran, want 6", w)
	}
	appendD(t, s, 40000) // spills
	if got := s.Stats(); got.WriteCalls <= st.WriteCalls || got.Fsyncs != st.Fsyncs {
		t.Fatalf("spills: %+v after %+v", got, st)
	}
	flushD(t, s)
	checkDpattern(t, crashedBytes(t, m, cfg.Path, int(s.Written())), 0)
	readD(t, s, 0, int(s.Written()))
}

// TestUringSplitBatch: a batch longer than the ring (zero-ahead writes)
// goes in parts with the fsync last.
func TestUringSplitBatch(t *testing.T) {
	m := vfs.NewMem()
	opts := UringOptions{ODirectOptions: ODirectOptions{ZeroAhead: 6 << 20}, Entries: 4}
	s, cfg := newUringTest(t, m, opts, 16<<20)
	appendD(t, s, 5000)
	flushD(t, s) // 1 stage write + 6 zero writes of 1 MiB + fsync = 8 ops
	if st := s.Stats(); st.WriteCalls != 2 || st.Fsyncs != 1 || st.BytesWritten != 8192+6<<20 {
		t.Fatalf("split batch: %+v", st)
	}
	checkDpattern(t, crashedBytes(t, m, cfg.Path, 5000), 0)
}

// TestUringShortWrite: a torn write is a short completion; the flush
// fails, the linked fsync does not run, and the error sticks.
func TestUringShortWrite(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	s, _ := newUringTest(t, efs, UringOptions{}, 1<<20)
	appendD(t, s, 3*4096+10)
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Tear: true, TearAt: 4096})
	_, err := s.Flush()
	if err == nil || !strings.Contains(err.Error(), "short transfer") {
		t.Fatalf("flush with a torn write: %v", err)
	}
	if n := efs.Count(errorfs.OpSync); n != 0 {
		t.Fatalf("the fsync after a short write ran (%d syncs)", n)
	}
	if st := s.Stats(); st.Fsyncs != 0 || st.BytesWritten != 4096 {
		t.Fatalf("stats after short write: %+v", st)
	}
	if _, err2 := s.Flush(); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second flush: %v", err2)
	}
}

// TestUringEmulation: link semantics and fixed-buffer checks of the
// emulated ring.
func TestUringEmulation(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	f, err := efs.Create("/f", vfs.OpenOptions{Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := alignedBytes(8192)
	other := alignedBytes(4096)
	e := &emulRing{f: f, entries: 8, bufs: [][]byte{reg}}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Nth: 2, Err: syscall.ENOSPC})
	ops := []uring.Op{
		{Code: uring.OpWriteFixed, Buf: reg[:4096], Link: true},
		{Code: uring.OpWrite, Buf: other, Off: 4096, Link: true}, // fails
		{Code: uring.OpWrite, Buf: other, Off: 8192, Link: true}, // cancelled
		{Code: uring.OpFsync},                          // cancelled: end of the chain
		{Code: uring.OpWriteFixed, Buf: other, Off: 0}, // not in a registered buffer
		{Code: uring.OpWrite, Buf: other[1:], Off: 0},  // unaligned on a Direct file
		{Code: uring.OpRead, Buf: reg[4096:], Off: 0},
	}
	res := make([]int32, len(ops))
	if n, err := e.SubmitAndWait(ops, res); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	want := []int32{4096, -int32(syscall.ENOSPC), -int32(syscall.ECANCELED), -int32(syscall.ECANCELED),
		-int32(syscall.EFAULT), -int32(syscall.EINVAL), 4096}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("op %d (%v): %d, want %d", i, ops[i], res[i], want[i])
		}
	}
	if efs.Count(errorfs.OpSync) != 0 {
		t.Error("cancelled fsync ran")
	}
	if _, err := e.SubmitAndWait(make([]uring.Op, 9), make([]int32, 9)); err == nil {
		t.Error("oversized batch accepted")
	}
}

// TestUringKernelRing: on an OS file the segment uses a kernel ring with
// registered buffers, and a flush is (nearly always) one io_uring_enter.
func TestUringKernelRing(t *testing.T) {
	for _, opts := range []UringOptions{{}, {Buffered: true}, {NoFixedBuffers: true}} {
		s, cfg := newUringTest(t, vfs.Default, opts, 1<<20)
		x := s.io.exec.(*uringIO)
		if _, ok := x.ring.(*uring.Ring); !ok || x.fixed == opts.NoFixedBuffers {
			t.Fatalf("%v: ring %T fixed %t", opts, x.ring, x.fixed)
		}
		const flushes = 50
		for i := 0; i < flushes; i++ {
			appendD(t, s, 1000+i*37)
			flushD(t, s)
		}
		st := s.Stats()
		if st.Fsyncs != flushes || st.WriteCalls < flushes || st.WriteCalls > 2*flushes {
			t.Fatalf("%v: %d flushes: %+v", opts, flushes, st)
		}
		s.Close()
		cfg.Written = s.Written()
		s2, err := uringWith(t, opts).Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		readD(t, s2, 0, int(cfg.Written))
		s2.Close()
	}
}

// TestUringConcurrent: the concurrency test of the direct segment through
// a kernel ring and through the emulation.
func TestUringConcurrent(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		t.Run(fsName, func(t *testing.T) {
			var fsys vfs.FS = vfs.NewMem()
			if fsName == "os" {
				fsys = vfs.Default
			}
			opts := UringOptions{ODirectOptions: ODirectOptions{BufferSize: 16 << 10, StageSize: 8 << 10, ZeroAhead: 32 << 10}}
			s, _ := newUringTest(t, fsys, opts, 4<<20)
			runDirectConcurrent(t, s, 5)
		})
	}
}

// TestUringOutOfResources: io_uring_setup failing for want of memory or a
// descriptor (ENOMEM, EMFILE) is not a refusal: Create's error wraps the
// errno (vfs.IsResourceError: the store answers ErrResourceBusy and tries
// again at the next roll), and the segment's file is closed.
func TestUringOutOfResources(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOMEM, syscall.EMFILE} {
		b := uringWith(t, UringOptions{})
		b.setup = uring.FailingSetup(errno)
		cfg := Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg"), Capacity: 64 << 10}
		before := openFds(t)
		_, err := b.Create(cfg)
		if !errors.Is(err, errno) || !vfs.IsResourceError(err) || errors.Is(err, ErrUringUnavailable) {
			t.Fatalf("%v: create: %v", errno, err)
		}
		if after := openFds(t); after != before {
			t.Fatalf("%v: %d descriptors open before the failed Create, %d after", errno, before, after)
		}
	}
}

// openFds counts the process's open descriptors.
func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}
