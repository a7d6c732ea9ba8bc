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

// TestStageWriteBehindNoLostWakeup: appends that keep a staging ring
// nearly full make the appender wait on the write-behind over and over,
// with records larger than a round's share; none of the waits may miss
// the round that frees room (an event bound, not a time one).
func TestStageWriteBehindNoLostWakeup(t *testing.T) {
	mk := map[string]func() (Backend, error){
		"pwrite":  func() (Backend, error) { return NewPwrite(PwriteOptions{BufferSize: 4096}) },
		"odirect": func() (Backend, error) { return NewODirect(ODirectOptions{StagedRingSize: 32 << 10}) },
		"uring": func() (Backend, error) {
			return NewUring(UringOptions{ODirectOptions: ODirectOptions{StagedRingSize: 32 << 10}})
		},
	}
	for name, newB := range mk {
		t.Run(name, func(t *testing.T) {
			m := vfs.NewMem()
			dir := t.TempDir()
			if err := m.MkdirAll(dir); err != nil {
				t.Fatal(err)
			}
			b, err := newB()
			if err != nil {
				t.Fatal(err)
			}
			const capacity = 64 << 20
			cfg := Config{FS: m, Path: filepath.Join(dir, "seg"), Capacity: capacity, StagePath: filepath.Join(dir, "seg.stage")}
			s, err := b.Create(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			done := make(chan error, 1)
			go func() {
				var err error
				for n := 0; err == nil && s.Written()+12000 <= capacity && n < 4000; n++ {
					err = s.Append(dpattern(s.Written(), 12000))
				}
				done <- err
			}()
			waitFor(t, "the appends (a wait that missed its round hangs them)", func() bool { return len(done) > 0 })
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			readD(t, s, s.Written()-100000, 100000)
		})
	}
}

// TestPwriteStageReservesAhead: a staging segment's write-behind keeps
// the file allocated about a ring's worth past the tail, so the appender (which
// holds the CommitLog's lock) does not call fallocate, whose wait for the
// inode lock a write-behind write holds stalled every writer; the
// appender's own reservation reaches only a buffer past its append.
func TestPwriteStageReservesAhead(t *testing.T) {
	m := vfs.NewMem()
	dir := t.TempDir()
	if err := m.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	cfg := Config{FS: m, Path: filepath.Join(dir, "seg"), Capacity: 1 << 20, StagePath: filepath.Join(dir, "seg.stage")}
	b, err := NewPwrite(PwriteOptions{BufferSize: 4096}) // a 32 KiB ring
	if err != nil {
		t.Fatal(err)
	}
	seg, err := b.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := seg.(*pwriteSegment)
	t.Cleanup(func() { s.Close() })
	for s.Written() < 200<<10 {
		appendD(t, s, 1000)
	}
	w := s.Written()
	waitFor(t, "the write-behind to write the tail's buffers", func() bool { return w-s.onFile.Load() < s.share() })
	// The last round saw a tail past onFile, and onFile is within a
	// share of w: so it reserved past w by a ring less a share at least.
	if r := s.reserved.Load(); r <= w+s.ringSize-s.share() {
		t.Fatalf("reserved up to %d, tail %d: not a ring (%d) less a share ahead", r, w, s.ringSize)
	}
	if r := s.reserved.Load(); r > cfg.Capacity {
		t.Fatalf("reserved up to %d, past the capacity %d", r, cfg.Capacity)
	}
	readD(t, s, 0, int(w))
}
