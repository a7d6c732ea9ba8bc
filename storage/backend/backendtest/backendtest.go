// Package backendtest is the conformance suite every backend.Backend must
// pass. Run it from a test with the backend and a file-system factory:
//
//	backendtest.Run(t, b, func(t *testing.T) vfs.FS { return vfs.NewMem() })
//
// It checks the Segment contract of package backend: append and read-back
// across sizes, ErrSegmentFull without a partial write, Flush returning the
// written offset, flushed bytes surviving a power loss (MemFS.CrashClone),
// reopening from a recovered offset, concurrent Append (serialised, as the
// CommitLog does) with Flush and ReadAt, a sticky flush error, ENOSPC
// without losing acknowledged bytes, and the Stats counters.
//
// Subtests that need a MemFS (crash, full disk) skip on other file
// systems. The whole suite skips when the backend cannot run here: its
// first Create fails with an error wrapping errors.ErrUnsupported or
// vfs.ErrDirectUnsupported.
//
// Every segment lives in its own t.TempDir() (made on the FS too), so the
// same factory may return vfs.Default. Randomised subtests print their
// seed on failure.
package backendtest

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/vfs"
)

// Run runs the conformance suite against b, each subtest on a fresh FS
// from newFS.
func Run(t *testing.T, b backend.Backend, newFS func(t *testing.T) vfs.FS) {
	t.Helper()
	probe := newEnv(t, b, newFS(t))
	if s, err := b.Create(probe.cfg("probe", 64<<10)); err != nil {
		if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, vfs.ErrDirectUnsupported) {
			t.Skipf("backend %s unavailable here: %v", b.Name(), err)
		}
		t.Fatalf("backend %s: probe create: %v", b.Name(), err)
	} else {
		_ = s.Close()
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(newEnv(t, b, newFS(t)))
		})
	}
}

var cases = []struct {
	name string
	fn   func(e *env)
}{
	{"Registry", testRegistry},
	{"AppendReadBack", testAppendReadBack},
	{"SegmentFull", testSegmentFull},
	{"FlushDurable", testFlushDurable},
	{"Stats", testStats},
	{"Reopen", testReopen},
	{"Concurrent", testConcurrent},
	{"CrashAfterFlush", testCrashAfterFlush},
	{"StickyFlushError", testStickyFlushError},
	{"ENOSPCOnWrite", testENOSPCOnWrite},
	{"DiskFull", testDiskFull},
	{"WriteOut", testWriteOut},
	{"WriteOutErrorSticky", testWriteOutErrorSticky},
}

// env is one subtest's backend, file system and directory.
type env struct {
	*testing.T
	b   backend.Backend
	fs  vfs.FS
	dir string
}

func newEnv(t *testing.T, b backend.Backend, fsys vfs.FS) *env {
	dir := t.TempDir()
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	return &env{T: t, b: b, fs: fsys, dir: dir}
}

func (e *env) cfg(name string, capacity int64) backend.Config {
	return backend.Config{FS: e.fs, Path: filepath.Join(e.dir, name), Capacity: capacity}
}

// create makes a segment and its name durable (as the CommitLog does),
// closing it at the end of the test.
func (e *env) create(cfg backend.Config) backend.Segment {
	e.Helper()
	s, err := e.b.Create(cfg)
	if err != nil {
		e.Fatalf("create %s: %v", cfg.Path, err)
	}
	if err := cfg.FS.SyncDir(filepath.Dir(cfg.Path)); err != nil {
		e.Fatal(err)
	}
	e.Cleanup(func() { _ = s.Close() })
	return s
}

func (e *env) open(cfg backend.Config) backend.Segment {
	e.Helper()
	s, err := e.b.Open(cfg)
	if err != nil {
		e.Fatalf("open %s at %d: %v", cfg.Path, cfg.Written, err)
	}
	e.Cleanup(func() { _ = s.Close() })
	return s
}

// patternByte is the byte the suite stores at offset off for seed: any
// range can be checked without keeping a copy.
func patternByte(off int64, seed byte) byte {
	return byte(off*131+off>>11) ^ seed
}

// pattern returns n pattern bytes starting at off.
func pattern(off int64, n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = patternByte(off+int64(i), seed)
	}
	return p
}

// checkPattern reports the first byte of got (read at off) that is not
// the pattern.
func checkPattern(got []byte, off int64, seed byte) error {
	for i, c := range got {
		if want := patternByte(off+int64(i), seed); c != want {
			return fmt.Errorf("byte at %d is %#x, want %#x", off+int64(i), c, want)
		}
	}
	return nil
}

// appendPattern appends n pattern bytes at the segment's tail.
func (e *env) appendPattern(s backend.Segment, n int, seed byte) {
	e.Helper()
	w := s.Written()
	if err := s.Append(pattern(w, n, seed)); err != nil {
		e.Fatalf("append %d at %d: %v", n, w, err)
	}
	if got := s.Written(); got != w+int64(n) {
		e.Fatalf("after appending %d at %d Written is %d", n, w, got)
	}
}

// readCheck reads [off, off+n) through the segment and checks it.
func (e *env) readCheck(s backend.Segment, off int64, n int, seed byte) {
	e.Helper()
	got := make([]byte, n)
	if k, err := s.ReadAt(got, off); err != nil || k != n {
		e.Fatalf("read %d at %d: %d, %v", n, off, k, err)
	}
	if err := checkPattern(got, off, seed); err != nil {
		e.Fatalf("read %d at %d: %v", n, off, err)
	}
}

// fileCheck reads [0, n) of the named file straight from fsys.
func fileCheck(fsys vfs.FS, name string, n int64, seed byte) error {
	f, err := fsys.Open(name, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	got := make([]byte, n)
	if k, err := f.ReadAt(got, 0); int64(k) != n {
		return fmt.Errorf("file has %d of %d flushed bytes: %v", k, n, err)
	}
	if !bytes.Equal(got, pattern(0, int(n), seed)) {
		return checkPattern(got, 0, seed)
	}
	return nil
}
