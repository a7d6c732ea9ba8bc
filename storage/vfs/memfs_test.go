package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand"
	"sync"
	"syscall"
	"testing"
)

func mustCreate(t *testing.T, m FS, name string, opts OpenOptions) File {
	t.Helper()
	f, err := m.Create(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustWrite(t *testing.T, f File, p []byte, off int64) {
	t.Helper()
	if n, err := f.WriteAt(p, off); err != nil || n != len(p) {
		t.Fatalf("write %d at %d: %d %v", len(p), off, n, err)
	}
}

func readAll(t *testing.T, m FS, name string) []byte {
	t.Helper()
	f, err := m.Open(name, OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sz, _ := f.Size()
	b := make([]byte, sz)
	if _, err := f.ReadAt(b, 0); err != nil && !(err == io.EOF && sz == 0) {
		t.Fatal(err)
	}
	return b
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7+i/4096)
	}
	return b
}

func TestMemFSNamespace(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d/e"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create("/nope/f", OpenOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("create in missing dir: %v", err)
	}
	f := mustCreate(t, m, "/d/e/f", OpenOptions{})
	mustWrite(t, f, []byte("abc"), 2)
	if got := readAll(t, m, "d/e/f"); !bytes.Equal(got, []byte("\x00\x00abc")) {
		t.Fatalf("read %q", got)
	}
	mustCreate(t, m, "/d/e/a", OpenOptions{})
	if names, err := m.List("/d/e"); err != nil || len(names) != 2 || names[0] != "a" || names[1] != "f" {
		t.Fatalf("list %v %v", names, err)
	}
	if err := m.Rename("/d/e/f", "/d/e/a"); err != nil {
		t.Fatal(err)
	}
	if sz, err := m.Stat("/d/e/a"); err != nil || sz != 5 {
		t.Fatalf("stat %d %v", sz, err)
	}
	if _, err := m.Stat("/d/e/f"); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("stat renamed: %v", err)
	}
	if err := m.Remove("/d/e"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("remove non-empty dir: %v", err)
	}
	if err := m.Remove("/d/e/a"); err != nil {
		t.Fatal(err)
	}
	// The open handle outlives the name, as on POSIX.
	mustWrite(t, f, []byte("x"), 0)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
	ro, err := m.Open("/d/e/a", OpenOptions{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open removed: %v %v", ro, err)
	}
	g := mustCreate(t, m, "/d/g", OpenOptions{})
	g.Close()
	r, _ := m.Open("/d/g", OpenOptions{ReadOnly: true})
	if _, err := r.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("write to read-only: %v", err)
	}
}

func TestMemFSSyncedSurvivesEveryCrash(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f := mustCreate(t, m, "/d/f", OpenOptions{})
	want := pattern(10*4096+123, 1)
	mustWrite(t, f, want, 0)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	for seed := int64(0); seed < 50; seed++ {
		c := m.CrashClone(rand.New(rand.NewSource(seed)))
		if got := readAll(t, c, "/d/f"); !bytes.Equal(got, want) {
			t.Fatalf("seed %d: synced bytes changed", seed)
		}
	}
	if got := readAll(t, m.CrashClone(nil), "/d/f"); !bytes.Equal(got, want) {
		t.Fatal("nil crash: synced bytes changed")
	}
}

// TestMemFSUnsyncedBlocks: every unsynced block is old or new, at most one
// is torn, and over many seeds each outcome happens.
func TestMemFSUnsyncedBlocks(t *testing.T) {
	m := NewMem()
	f := mustCreate(t, m, "/f", OpenOptions{})
	old := pattern(8*4096, 1)
	mustWrite(t, f, old, 0)
	f.Sync()
	m.SyncDir("/")
	neu := pattern(8*4096, 100)
	mustWrite(t, f, neu, 0)

	if got := readAll(t, m.CrashClone(nil), "/f"); !bytes.Equal(got, old) {
		t.Fatal("nil crash kept unsynced bytes")
	}
	var kept, dropped, tornSeen int
	for seed := int64(0); seed < 100; seed++ {
		got := readAll(t, m.CrashClone(rand.New(rand.NewSource(seed))), "/f")
		if len(got) != len(old) {
			t.Fatalf("seed %d: size %d", seed, len(got))
		}
		torn := 0
		for b := 0; b < 8; b++ {
			g, o, n := got[b*4096:(b+1)*4096], old[b*4096:(b+1)*4096], neu[b*4096:(b+1)*4096]
			switch {
			case bytes.Equal(g, o):
				dropped++
			case bytes.Equal(g, n):
				kept++
			default:
				k := 0
				for k < len(g) && g[k] == n[k] {
					k++
				}
				if !bytes.Equal(g[k:], o[k:]) {
					t.Fatalf("seed %d block %d: neither old, new nor a torn prefix", seed, b)
				}
				torn++
			}
		}
		if torn > 1 {
			t.Fatalf("seed %d: %d torn blocks", seed, torn)
		}
		tornSeen += torn
	}
	if kept == 0 || dropped == 0 || tornSeen == 0 {
		t.Fatalf("outcomes not all seen: kept %d dropped %d torn %d", kept, dropped, tornSeen)
	}
	a := readAll(t, m.CrashClone(rand.New(rand.NewSource(7))), "/f")
	b := readAll(t, m.CrashClone(rand.New(rand.NewSource(7))), "/f")
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different crash")
	}
	// After Sync nothing is at risk.
	f.Sync()
	if got := readAll(t, m.CrashClone(rand.New(rand.NewSource(1))), "/f"); !bytes.Equal(got, neu) {
		t.Fatal("synced overwrite lost")
	}
}

