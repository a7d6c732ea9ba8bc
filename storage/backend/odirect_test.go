package backend

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// dpat is the byte the direct tests store at offset off.
func dpat(off int64) byte { return byte(off*7+off>>12) ^ 0xa5 }

func dpattern(off int64, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = dpat(off + int64(i))
	}
	return p
}

func checkDpattern(t *testing.T, got []byte, off int64) {
	t.Helper()
	for i, c := range got {
		if want := dpat(off + int64(i)); c != want {
			t.Fatalf("byte at %d is %#x, want %#x", off+int64(i), c, want)
		}
	}
}

func odirectWith(t *testing.T, opts ODirectOptions) Backend {
	t.Helper()
	b, err := NewODirect(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newDirectTest makes an odirect segment on fsys with the given options.
func newDirectTest(t *testing.T, fsys vfs.FS, opts ODirectOptions, capacity int64) (*directSegment, Config) {
	t.Helper()
	dir := t.TempDir()
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	cfg := Config{FS: fsys, Path: filepath.Join(dir, "seg"), Capacity: capacity}
	s, err := odirectWith(t, opts).Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*directSegment), cfg
}

func appendD(t *testing.T, s Segment, n int) {
	t.Helper()
	w := s.Written()
	if err := s.Append(dpattern(w, n)); err != nil {
		t.Fatalf("append %d at %d: %v", n, w, err)
	}
}

func flushD(t *testing.T, s Segment) int64 {
	t.Helper()
	d, err := s.Flush()
	if err != nil || d != s.Written() {
		t.Fatalf("flush: %d of %d, %v", d, s.Written(), err)
	}
	return d
}

func readD(t *testing.T, s Segment, off int64, n int) {
	t.Helper()
	got := make([]byte, n)
	if k, err := s.ReadAt(got, off); k != n || err != nil {
		t.Fatalf("read %d at %d: %d, %v", n, off, k, err)
	}
	checkDpattern(t, got, off)
}

// fileBytes reads the first n bytes of the file after a harsh crash.
func crashedBytes(t *testing.T, m *vfs.MemFS, path string, n int) []byte {
	t.Helper()
	f, err := m.CrashClone(nil).Open(path, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, n)
	if k, err := f.ReadAt(got, 0); k != n {
		t.Fatalf("crashed file: %d of %d bytes, %v", k, n, err)
	}
	return got
}

func TestDirectOptions(t *testing.T) {
	var o ODirectOptions
	o.EnsureDefaults()
	if err := o.Validate(); err != nil || o.String() != "buffer=4194304 stage=65536 stagedring=67108864 zeroahead=0" {
		t.Fatalf("defaults %q: %v", o, err)
	}
	err := ODirectOptions{BufferSize: 4096, StageSize: 100, StagedRingSize: 8192, ZeroAhead: -1}.Validate()
	if err == nil || strings.Count(err.Error(), ";") != 2 {
		t.Fatalf("want three errors at once, got %v", err)
	}
	if _, err := NewODirect(ODirectOptions{BufferSize: 5000}); err == nil {
		t.Fatal("NewODirect accepted an unaligned buffer")
	}
	_, err = odirectWith(t, ODirectOptions{}).Create(Config{FS: vfs.NewMem(), Path: "/x", Capacity: 5000})
	if err == nil || !strings.Contains(err.Error(), "multiple of 4096") {
		t.Fatalf("unaligned capacity: %v", err)
	}
}

// TestDirectTailRewrite: the partial last block is written padded with
// zeros, kept in memory and rewritten in place with more bytes; each
// flushed state survives a crash.
func TestDirectTailRewrite(t *testing.T) {
	m := vfs.NewMem()
	efs := errorfs.Wrap(m)
	s, cfg := newDirectTest(t, efs, ODirectOptions{}, 64<<10)
	appendD(t, s, 100)
	flushD(t, s)
	if st := s.Stats(); st.WriteCalls != 1 || st.BytesWritten != 4096 || st.Fsyncs != 1 {
		t.Fatalf("first flush: %+v", st)
	}
	img := crashedBytes(t, m, cfg.Path, 4096)
	checkDpattern(t, img[:100], 0)
	if !bytes.Equal(img[100:], make([]byte, 4096-100)) {
		t.Fatal("tail block is not padded with zeros")
	}
	appendD(t, s, 200)
	flushD(t, s)
	if st := s.Stats(); st.WriteCalls != 2 || st.BytesWritten != 8192 || s.onDisk.Load() != 0 {
		t.Fatalf("rewrite of the tail block: %+v onDisk %d", st, s.onDisk.Load())
	}
	checkDpattern(t, crashedBytes(t, m, cfg.Path, 300), 0)
	// Filling the block moves onDisk past it; the next flush starts at the
	// following block.
	appendD(t, s, 4096-300+10)
	flushD(t, s)
	if s.onDisk.Load() != 4096 {
		t.Fatalf("onDisk %d after filling block 0", s.onDisk.Load())
	}
	before := efs.Count(errorfs.OpWrite)
	appendD(t, s, 5)
	flushD(t, s)
	if got := efs.Count(errorfs.OpWrite) - before; got != 1 || s.Stats().BytesWritten != 3*4096+2*4096 {
		t.Fatalf("flush of block 1: %d writes, %+v", got, s.Stats())
	}
	checkDpattern(t, crashedBytes(t, m, cfg.Path, int(s.Written())), 0)
	readD(t, s, 0, int(s.Written()))
}

// TestDirectLargeFlush: a flush larger than StageSize writes its full
// blocks from the ring (two writes where it wraps) and the tail block from
// the stage.
func TestDirectLargeFlush(t *testing.T) {
	m := vfs.NewMem()
	s, cfg := newDirectTest(t, m, ODirectOptions{BufferSize: 16 << 10, StageSize: 4096}, 256<<10)
	appendD(t, s, 3*4096+100)
	flushD(t, s)
	if st := s.Stats(); st.WriteCalls != 2 || st.BytesWritten != 4*4096 {
		t.Fatalf("full blocks + tail: %+v", st)
	}
	// onDisk is 12288; 16 KiB of ring: the next 3 blocks wrap.
	appendD(t, s, 3*4096)
	flushD(t, s)
	if st := s.Stats(); st.WriteCalls != 2+3 {
		t.Fatalf("wrapped flush: %+v", st)
	}
	checkDpattern(t, crashedBytes(t, m, cfg.Path, int(s.Written())), 0)
	readD(t, s, 0, int(s.Written()))
}

// TestDirectReadBoundary: reads below onDisk come from the file, reads
// above from the ring, and reads across the boundary from both.
func TestDirectReadBoundary(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	s, _ := newDirectTest(t, efs, ODirectOptions{BufferSize: 8192, StageSize: 4096}, 256<<10)
	rng := rand.New(rand.NewSource(7))
	for s.Written() < 100<<10 {
		appendD(t, s, 1+rng.Intn(3000)) // spills as the 8 KiB ring fills
	}
	d := s.onDisk.Load()
	if d == 0 || s.Stats().FlushBatches != 0 || s.Stats().WriteCalls == 0 {
		t.Fatalf("no spills: onDisk %d %+v", d, s.Stats())
	}
	reads := func() int64 { return efs.Count(errorfs.OpRead) }
	r0 := reads()
	readD(t, s, d, int(s.Written()-d))
	if reads() != r0 {
		t.Fatal("a read above onDisk went to the file")
	}
	readD(t, s, d-5000, 5000)
	if reads() == r0 {
		t.Fatal("a read below onDisk did not go to the file")
	}
	for i := 0; i < 300; i++ {
		off := d - 1 - rng.Int63n(min(d, 300<<10))
		n := 1 + rng.Int63n(s.Written()-off)
		readD(t, s, off, int(n))
	}
	readD(t, s, 0, int(s.Written())) // longer than the read chunk
	p := make([]byte, 10)
	if n, err := s.ReadAt(p, s.Written()-4); n != 4 || err != io.EOF {
		t.Fatalf("read across the tail: %d, %v", n, err)
	}
}

// TestDirectBigAppend: an append larger than the ring is written out in
// pieces as it is copied.
func TestDirectBigAppend(t *testing.T) {
	m := vfs.NewMem()
	s, cfg := newDirectTest(t, m, ODirectOptions{BufferSize: 8192, StageSize: 8192}, 256<<10)
	appendD(t, s, 100)
	appendD(t, s, 50000)
	appendD(t, s, 3)
	readD(t, s, 0, int(s.Written()))
	flushD(t, s)
	checkDpattern(t, crashedBytes(t, m, cfg.Path, int(s.Written())), 0)
	if err := s.Append(make([]byte, 256<<10)); !errors.Is(err, ErrSegmentFull) {
		t.Fatalf("append past capacity: %v", err)
	}
}

// TestDirectSpillFailure: when a spill of a big append fails after an
// earlier one moved onDisk past the tail, Written stays, the ring is put
// back, and later appends and flushes are right.
func TestDirectSpillFailure(t *testing.T) {
	m := vfs.NewMem()
	efs := errorfs.Wrap(m)
	s, cfg := newDirectTest(t, efs, ODirectOptions{BufferSize: 8192, StageSize: 4096}, 256<<10)
	appendD(t, s, 5000)
	flushD(t, s)
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Nth: 3, Err: syscall.ENOSPC})
	err := s.Append(dpattern(5000, 40000))
	if !errors.Is(err, syscall.ENOSPC) || s.Written() != 5000 {
		t.Fatalf("append with a failing spill: %v, written %d", err, s.Written())
	}
	if s.onDisk.Load() != 4096 {
		t.Fatalf("onDisk %d after restore", s.onDisk.Load())
	}
	readD(t, s, 0, 5000)
	if d, err := s.Flush(); err != nil || d != 5000 {
		t.Fatalf("flush after failed append: %d, %v", d, err)
	}
	appendD(t, s, 40000)
	readD(t, s, 0, int(s.Written()))
	flushD(t, s)
	checkDpattern(t, crashedBytes(t, m, cfg.Path, int(s.Written())), 0)
}

