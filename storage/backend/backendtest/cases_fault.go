package backendtest

import (
	"errors"
	"math/rand"
	"path/filepath"
	"syscall"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

func (e *env) memFS() *vfs.MemFS {
	e.Helper()
	m, ok := e.fs.(*vfs.MemFS)
	if !ok {
		e.Skipf("needs a *vfs.MemFS, have %T", e.fs)
	}
	return m
}

// testCrashAfterFlush: after a power loss, every byte a Flush reported
// durable is in the file, and the segment reopens from there.
func testCrashAfterFlush(e *env) {
	mem := e.memFS()
	const capacity = 256 << 10
	for seed := int64(0); seed < 8; seed++ {
		rng := rand.New(rand.NewSource(seed))
		cfg := e.cfg("seg"+string(rune('a'+seed)), capacity)
		s := e.create(cfg)
		var durable int64
		for i := 0; i < 40; i++ {
			n := 1 + rng.Intn(9000)
			if s.Written()+int64(n) > capacity {
				break
			}
			e.appendPattern(s, n, byte(seed))
			if rng.Intn(3) == 0 {
				d, err := s.Flush()
				if err != nil || d != s.Written() {
					e.Fatalf("seed %d: flush %d of %d: %v", seed, d, s.Written(), err)
				}
				durable = d
			}
		}
		// Unflushed appends after the last flush are at risk, and only they.
		if s.Written()+5000 <= capacity {
			e.appendPattern(s, 5000, byte(seed))
		}
		var crashRng *rand.Rand // seed 0: the harshest crash
		if seed > 0 {
			crashRng = rand.New(rand.NewSource(seed))
		}
		crashed := mem.CrashClone(crashRng)
		if err := fileCheck(crashed, cfg.Path, durable, byte(seed)); err != nil {
			e.Fatalf("seed %d: after crash, flushed bytes [0, %d): %v", seed, durable, err)
		}
		// Recovery found durable bytes; the segment carries on from there.
		cfg.FS, cfg.Written = crashed, durable
		s2 := e.open(cfg)
		e.readCheck(s2, 0, int(durable), byte(seed))
		n := int(min(10000, capacity-durable))
		e.appendPattern(s2, n, byte(seed))
		if d, err := s2.Flush(); err != nil || d != durable+int64(n) {
			e.Fatalf("seed %d: flush after recovery: %d, %v", seed, d, err)
		}
		if err := fileCheck(crashed.CrashClone(nil), cfg.Path, durable+int64(n), byte(seed)); err != nil {
			e.Fatalf("seed %d: second crash: %v", seed, err)
		}
	}
}

// testStickyFlushError: once a sync fails, every later Flush fails, even
// when the disk would now succeed.
func testStickyFlushError(e *env) {
	efs := errorfs.Wrap(e.fs)
	e.fs = efs
	cfg := e.cfg("seg", 64<<10)
	s := e.create(cfg)
	e.appendPattern(s, 5000, 1)
	good, err := s.Flush()
	if err != nil {
		e.Fatal(err)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpSync, Path: filepath.Base(cfg.Path)})
	e.appendPattern(s, 5000, 1)
	d, err := s.Flush()
	if !errors.Is(err, syscall.EIO) {
		e.Fatalf("flush with a failing sync: %d, %v", d, err)
	}
	if d > good {
		e.Fatalf("failed flush reports durable %d past %d", d, good)
	}
	if efs.Injected() != 1 {
		e.Fatalf("%d errors injected", efs.Injected())
	}
	for i := 0; i < 3; i++ {
		if s.Written()+1000 <= s.Capacity() {
			// Append may take the bytes or refuse them; either way the
			// Flush below must keep failing.
			_ = s.Append(pattern(s.Written(), 1000, 1))
		}
		if _, err := s.Flush(); !errors.Is(err, syscall.EIO) {
			e.Fatalf("flush %d after a failed sync: %v", i, err)
		}
	}
}

