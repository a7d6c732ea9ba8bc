package backend

import (
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestPwriteStageWritesBehind: a staging pwrite appender makes no write
// call while its ring has room; when the ring is full with the
// write-behind's write hanging it waits (no append returns past the full
// ring, no second write begins); once the write returns it goes on, the
// write-behind writing a buffer at a time, and every byte reads back and
// replays.
func TestPwriteStageWritesBehind(t *testing.T) {
	h := &holdWriteFS{MemFS: vfs.NewMem(), release: make(chan struct{})}
	dir := t.TempDir()
	if err := h.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	cfg := Config{FS: h, Path: filepath.Join(dir, "seg"), Capacity: 256 << 10, StagePath: filepath.Join(dir, "seg.stage")}
	b, err := NewPwrite(PwriteOptions{BufferSize: 4096}) // a 32 KiB ring
	if err != nil {
		t.Fatal(err)
	}
	seg, err := b.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := seg.(*pwriteSegment)
	released := false
	t.Cleanup(func() {
		if !released {
			close(h.release)
		}
		s.Close()
	})
	h.pass.Store(true)
	appendD(t, s, 1000) // a write-through: nothing was waiting for a flush
	h.pass.Store(false)
	appended := make(chan error, 1)
	go func() { // two rings' worth
		var err error
		for s.Written() < 64<<10 && err == nil {
			err = s.Append(dpattern(s.Written(), 1000))
		}
		appended <- err
	}()
	waitFor(t, "the write-behind's write", func() bool { return h.began.Load() >= 1 })
	waitFor(t, "the ring to fill", func() bool { return s.Written() > (32<<10)-1000 })
	select {
	case err := <-appended:
		t.Fatalf("the appends went past a full ring while the write hung: %v, written %d", err, s.Written())
	default:
	}
	if n := h.began.Load(); n != 1 {
		t.Fatalf("%d writes began while the write-behind's hung: the appender wrote itself", n)
	}
	close(h.release)
	released = true
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if m := h.most.Load(); m > 4096 {
		t.Fatalf("a %d-byte write: more than a buffer", m)
	}
	readD(t, s, 0, int(s.Written()))
	checkDpattern(t, replayedBytes(t, h.MemFS, cfg, int(s.Written())), 0)
}
