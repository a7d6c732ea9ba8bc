package backend

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestPwriteReadCold: a cold read returns the segment's bytes from the
// disk with O_DIRECT when they are not in the page cache, from the page
// cache when they are (or are dirty there), refuses what it cannot do
// with ErrNoColdRead, and closing a segment that never opened its direct
// descriptor closes nothing else.
func TestPwriteReadCold(t *testing.T) {
	if noColdRead.Load() {
		t.Skip("cold reads refused earlier in this process")
	}
	b, err := Get("pwrite")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg"), Capacity: 1 << 20, Preallocate: true}
	seg, err := b.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	if err := seg.Append(data); err != nil {
		t.Fatal(err)
	}
	cr := seg.(ColdReader)
	p := AlignedBlock(64 << 10)
	// Written out by the hand-over but not flushed: dirty in the page
	// cache, so read from it (a direct read would make the kernel write
	// it first).
	if _, err := seg.(*pwriteSegment).WriteOut(); err != nil {
		t.Fatal(err)
	}
	n, direct, err := cr.ReadCold(p, 64<<10)
	if errors.Is(err, ErrNoColdRead) {
		t.Skipf("no cold reads on this kernel or file system: %v", err)
	}
	if err != nil || n != len(p) || direct || !bytes.Equal(p, data[64<<10:128<<10]) {
		t.Fatalf("dirty bytes: n %d direct %t err %v, equal %t", n, direct, err, bytes.Equal(p, data[64<<10:128<<10]))
	}
	if _, err := seg.Flush(); err != nil {
		t.Fatal(err)
	}
	f := seg.(*pwriteSegment).f
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	clear(p)
	n, direct, err = cr.ReadCold(p, 128<<10)
	if err != nil || n != len(p) || !bytes.Equal(p, data[128<<10:192<<10]) {
		t.Fatalf("cold bytes: n %d err %v, equal %t", n, err, bytes.Equal(p, data[128<<10:192<<10]))
	}
	if !direct {
		t.Log("the dropped pages were still cached (fadvise is a hint): read from the page cache")
	}
	// Not aligned, past the bytes in the file, unaligned buffer.
	for _, c := range []struct {
		p   []byte
		off int64
	}{{p, 100}, {p, 224 << 10}, {AlignedBlock(8192)[1:4097], 0}, {AlignedBlock(1000), 0}} {
		if _, _, err := cr.ReadCold(c.p, c.off); !errors.Is(err, ErrNoColdRead) {
			t.Fatalf("ReadCold(%d bytes, %d): %v, want ErrNoColdRead", len(c.p), c.off, err)
		}
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cr.ReadCold(p, 0); !errors.Is(err, errSegmentClosed) {
		t.Fatalf("after Close: %v", err)
	}

	// A segment that never read cold closes only its own file (the zero
	// value's descriptor, 0, is not its to close).
	cfg.Path = filepath.Join(t.TempDir(), "seg2")
	seg2, err := b.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := seg2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.FcntlInt(0, unix.F_GETFD, 0); err != nil {
		t.Fatalf("descriptor 0 after a segment's Close: %v", err)
	}
}
