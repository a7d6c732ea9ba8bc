package backend

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// newStagedDirect makes a staging segment of the named direct backend
// ("odirect" or "uring") on fsys, its stage beside it.
func newStagedDirect(t *testing.T, name string, fsys vfs.FS, opts ODirectOptions, capacity int64) (*directSegment, Config) {
	t.Helper()
	dir := t.TempDir()
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	cfg := Config{FS: fsys, Path: filepath.Join(dir, "seg"), Capacity: capacity, StagePath: filepath.Join(dir, "seg.stage")}
	b := odirectWith(t, opts)
	if name == "uring" {
		b = uringWith(t, UringOptions{ODirectOptions: opts})
	}
	s, err := b.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*directSegment), cfg
}

// waitFor polls cond for up to waitLimit (an event, not a time bound).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitLimit, what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// waitLimit bounds waitFor: long enough for any busy machine.
var waitLimit = time.Minute

// replayedBytes replays the stage into the segment file of a process
// crash's image of m and returns the file's first n bytes.
func replayedBytes(t *testing.T, m *vfs.MemFS, cfg Config, n int) []byte {
	t.Helper()
	img := m.ProcessCrashClone()
	if _, err := ReplayStage(img, cfg.StagePath, cfg.Path, cfg.Capacity); err != nil {
		t.Fatal(err)
	}
	f, err := img.Open(cfg.Path, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, n)
	if k, err := f.ReadAt(got, 0); k != n {
		t.Fatalf("replayed file: %d of %d bytes, %v", k, n, err)
	}
	return got
}

// TestDirectStageWriteBehind: once half the ring waits, the write-behind
// writes its full blocks with no Flush and no spill by the appender, and
// the appender then reuses the room, the stage's header following it, so
// a process crash's replay gives back every byte.
func TestDirectStageWriteBehind(t *testing.T) {
	for _, name := range []string{"odirect", "uring"} {
		t.Run(name, func(t *testing.T) {
			m := vfs.NewMem()
			s, cfg := newStagedDirect(t, name, m, ODirectOptions{StagedRingSize: 16 << 10, StageSize: 4096}, 256<<10)
			appendD(t, s, 5000)
			appendD(t, s, 5000) // 10000 of a 16 KiB ring: an eighth is 2 KiB
			waitFor(t, "the write-behind", func() bool { return s.onDisk.Load() == 8192 })
			if st := s.Stats(); st.Fsyncs != 0 || st.FlushBatches != 0 {
				t.Fatalf("the write-behind synced: %+v", st)
			}
			for s.Written()+3000 <= 200<<10 { // wraps the ring many times
				appendD(t, s, 3000)
			}
			readD(t, s, 0, int(s.Written()))
			waitFor(t, "the write-behind to settle", func() bool { return !s.wb.pending.Load() })
			if got := s.Stats().WriteCalls; got == 0 {
				t.Fatal("nothing written")
			}
			checkDpattern(t, replayedBytes(t, m, cfg, int(s.Written())), 0)
		})
	}
}

// TestDirectStageSpillFailure: a big append whose spill fails leaves
// Written, the ring and the stage's header as before it, so a process
// crash's replay still gives back every acknowledged byte and later
// appends go on from there.
func TestDirectStageSpillFailure(t *testing.T) {
	for _, name := range []string{"odirect", "uring"} {
		t.Run(name, func(t *testing.T) {
			m := vfs.NewMem()
			efs := errorfs.Wrap(m)
			s, cfg := newStagedDirect(t, name, efs, ODirectOptions{StagedRingSize: 8192, StageSize: 4096}, 256<<10)
			appendD(t, s, 5000)
			flushD(t, s)
			waitFor(t, "the write-behind", func() bool { return !s.wb.pending.Load() })
			efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Path: "seg", Nth: 3, Err: syscall.ENOSPC})
			err := s.Append(dpattern(5000, 40000))
			if !errors.Is(err, syscall.ENOSPC) || s.Written() != 5000 {
				t.Fatalf("append with a failing spill: %v, written %d", err, s.Written())
			}
			if s.onDisk.Load() != 4096 || s.st.hdr.base != 4096 || s.st.hdr.written != 5000 {
				t.Fatalf("after restore: onDisk %d, stage [%d, %d)", s.onDisk.Load(), s.st.hdr.base, s.st.hdr.written)
			}
			readD(t, s, 0, 5000)
			checkDpattern(t, replayedBytes(t, m, cfg, 5000), 0)
			appendD(t, s, 40000)
			readD(t, s, 0, int(s.Written()))
			checkDpattern(t, replayedBytes(t, m, cfg, int(s.Written())), 0)
			flushD(t, s)
			checkDpattern(t, crashedBytes(t, m, cfg.Path, int(s.Written())), 0)
		})
	}
}