// testENOSPCOnWrite: from some point every write (and allocation) fails
// with ENOSPC. Appends fail with it and leave Written alone; nothing
// flushed before is lost.
func testENOSPCOnWrite(e *env) {
	efs := errorfs.Wrap(e.fs)
	mem, _ := e.fs.(*vfs.MemFS)
	e.fs = efs
	cfg := e.cfg("seg", 256<<10)
	s := e.create(cfg)
	e.appendPattern(s, 10000, 2)
	acked, err := s.Flush()
	if err != nil {
		e.Fatal(err)
	}
	base := filepath.Base(cfg.Path)
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpAllocate, errorfs.OpTruncate} {
		efs.AddRule(errorfs.Rule{Op: op, Path: base, Nth: 2, Sticky: true, Err: syscall.ENOSPC})
	}
	failures := 0
	for i := 0; i < 20; i++ {
		w := s.Written()
		err := s.Append(pattern(w, 3001, 2))
		if err == nil {
			continue
		}
		failures++
		if !errors.Is(err, syscall.ENOSPC) {
			e.Fatalf("append %d: %v, want ENOSPC", i, err)
		}
		if s.Written() != w {
			e.Fatalf("failed append moved Written from %d to %d", w, s.Written())
		}
	}
	// A fault injected while appending must reach an append, or the
	// Flush after them when the write that failed was a write-behind's
	// that ended after the last append. (Counting writes is not enough:
	// the first one after the rules succeeds, and a buffering backend may
	// issue only that one before its Flush.)
	unseen := efs.Injected() > 0 && failures == 0
	d, err := s.Flush()
	if unseen && !errors.Is(err, syscall.ENOSPC) {
		e.Fatalf("writes failed underneath, neither the appends nor the flush did (flush: %v)", err)
	}
	if err == nil {
		if d != s.Written() {
			e.Fatalf("flush after ENOSPC: %d of %d", d, s.Written())
		}
		acked = d
	}
	e.readCheck(s, 0, int(acked), 2)
	if mem != nil {
		if err := fileCheck(mem.CrashClone(nil), cfg.Path, acked, 2); err != nil {
			e.Fatalf("after crash: %v", err)
		}
	}
}

// testDiskFull: on a full MemFS a new segment fails to be made or fails
// to grow, with ENOSPC, before it is full; an older segment's flushed
// bytes stay.
func testDiskFull(e *env) {
	mem := e.memFS()
	old := e.cfg("old", 64<<10)
	s1 := e.create(old)
	e.appendPattern(s1, 10000, 4)
	acked, err := s1.Flush()
	if err != nil {
		e.Fatal(err)
	}
	mem.SetCapacity(mem.Used() + 5000)
	cfg := e.cfg("new", 64<<10)
	s2, err := e.b.Create(cfg)
	if err != nil {
		if !errors.Is(err, syscall.ENOSPC) {
			e.Fatalf("create on a full disk: %v, want ENOSPC", err)
		}
	} else {
		e.Cleanup(func() { _ = s2.Close() })
		hit := false
		for s2.Written()+4000 <= s2.Capacity() {
			w := s2.Written()
			if err := s2.Append(pattern(w, 4000, 4)); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					e.Fatalf("append on a full disk: %v, want ENOSPC", err)
				}
				if s2.Written() != w {
					e.Fatalf("failed append moved Written from %d to %d", w, s2.Written())
				}
				hit = true
				break
			}
		}
		if !hit {
			e.Fatalf("filled a %d-byte segment with 5000 bytes free", s2.Capacity())
		}
		if d, err := s2.Flush(); err == nil && d != s2.Written() {
			e.Fatalf("flush after ENOSPC: %d of %d", d, s2.Written())
		}
	}
	e.readCheck(s1, 0, int(acked), 4)
	if d, err := s1.Flush(); err != nil || d != acked {
		e.Fatalf("old segment flush on a full disk: %d, %v", d, err)
	}
	if err := fileCheck(mem.CrashClone(nil), old.Path, acked, 4); err != nil {
		e.Fatalf("old segment after crash: %v", err)
	}
}