func TestMemFSAppendTailCrash(t *testing.T) {
	m := NewMem()
	f := mustCreate(t, m, "/f", OpenOptions{})
	m.SyncDir("/")
	data := pattern(5*4096+100, 3)
	mustWrite(t, f, data[:4096+10], 0)
	f.Sync()
	mustWrite(t, f, data[4096+10:], 4096+10)
	for seed := int64(0); seed < 50; seed++ {
		got := readAll(t, m.CrashClone(rand.New(rand.NewSource(seed))), "/f")
		if len(got) < 4096+10 || !bytes.Equal(got[:4096+10], data[:4096+10]) {
			t.Fatalf("seed %d: synced prefix damaged (len %d)", seed, len(got))
		}
		for i := 4096 + 10; i < len(got); i++ {
			if got[i] != data[i] && got[i] != 0 {
				t.Fatalf("seed %d: byte %d is neither written nor zero", seed, i)
			}
		}
	}
	if got := readAll(t, m.CrashClone(nil), "/f"); len(got) != 4096+10 {
		t.Fatalf("nil crash: size %d", len(got))
	}
}

func TestMemFSNamesNeedSyncDir(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f := mustCreate(t, m, "/d/a", OpenOptions{})
	mustWrite(t, f, []byte("A"), 0)
	f.Sync()
	if _, err := m.CrashClone(nil).Stat("/d/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unsynced create survived: %v", err)
	}
	if _, err := m.CrashClone(nil).Stat("/d"); err != nil {
		t.Fatalf("MkdirAll dir lost: %v", err)
	}
	m.SyncDir("/d")
	if got := readAll(t, m.CrashClone(nil), "/d/a"); string(got) != "A" {
		t.Fatalf("synced create: %q", got)
	}
	if err := m.Rename("/d/a", "/d/b"); err != nil {
		t.Fatal(err)
	}
	c := m.CrashClone(nil)
	if got := readAll(t, c, "/d/a"); string(got) != "A" {
		t.Fatalf("unsynced rename not reverted: %q", got)
	}
	if _, err := c.Stat("/d/b"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unsynced rename target exists: %v", err)
	}
	m.SyncDir("/d")
	m.Remove("/d/b")
	if got := readAll(t, m.CrashClone(nil), "/d/b"); string(got) != "A" {
		t.Fatalf("unsynced remove not reverted: %q", got)
	}
	m.SyncDir("/d")
	if names, _ := m.CrashClone(nil).List("/d"); len(names) != 0 {
		t.Fatalf("synced remove reverted: %v", names)
	}
}

func TestMemFSTruncateCrash(t *testing.T) {
	m := NewMem()
	f := mustCreate(t, m, "/f", OpenOptions{})
	m.SyncDir("/")
	data := pattern(3*4096, 9)
	mustWrite(t, f, data, 0)
	f.Sync()
	f.Truncate(100)
	f.Truncate(3 * 4096) // regrown: zeros now
	if got := readAll(t, m.CrashClone(nil), "/f"); !bytes.Equal(got, data) {
		t.Fatal("unsynced truncate applied by a nil crash")
	}
	f.Sync()
	got := readAll(t, m.CrashClone(nil), "/f")
	if !bytes.Equal(got[:100], data[:100]) || !bytes.Equal(got[100:], make([]byte, 3*4096-100)) {
		t.Fatal("synced truncate+regrow: stale bytes came back")
	}
}