// TestDirectSeal: Seal writes out the tail, drops the ring (and removes
// the stage); reads come from the file, appends are refused, a Flush
// syncs what was written out.
func TestDirectSeal(t *testing.T) {
	for _, name := range []string{"odirect", "uring"} {
		for _, staged := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "/staged"}[staged], func(t *testing.T) {
				m := vfs.NewMem()
				var s *directSegment
				var cfg Config
				if staged {
					s, cfg = newStagedDirect(t, name, m, ODirectOptions{StagedRingSize: 16 << 10, StageSize: 4096}, 64<<10)
				} else if name == "odirect" {
					s, cfg = newDirectTest(t, m, ODirectOptions{BufferSize: 16 << 10, StageSize: 4096}, 64<<10)
				} else {
					s, cfg = newUringTest(t, m, UringOptions{ODirectOptions: ODirectOptions{BufferSize: 16 << 10, StageSize: 4096}}, 64<<10)
				}
				appendD(t, s, 20000)
				if err := s.Seal(); err != nil {
					t.Fatal(err)
				}
				if s.ring.buf != nil || s.io.bounce != nil || s.st != nil {
					t.Fatal("a sealed segment keeps its buffers")
				}
				if staged {
					if _, err := m.Stat(cfg.StagePath); err == nil {
						t.Fatal("Seal left the stage file")
					}
				}
				readD(t, s, 0, 20000)
				if err := s.Append([]byte{1}); !errors.Is(err, errSegmentSealed) {
					t.Fatalf("append after Seal: %v", err)
				}
				flushD(t, s)
				checkDpattern(t, crashedBytes(t, m, cfg.Path, 20000), 0)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// holdSyncFS holds every Sync of files not named *.stage until release
// closes; the stage files (and the boot ID) are its MemFS's.
type holdSyncFS struct {
	*vfs.MemFS
	release chan struct{}
	held    chan struct{} // a Sync is waiting (buffered)
}

type holdSyncFile struct {
	vfs.File
	fs *holdSyncFS
}

func (h *holdSyncFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || filepath.Ext(name) == ".stage" {
		return f, err
	}
	return &holdSyncFile{File: f, fs: h}, nil
}

func (h *holdSyncFS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := h.MemFS.Create(name, o)
	return h.wrap(f, name, err)
}

func (h *holdSyncFS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := h.MemFS.Open(name, o)
	return h.wrap(f, name, err)
}

func (f *holdSyncFile) Sync() error {
	select {
	case f.fs.held <- struct{}{}:
	default:
	}
	<-f.fs.release
	return f.File.Sync()
}

// TestDirectStageSlowSync: a staging segment's Flush syncs outside the
// io lock, so while its fdatasync hangs the write-behind keeps writing
// and the appender keeps appending past a whole ring.
func TestDirectStageSlowSync(t *testing.T) {
	for _, name := range []string{"odirect", "uring"} {
		t.Run(name, func(t *testing.T) {
			h := &holdSyncFS{MemFS: vfs.NewMem(), release: make(chan struct{}), held: make(chan struct{}, 1)}
			s, _ := newStagedDirect(t, name, h, ODirectOptions{StagedRingSize: 16 << 10, StageSize: 4096}, 256<<10)
			t.Cleanup(func() {
				select {
				case <-h.release:
				default:
					close(h.release)
				}
			})
			appendD(t, s, 3000)
			flushed := make(chan error, 1)
			go func() { _, err := s.Flush(); flushed <- err }()
			<-h.held // the Flush is in its fdatasync
			appended := make(chan error, 1)
			go func() { // four rings' worth: the write-behind must make room
				var err error
				for s.Written() < 64<<10 && err == nil {
					err = s.Append(dpattern(s.Written(), 3000))
				}
				appended <- err
			}()
			waitFor(t, "the appends and the write-behind while the sync hangs", func() bool {
				return len(appended) > 0 && s.onDisk.Load() >= 60<<10
			})
			if err := <-appended; err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-flushed:
				t.Fatalf("the Flush returned before its sync did: %v", err)
			default:
			}
			close(h.release)
			if err := <-flushed; err != nil {
				t.Fatal(err)
			}
			if d := flushD(t, s); d != s.Written() {
				t.Fatalf("durable %d", d)
			}
			readD(t, s, 0, int(s.Written()))
		})
	}
}

// holdWriteFS holds every WriteAt to files not named *.stage until
// release closes, counting the writes that began.
type holdWriteFS struct {
	*vfs.MemFS
	release chan struct{}
	began   atomic.Int64
	most    atomic.Int64 // the longest write
	pass    atomic.Bool  // let writes through (not counted)
}

type holdWriteFile struct {
	vfs.File
	fs *holdWriteFS
}

func (h *holdWriteFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || filepath.Ext(name) == ".stage" {
		return f, err
	}
	return &holdWriteFile{File: f, fs: h}, nil
}

func (h *holdWriteFS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := h.MemFS.Create(name, o)
	return h.wrap(f, name, err)
}

func (h *holdWriteFS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := h.MemFS.Open(name, o)
	return h.wrap(f, name, err)
}

func (f *holdWriteFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.pass.Load() {
		return f.File.WriteAt(p, off)
	}
	f.fs.began.Add(1)
	for {
		m := f.fs.most.Load()
		if int64(len(p)) <= m || f.fs.most.CompareAndSwap(m, int64(len(p))) {
			break
		}
	}
	<-f.fs.release
	return f.File.WriteAt(p, off)
}

// TestDirectStageFullRingWaits: an appender that finds the ring full
// while the write-behind's write hangs waits (no second write begins, no
// append returns past the full ring); once the write returns, rounds of
// at most a share of the ring free room, and every byte reads back and
// replays.
func TestDirectStageFullRingWaits(t *testing.T) {
	for _, name := range []string{"odirect", "uring"} {
		t.Run(name, func(t *testing.T) {
			h := &holdWriteFS{MemFS: vfs.NewMem(), release: make(chan struct{})}
			s, cfg := newStagedDirect(t, name, h, ODirectOptions{StagedRingSize: 16 << 10, StageSize: 4096}, 256<<10)
			released := false
			t.Cleanup(func() {
				if !released {
					close(h.release)
				}
			})
			appended := make(chan error, 1)
			go func() { // two rings' worth, in appends shorter than the ring
				var err error
				for s.Written() < 32<<10 && err == nil {
					err = s.Append(dpattern(s.Written(), 1000))
				}
				appended <- err
			}()
			waitFor(t, "the write-behind's write", func() bool { return h.began.Load() >= 1 })
			waitFor(t, "the ring to fill", func() bool { return s.Written() > (16<<10)-1000 })
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
				t.Fatalf("a %d-byte write: more than a round's share (a block here)", m)
			}
			readD(t, s, 0, int(s.Written()))
			checkDpattern(t, replayedBytes(t, h.MemFS, cfg, int(s.Written())), 0)
		})
	}
}
