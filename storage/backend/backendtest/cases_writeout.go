package backendtest

import (
	"errors"
	"math/rand"
	"path/filepath"
	"syscall"

	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// testWriteOut: after WriteOut every appended byte is in the file as
// another reader of the file system sees it (the kernel's copy: what a
// process crash leaves), before any Flush; WriteOut is idempotent and a
// Flush after it still reports everything durable.
func testWriteOut(e *env) {
	cfg := e.cfg("seg", 256<<10)
	s := e.create(cfg)
	if h, err := s.WriteOut(); err != nil || h != 0 {
		e.Fatalf("write out of an empty segment: %d, %v", h, err)
	}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 40; i++ {
		for j := rng.Intn(4); j >= 0; j-- {
			e.appendPattern(s, 1+rng.Intn(3000), 4)
		}
		h, err := s.WriteOut()
		if err != nil || h != s.Written() {
			e.Fatalf("write out %d: handed %d, written %d, %v", i, h, s.Written(), err)
		}
		if err := fileCheck(e.fs, cfg.Path, h, 4); err != nil {
			e.Fatalf("write out %d: the file does not hold the %d handed bytes: %v", i, h, err)
		}
		if h2, err := s.WriteOut(); err != nil || h2 != h {
			e.Fatalf("idle write out %d: %d, %v (was %d)", i, h2, err, h)
		}
		if i%5 == 4 {
			if d, err := s.Flush(); err != nil || d != h {
				e.Fatalf("flush after write out %d: durable %d, handed %d, %v", i, d, h, err)
			}
		}
	}
	e.readCheck(s, 0, int(s.Written()), 4)
}

// testWriteOutErrorSticky: a write that fails in WriteOut fails every
// later WriteOut and Flush (mmap writes nothing in WriteOut: skipped).
func testWriteOutErrorSticky(e *env) {
	if e.b.Name() == "mmap" {
		e.Skip("mmap's WriteOut writes nothing")
	}
	efs := errorfs.Wrap(e.fs)
	e.fs = efs
	cfg := e.cfg("seg", 256<<10)
	s := e.create(cfg)
	e.appendPattern(s, 9000, 2)
	good, err := s.WriteOut()
	if err != nil {
		e.Fatal(err)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Path: filepath.Base(cfg.Path)})
	// Small enough that no backend writes in Append (everything before it
	// is written out, so a buffer restart has nothing to write).
	e.appendPattern(s, 100, 2)
	h, err := s.WriteOut()
	if !errors.Is(err, syscall.EIO) {
		e.Fatalf("write out with a failing write: %d, %v", h, err)
	}
	if h > good {
		e.Fatalf("failed write out reports %d handed, past %d", h, good)
	}
	efs.ClearRules()
	if _, err := s.WriteOut(); !errors.Is(err, syscall.EIO) {
		e.Fatalf("write out after a failed one: %v", err)
	}
	if _, err := s.Flush(); !errors.Is(err, syscall.EIO) {
		e.Fatalf("flush after a failed write out: %v", err)
	}
}