// TestDirectZeroAhead: flushes keep ZeroAhead bytes past the tail written
// with zeros, and zeros never land on data, also while a big append spills.
func TestDirectZeroAhead(t *testing.T) {
	m := vfs.NewMem()
	s, cfg := newDirectTest(t, m, ODirectOptions{BufferSize: 8192, StageSize: 4096, ZeroAhead: 16 << 10}, 128<<10)
	appendD(t, s, 100)
	flushD(t, s)
	if st := s.Stats(); st.BytesWritten != 4096+16<<10 || s.io.hwm != 4096+16<<10 {
		t.Fatalf("first flush: %+v hwm %d", st, s.io.hwm)
	}
	appendD(t, s, 3000)
	flushD(t, s) // 16 KiB ahead still: no zeros
	if st := s.Stats(); st.BytesWritten != 2*4096+16<<10 {
		t.Fatalf("second flush: %+v", st)
	}
	rng := rand.New(rand.NewSource(3))
	for s.Written()+30000 < s.Capacity() {
		appendD(t, s, 1+rng.Intn(30000))
		if rng.Intn(2) == 0 {
			flushD(t, s)
		}
	}
	appendD(t, s, int(s.Capacity()-s.Written()))
	flushD(t, s)
	checkDpattern(t, crashedBytes(t, m, cfg.Path, int(s.Capacity())), 0)
	readD(t, s, 0, int(s.Capacity()))
}

