package backend_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/backend/backendtest"
	"github.com/samsamq/samsa/storage/vfs"
)

// staging is a backend whose segments all stage (Config.StagePath beside
// the segment file).
type staging struct{ backend.Backend }

func (b staging) Create(cfg backend.Config) (backend.Segment, error) {
	cfg.StagePath = cfg.Path + ".stage"
	return b.Backend.Create(cfg)
}

func (b staging) Open(cfg backend.Config) (backend.Segment, error) {
	cfg.StagePath = cfg.Path + ".stage"
	return b.Backend.Open(cfg)
}

// stagedBackends are the staging backends with the options the staged
// suites run: the defaults and buffers small enough that appends restart
// or spill, write-behinds run and rings wrap.
func stagedBackends(t *testing.T) map[string]backend.Backend {
	t.Helper()
	bs := map[string]backend.Backend{}
	add := func(name string, b backend.Backend, err error) {
		if err != nil {
			t.Fatal(err)
		}
		bs[name] = b
	}
	for _, o := range []backend.PwriteOptions{{}, {BufferSize: 4 << 10}, {BufferSize: 10000}} {
		b, err := backend.NewPwrite(o)
		add("pwrite/"+o.String(), b, err)
	}
	for _, o := range []backend.ODirectOptions{{}, {StagedRingSize: 8 << 10, StageSize: 4 << 10}, {StagedRingSize: 24 << 10, StageSize: 8 << 10, ZeroAhead: 32 << 10}} {
		b, err := backend.NewODirect(o)
		add("odirect/"+o.String(), b, err)
	}
	for _, o := range []backend.UringOptions{{}, {Buffered: true}, {ODirectOptions: backend.ODirectOptions{StagedRingSize: 8 << 10, StageSize: 4 << 10}, Entries: 4}} {
		b, err := backend.NewUring(o)
		add("uring/"+o.String(), b, err)
	}
	return bs
}

// TestStagedConformance runs the conformance suite on staged segments of
// every staging backend, with the default buffers and with small ones.
func TestStagedConformance(t *testing.T) {
	for name, b := range stagedBackends(t) {
		for _, fs := range []string{"mem", "os"} {
			t.Run(fmt.Sprintf("%s/%s", name, fs), func(t *testing.T) {
				backendtest.Run(t, staging{b}, fileSystems[fs])
			})
		}
	}
}

// TestStageReplay: after a process crash the stage holds every appended
// byte the segment file lacks, and ReplayStage writes them there; after a
// power loss (another boot) it drops the stage. Either way the stage file
// is gone. Each staging backend, with buffers small enough that the
// stage restarts (pwrite) or its ring wraps (odirect, uring).
func TestStageReplay(t *testing.T) {
	for name, b := range map[string]func() (backend.Backend, error){
		"pwrite": func() (backend.Backend, error) { return backend.NewPwrite(backend.PwriteOptions{BufferSize: 8 << 10}) },
		"odirect": func() (backend.Backend, error) {
			return backend.NewODirect(backend.ODirectOptions{StagedRingSize: 8 << 10})
		},
		"uring": func() (backend.Backend, error) {
			return backend.NewUring(backend.UringOptions{ODirectOptions: backend.ODirectOptions{StagedRingSize: 8 << 10}})
		},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := b()
			if err != nil {
				t.Fatal(err)
			}
			testStageReplay(t, b)
		})
	}
}

func testStageReplay(t *testing.T, b backend.Backend) {
	mem := vfs.NewMem()
	seg, stage := filepath.Join("d", "seg"), filepath.Join("d", "seg.stage")
	if err := mem.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	cfg := backend.Config{FS: mem, Path: seg, Capacity: 1 << 20, StagePath: stage}
	sg, err := b.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 50 { // past the buffer a few times: restarts, then a tail in the stage
		p := bytes.Repeat([]byte{byte('a' + i%26)}, 700+i)
		if err := sg.Append(p); err != nil {
			t.Fatal(err)
		}
		want = append(want, p...)
	}
	if _, err := sg.Flush(); err != nil { // the first half durable, the rest only in the stage
		t.Fatal(err)
	}
	for i := range 9 {
		p := bytes.Repeat([]byte{byte('A' + i)}, 333)
		if err := sg.Append(p); err != nil {
			t.Fatal(err)
		}
		want = append(want, p...)
	}

	t.Run("process crash", func(t *testing.T) {
		// Appends are done: the write-behind (odirect, uring) may still be
		// writing, and a crash may come before, during or after it.
		img := mem.ProcessCrashClone()
		got := readAll(t, img, seg, len(want))
		if bytes.Equal(got, want) {
			t.Fatal("the segment file already holds every byte: the test stages nothing")
		}
		r, err := backend.ReplayStage(img, stage, seg, cfg.Capacity)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Replayed || r.To != int64(len(want)) {
			t.Fatalf("replay %+v, want one up to %d", r, len(want))
		}
		if got := readAll(t, img, seg, len(want)); !bytes.Equal(got, want) {
			t.Fatal("after the replay the segment file differs from what was appended")
		}
		if _, err := img.Stat(stage); err == nil {
			t.Fatal("the stage file is still there")
		}
	})
	t.Run("power loss", func(t *testing.T) {
		img := mem.ProcessCrashClone().CrashClone(nil) // synced bytes only, a new boot
		if _, err := img.Stat(stage); err != nil {
			t.Skip("the stage's name did not survive") // (not synced: it may not)
		}
		r, err := backend.ReplayStage(img, stage, seg, cfg.Capacity)
		if err != nil {
			t.Fatal(err)
		}
		if r.Replayed {
			t.Fatalf("replayed a stage of another boot: %+v", r)
		}
		if _, err := img.Stat(stage); err == nil {
			t.Fatal("the stage file is still there")
		}
	})

	// A clean Close writes everything out and removes the stage.
	if err := sg.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, mem, seg, len(want)); !bytes.Equal(got, want) {
		t.Fatal("after Close the segment file differs from what was appended")
	}
	if _, err := mem.Stat(stage); err == nil {
		t.Fatal("Close left the stage file")
	}
}

func readAll(t *testing.T, fsys vfs.FS, path string, n int) []byte {
	t.Helper()
	f, err := fsys.Open(path, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	m, _ := f.ReadAt(b, 0)
	return b[:m]
}
