package backend

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

type byteser interface{ Bytes(off, n int64) []byte }

func TestMmapBytesZeroCopy(t *testing.T) {
	b, _ := Get("mmap")
	s, err := b.Create(Config{FS: vfs.NewMem(), Path: "/seg", Capacity: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append([]byte("hello, world")); err != nil {
		t.Fatal(err)
	}
	bs, ok := s.(byteser)
	if !ok {
		t.Fatal("mmap segment has no Bytes")
	}
	if got := bs.Bytes(7, 5); string(got) != "world" {
		t.Fatalf("Bytes: %q", got)
	}
	if got := bs.Bytes(7, 6); got != nil {
		t.Fatalf("Bytes past Written: %q", got)
	}
	if st := s.Stats(); st.WriteCalls != 0 || st.BytesWritten != 12 {
		t.Fatalf("stats %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadAt(make([]byte, 1), 0); err == nil {
		t.Fatal("read after close succeeded")
	}
	if bs.Bytes(0, 1) != nil {
		t.Fatal("Bytes after close")
	}
}

// plainFS hides the Mapper of MemFS files.
type plainFS struct{ *vfs.MemFS }

type plainFile struct{ vfs.File }

func (p plainFS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := p.MemFS.Create(name, o)
	return plainFile{f}, err
}

func TestMmapNeedsMapper(t *testing.T) {
	b, _ := Get("mmap")
	if _, err := b.Create(Config{FS: plainFS{vfs.NewMem()}, Path: "/seg", Capacity: 4096}); err == nil {
		t.Fatal("mmap over a file that cannot be mapped")
	}
}

func TestMmapFallocateUnsupported(t *testing.T) {
	b, _ := Get("mmap")
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem, errorfs.Rule{Op: errorfs.OpAllocate, Sticky: true, Err: syscall.EOPNOTSUPP})
	s, err := b.Create(Config{FS: efs, Path: "/seg", Capacity: 8192})
	if err != nil {
		t.Fatalf("no fallback to a sparse file: %v", err)
	}
	defer s.Close()
	if sz, _ := mem.Stat("/seg"); sz != 8192 {
		t.Fatalf("file is %d bytes", sz)
	}
	_, err = b.Create(Config{FS: efs, Path: "/seg2", Capacity: 8192, Preallocate: true})
	if !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("Preallocate without fallocate: %v", err)
	}
}

// TestMmapOpenGrowsShortFile: a segment written by pwrite (file as long as
// its data) opens under mmap.
func TestMmapOpenGrowsShortFile(t *testing.T) {
	mem := vfs.NewMem()
	pw, _ := Get("pwrite")
	cfg := Config{FS: mem, Path: "/seg", Capacity: 16384}
	s, err := pw.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("abc"), 1000)
	s.Append(data)
	s.Flush()
	s.Close()
	mm, _ := Get("mmap")
	cfg.Written = int64(len(data))
	s, err = mm.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := make([]byte, len(data))
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read: %v", err)
	}
	if err := s.Append(data); err != nil {
		t.Fatal(err)
	}
	if sz, _ := mem.Stat("/seg"); sz != cfg.Capacity {
		t.Fatalf("file is %d bytes", sz)
	}
}
