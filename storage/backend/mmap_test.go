package backend

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

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

func TestMmapOptions(t *testing.T) {
	var o MmapOptions
	o.EnsureDefaults()
	if o.Validate() != nil || o.String() != "prefault=16777216 smallflush=262144" {
		t.Fatalf("defaults %v: %v", o, o.Validate())
	}
	if _, err := NewMmap(MmapOptions{PrefaultAhead: 1000}); err == nil {
		t.Fatal("unaligned PrefaultAhead accepted")
	}
	if _, err := NewMmap(MmapOptions{PrefaultAhead: -1, SmallFlush: -1}); err != nil {
		t.Fatalf("prefaulting and advice off: %v", err)
	}
}

// resident counts the resident pages of b (mincore).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+4095)/4096)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// waitPopulated polls (bounded) until the helper has populated to at
// least want.
func waitPopulated(t *testing.T, s *mmapSegment, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.pg.populated.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("populated %d, want %d", s.pg.populated.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMmapPrefaults: the helper keeps PrefaultAhead past the tail mapped
// in, follows the appends, stops at the capacity, and Close stops it.
func TestMmapPrefaults(t *testing.T) {
	const ahead = 256 << 10
	b, err := NewMmap(MmapOptions{PrefaultAhead: ahead})
	if err != nil {
		t.Fatal(err)
	}
	sg, err := b.Create(Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg"), Capacity: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	s := sg.(*mmapSegment)
	waitPopulated(t, s, ahead)
	if n := resident(t, s.mapping.data[:ahead]); n != ahead/4096 {
		t.Fatalf("%d of %d pages ahead resident", n, ahead/4096)
	}
	if got := s.pg.populated.Load(); got > 2*ahead {
		t.Fatalf("populated %d with nothing appended", got)
	}
	rec := make([]byte, 1000)
	for s.Written()+int64(len(rec)) <= 1<<20 {
		if err := s.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	waitPopulated(t, s, s.Written()+ahead/2)
	for s.Written()+int64(len(rec)) <= s.Capacity() {
		s.Append(rec)
	}
	s.Append(make([]byte, s.Capacity()-s.Written()))
	select {
	case <-s.pg.done: // the whole segment is populated: the helper is gone
	case <-time.After(10 * time.Second):
		t.Fatal("helper still running on a full segment")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Close stops a helper that is still running; MemFS gets none.
	sg, _ = b.Create(Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg2"), Capacity: 64 << 20})
	if err := sg.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sg.(*mmapSegment).pg.done:
	default:
		t.Fatal("Close returned with the helper running")
	}
	sg, _ = b.Create(Config{FS: vfs.NewMem(), Path: "/seg", Capacity: 64 << 10})
	defer sg.Close()
	if sg.(*mmapSegment).pg.kick != nil {
		t.Fatal("helper for a MemFS mapping")
	}
}

// TestMmapSmallFlushAdvice: four small flushes in a row switch the
// unpopulated part of the mapping to small pages, four large ones back,
// and a full segment is advised normally again.
func TestMmapSmallFlushAdvice(t *testing.T) {
	b, _ := NewMmap(MmapOptions{PrefaultAhead: -1, SmallFlush: 64 << 10})
	sg, err := b.Create(Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg"), Capacity: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer sg.Close()
	s := sg.(*mmapSegment)
	flush := func(n int) {
		t.Helper()
		if err := s.Append(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		flush(1000)
	}
	if s.pg.small.Load() {
		t.Fatal("small pages after 3 small flushes")
	}
	flush(1000)
	if !s.pg.small.Load() || !s.pg.advised {
		t.Fatal("no small pages after 4 small flushes")
	}
	if !mappingAdvisedRandom(t, s.mapping.data) {
		t.Fatal("the kernel does not show the mapping's tail as random-read")
	}
	flush(100 << 10) // neither small nor 4x large: the streak restarts
	for i := 0; i < 3; i++ {
		flush(256 << 10)
	}
	if !s.pg.small.Load() {
		t.Fatal("normal pages after a broken streak")
	}
	flush(256 << 10)
	if s.pg.small.Load() {
		t.Fatal("still small pages after 4 large flushes")
	}
	flush(1000)
	flush(1000)
	flush(1000)
	flush(1000)
	if !s.pg.small.Load() {
		t.Fatal("no small pages the second time")
	}
	flush(int(s.Capacity() - s.Written()))
	if s.pg.small.Load() || s.pg.advised || mappingAdvisedRandom(t, s.mapping.data) {
		t.Fatal("a full segment keeps the small-page advice")
	}
}

// mappingAdvisedRandom reports whether some part of the mapping at b has
// the "rr" (MADV_RANDOM) flag in /proc/self/smaps.
func mappingAdvisedRandom(t *testing.T, b []byte) bool {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	lo := uintptr(unsafe.Pointer(&b[0]))
	hi := lo + uintptr(len(b))
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		var start, end uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &start, &end); n == 2 && strings.Contains(line, " ") {
			in = start < hi && end > lo
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") && strings.Contains(line, " rr") {
			return true
		}
	}
	return false
}

var long = flag.Bool("long", false, "run the long, real-disk tests")

// procWriteBytes is this process's bytes sent to the block layer
// (/proc/self/io write_bytes).
func procWriteBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Skip("no write_bytes in /proc/self/io")
	return 0
}

// TestMmapSmallFlushWriteAmp (-long; real disk, in the test's temp dir):
// flushes of ~37 KB, as a sync store with 64 writers makes, must not
// write much more than they flush. With the kernel's large folios each
// such flush wrote ~1.2 MB before the small-page advice.
func TestMmapSmallFlushWriteAmp(t *testing.T) {
	if !*long {
		t.Skip("-long")
	}
	b, _ := Get("mmap")
	sg, err := b.Create(Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg"), Capacity: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer sg.Close()
	rec := make([]byte, 1151)
	before := procWriteBytes(t)
	const flushes = 1500
	for i := 0; i < flushes; i++ {
		for j := 0; j < 32; j++ {
			if err := sg.Append(rec); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := sg.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	wrote, logged := procWriteBytes(t)-before, sg.Written()
	t.Logf("%d flushes of %d bytes: %.1f MB to the block layer for %.1f MB of log", flushes, 32*len(rec), float64(wrote)/1e6, float64(logged)/1e6)
	if wrote > 2*logged {
		t.Fatalf("write amplification %.1fx", float64(wrote)/float64(logged))
	}
}
