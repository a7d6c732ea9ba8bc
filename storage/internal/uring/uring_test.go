package uring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func newRing(t *testing.T, entries uint32) *Ring {
	t.Helper()
	r, err := Setup(entries)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func tempFile(t *testing.T, flags int) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

func aligned(n int) []byte {
	b := make([]byte, n+4096)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & 4095)
	return b[off : off+n]
}

func fill(b []byte, seed byte) []byte {
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

func TestSetupRefused(t *testing.T) {
	for _, errno := range []syscall.Errno{unix.ENOSYS, unix.EPERM, unix.EACCES} {
		_, err := FailingSetup(errno)(8)
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, errno) {
			t.Errorf("%v: %v", errno, err)
		}
	}
	_, err := FailingSetup(unix.ENOMEM)(8)
	if err == nil || errors.Is(err, ErrUnavailable) || !errors.Is(err, unix.ENOMEM) {
		t.Errorf("ENOMEM: %v", err)
	}
	if _, err := Setup(0); err == nil {
		t.Error("Setup(0) succeeded")
	}
}

// TestWritesLinkedFsync: N writes and a linked fdatasync in one batch,
// one io_uring_enter; then the same bytes read back through the ring.
func TestWritesLinkedFsync(t *testing.T) {
	r := newRing(t, 16)
	f, path := tempFile(t, 0)
	fd := int(f.Fd())
	const n = 8
	var ops []Op
	var want []byte
	for i := 0; i < n; i++ {
		b := fill(make([]byte, 1000+i), byte(i))
		ops = append(ops, Op{Code: OpWrite, Fd: fd, Buf: b, Off: int64(len(want)), Link: true})
		want = append(want, b...)
	}
	ops = append(ops, Op{Code: OpFsync, Fd: fd, Flags: FsyncDatasync})
	res := make([]int32, len(ops))
	enters, err := r.SubmitAndWait(ops, res)
	if err != nil {
		t.Fatal(err)
	}
	if enters < 1 || enters > 3 { // a signal may interrupt the wait
		t.Errorf("%d io_uring_enter calls for one batch", enters)
	}
	for i, op := range ops {
		if err := Result(res[i], len(op.Buf)); err != nil {
			t.Fatalf("op %d (%v): %v", i, op, err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file content differs (%d of %d bytes): %v", len(got), len(want), err)
	}
	back := make([]byte, len(want))
	res = res[:1]
	if _, err := r.SubmitAndWait([]Op{{Code: OpRead, Fd: fd, Buf: back}}, res); err != nil {
		t.Fatal(err)
	}
	if err := Result(res[0], len(back)); err != nil || !bytes.Equal(back, want) {
		t.Fatalf("read back: %v", err)
	}
}

// TestFixedDirect: registered buffers with O_DIRECT writes and reads.
func TestFixedDirect(t *testing.T) {
	r := newRing(t, 8)
	f, _ := tempFile(t, unix.O_DIRECT)
	fd := int(f.Fd())
	buf := fill(aligned(64<<10), 9)
	back := aligned(64 << 10)
	if err := r.RegisterBuffers([][]byte{buf, back}); err != nil {
		t.Fatal(err)
	}
	ops := []Op{
		{Code: OpWriteFixed, Fd: fd, Buf: buf[:32<<10], Off: 0, BufIndex: 0, Link: true},
		{Code: OpWriteFixed, Fd: fd, Buf: buf[32<<10:], Off: 32 << 10, BufIndex: 0, Link: true},
		{Code: OpFsync, Fd: fd, Flags: FsyncDatasync, Link: true},
		{Code: OpReadFixed, Fd: fd, Buf: back, Off: 0, BufIndex: 1},
	}
	res := make([]int32, len(ops))
	if _, err := r.SubmitAndWait(ops, res); err != nil {
		t.Fatal(err)
	}
	for i, op := range ops {
		if err := Result(res[i], len(op.Buf)); err != nil {
			t.Fatalf("op %d (%v): %v", i, op, err)
		}
	}
	if !bytes.Equal(back, buf) {
		t.Fatal("read back differs")
	}
	if err := r.UnregisterBuffers(); err != nil {
		t.Fatal(err)
	}
	// Unaligned O_DIRECT: the kernel's EINVAL comes back in the result.
	res = res[:1]
	if _, err := r.SubmitAndWait([]Op{{Code: OpWrite, Fd: fd, Buf: buf[1:4097], Off: 0}}, res); err != nil {
		t.Fatal(err)
	}
	if err := Result(res[0], 4096); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("unaligned direct write: %v", err)
	}
}

// TestLinkBroken: a failing write cancels the fsync linked after it.
func TestLinkBroken(t *testing.T) {
	r := newRing(t, 4)
	_, path := tempFile(t, 0)
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	fd := int(ro.Fd())
	ops := []Op{
		{Code: OpWrite, Fd: fd, Buf: []byte("x"), Link: true},
		{Code: OpFsync, Fd: fd, Flags: FsyncDatasync},
		{Code: OpNop},
	}
	res := make([]int32, len(ops))
	if _, err := r.SubmitAndWait(ops, res); err != nil {
		t.Fatal(err)
	}
	if err := Result(res[0], 1); !errors.Is(err, unix.EBADF) {
		t.Errorf("write to a read-only fd: %v", err)
	}
	if err := Result(res[1], 0); !errors.Is(err, unix.ECANCELED) {
		t.Errorf("linked fsync: %v", err)
	}
	if err := Result(res[2], 0); err != nil {
		t.Errorf("unlinked nop: %v", err)
	}
}

func TestBatchLimits(t *testing.T) {
	r := newRing(t, 4)
	if r.Entries() != 4 {
		t.Fatalf("entries %d", r.Entries())
	}
	ops := make([]Op, 5)
	if _, err := r.SubmitAndWait(ops, make([]int32, 5)); err == nil {
		t.Error("batch larger than the ring accepted")
	}
	if _, err := r.SubmitAndWait(ops[:2], make([]int32, 1)); err == nil {
		t.Error("short result slice accepted")
	}
	// Many batches in a row: head and tail wrap, generations keep results apart.
	res := make([]int32, 4)
	for i := 0; i < 3000; i++ {
		if _, err := r.SubmitAndWait(ops[:1+i%4], res); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	if _, err := r.SubmitAndWait(ops[:1], res); err == nil {
		t.Error("submit after Close succeeded")
	}
}