// TestDirectReopenTail: Open reloads the partial block, and appends from
// there rewrite it in place.
func TestDirectReopenTail(t *testing.T) {
	m := vfs.NewMem()
	s, cfg := newDirectTest(t, m, ODirectOptions{}, 64<<10)
	appendD(t, s, 6000)
	flushD(t, s)
	s.Close()
	cfg.Written = 6000
	s2, err := odirectWith(t, ODirectOptions{}).Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	ds := s2.(*directSegment)
	if ds.onDisk.Load() != 4096 {
		t.Fatalf("onDisk %d after open", ds.onDisk.Load())
	}
	appendD(t, s2, 100)
	readD(t, s2, 0, 6100)
	flushD(t, s2)
	if st := s2.Stats(); st.WriteCalls != 1 || st.BytesWritten != 4096 {
		t.Fatalf("flush after open: %+v", st)
	}
	checkDpattern(t, crashedBytes(t, m, cfg.Path, 6100), 0)
	// A file shorter than the tail block's end (written by another
	// backend without preallocation) still opens.
	f, _ := m.Create("/short", vfs.OpenOptions{})
	f.WriteAt(dpattern(0, 5000), 0)
	f.Close()
	s3, err := odirectWith(t, ODirectOptions{}).Open(Config{FS: m, Path: "/short", Capacity: 64 << 10, Written: 5000})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	readD(t, s3, 0, 5000)
	if sz, _ := m.Stat("/short"); sz != 64<<10 {
		t.Fatalf("short file not grown: %d", sz)
	}
}

// noDirectFS refuses O_DIRECT as tmpfs did before Linux 6.6.
type noDirectFS struct{ *vfs.MemFS }

func (n noDirectFS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	if o.Direct {
		return nil, fmt.Errorf("open %s: %w: %w", name, vfs.ErrDirectUnsupported, syscall.EINVAL)
	}
	return n.MemFS.Create(name, o)
}

func (n noDirectFS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	if o.Direct {
		return nil, fmt.Errorf("open %s: %w: %w", name, vfs.ErrDirectUnsupported, syscall.EINVAL)
	}
	return n.MemFS.Open(name, o)
}

func TestDirectUnsupported(t *testing.T) {
	fsys := noDirectFS{vfs.NewMem()}
	b := odirectWith(t, ODirectOptions{})
	_, err := b.Create(Config{FS: fsys, Path: "/seg", Capacity: 64 << 10})
	if !errors.Is(err, vfs.ErrDirectUnsupported) || !strings.Contains(err.Error(), "refuses O_DIRECT") {
		t.Fatalf("create: %v", err)
	}
	f, _ := fsys.MemFS.Create("/seg", vfs.OpenOptions{})
	f.Close()
	if _, err := b.Open(Config{FS: fsys, Path: "/seg", Capacity: 64 << 10}); !errors.Is(err, vfs.ErrDirectUnsupported) {
		t.Fatalf("open: %v", err)
	}
}