func TestMemFSDirectAlignment(t *testing.T) {
	m := NewMem()
	f := mustCreate(t, m, "/f", OpenOptions{Direct: true})
	buf := alignedBuf(2 * DirectAlignment)
	mustWrite(t, f, buf[:DirectAlignment], DirectAlignment)
	for _, c := range []struct {
		p   []byte
		off int64
	}{
		{buf[:100], 0},                  // length
		{buf[:DirectAlignment], 512},    // offset
		{buf[1 : 1+DirectAlignment], 0}, // address
	} {
		if _, err := f.WriteAt(c.p, c.off); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("unaligned write (len %d off %d): %v", len(c.p), c.off, err)
		}
		if _, err := f.ReadAt(c.p, c.off); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("unaligned read (len %d off %d): %v", len(c.p), c.off, err)
		}
	}
	if f.Fd() != InvalidFd {
		t.Fatal("MemFS file has an fd")
	}
}

func TestMemFSMapping(t *testing.T) {
	m := NewMem()
	f := mustCreate(t, m, "/f", OpenOptions{})
	m.SyncDir("/")
	if err := f.Allocate(0, 4*4096); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	mp := f.(Mapper)
	if _, err := mp.Map(5 * 4096); err == nil {
		t.Fatal("map past the end")
	}
	b, err := mp.Map(4 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	data := pattern(4*4096, 5)
	copy(b, data)
	if got := readAll(t, m, "/f"); !bytes.Equal(got, data) {
		t.Fatal("mapping does not alias the file")
	}
	if got := readAll(t, m.CrashClone(nil), "/f"); !bytes.Equal(got, make([]byte, 4*4096)) {
		t.Fatal("unsynced mapped writes survived a nil crash")
	}
	if err := f.(MapSyncer).SyncMapped(b, 0, 4096+1); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, m.CrashClone(nil), "/f")
	if !bytes.Equal(got[:4097], data[:4097]) || !bytes.Equal(got[4097:], make([]byte, len(got)-4097)) {
		t.Fatal("SyncMapped synced the wrong range")
	}
	if err := f.Truncate(100); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("truncating a live mapping: %v", err)
	}
	if err := mp.Unmap(b); err != nil {
		t.Fatal(err)
	}
	// Unmapping keeps the mapped writes dirty.
	if got := readAll(t, m.CrashClone(nil), "/f"); !bytes.Equal(got[4097:], make([]byte, len(got)-4097)) {
		t.Fatal("unmap made writes durable")
	}
	f.Sync()
	if got := readAll(t, m.CrashClone(nil), "/f"); !bytes.Equal(got, data) {
		t.Fatal("Sync after unmap lost mapped writes")
	}
}

func TestMemFSCapacity(t *testing.T) {
	m := NewMem()
	f := mustCreate(t, m, "/f", OpenOptions{})
	mustWrite(t, f, make([]byte, 8192), 0)
	m.SetCapacity(10000)
	total, free, err := m.DiskUsage("/")
	if err != nil || total != 10000 || free != 10000-8192 {
		t.Fatalf("disk usage %d %d %v", total, free, err)
	}
	mustWrite(t, f, make([]byte, 100), 8000) // overwrite: no new space
	if _, err := f.WriteAt(make([]byte, 2000), 9000); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past capacity: %v", err)
	}
	if sz, _ := f.Size(); sz != 8192 {
		t.Fatalf("failed write changed size to %d", sz)
	}
	if err := f.Allocate(0, 20000); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("allocate past capacity: %v", err)
	}
	if err := f.Truncate(1 << 20); err != nil { // sparse: no space
		t.Fatal(err)
	}
	if err := m.Remove("/f"); err != nil {
		t.Fatal(err)
	}
	if m.Used() != 0 {
		t.Fatalf("used %d after remove", m.Used())
	}
}

func TestMemFSLock(t *testing.T) {
	m := NewMem()
	l, err := m.Lock("/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lock("/LOCK"); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("second lock: %v", err)
	}
	l.Close()
	l, err = m.Lock("/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

func TestMemFSConcurrent(t *testing.T) {
	m := NewMem()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "/f" + string(rune('a'+g))
			f, err := m.Create(name, OpenOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			p := pattern(1000, byte(g))
			for i := 0; i < 50; i++ {
				f.WriteAt(p, int64(i*1000))
				if i%10 == 0 {
					f.Sync()
					m.SyncDir("/")
				}
				q := make([]byte, 1000)
				f.ReadAt(q, int64(i*1000))
			}
		}()
	}
	for i := 0; i < 20; i++ {
		m.CrashClone(rand.New(rand.NewSource(int64(i))))
	}
	wg.Wait()
}
