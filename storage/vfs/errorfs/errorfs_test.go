package errorfs

import (
	"errors"
	"sync"
	"syscall"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

func TestNthWriteFails(t *testing.T) {
	efs := Wrap(vfs.NewMem(), Rule{Op: OpWrite, Nth: 3, Err: syscall.ENOSPC})
	f, err := efs.Create("/f", vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		_, err := f.WriteAt([]byte("x"), int64(i))
		if i == 3 {
			if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrInjected) {
				t.Fatalf("write 3: %v", err)
			}
		} else if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if efs.Count(OpWrite) != 5 || efs.Count(OpCreate) != 1 || efs.Injected() != 1 {
		t.Fatalf("counts: write %d create %d injected %d", efs.Count(OpWrite), efs.Count(OpCreate), efs.Injected())
	}
	// The failed write wrote nothing.
	b := make([]byte, 1)
	f.ReadAt(b, 3)
	if b[0] != 0 {
		t.Fatal("failed write reached the file")
	}
}

func TestStickyAndPath(t *testing.T) {
	efs := Wrap(vfs.NewMem(), Rule{Op: OpSync, Path: "seg", Nth: 2, Sticky: true})
	a, _ := efs.Create("/seg1", vfs.OpenOptions{})
	o, _ := efs.Create("/other", vfs.OpenOptions{})
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := a.Sync(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("sticky sync %d: %v", i, err)
		}
		if err := o.Sync(); err != nil {
			t.Fatalf("other path failed: %v", err)
		}
	}
	efs.ClearRules()
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestTornWrite(t *testing.T) {
	m := vfs.NewMem()
	efs := Wrap(m, Rule{Op: OpWrite, Tear: true, TearAt: 3})
	f, _ := efs.Create("/f", vfs.OpenOptions{})
	n, err := f.WriteAt([]byte("abcdef"), 0)
	if n != 3 || !errors.Is(err, syscall.EIO) {
		t.Fatalf("torn write: %d %v", n, err)
	}
	if sz, _ := m.Stat("/f"); sz != 3 {
		t.Fatalf("torn write left %d bytes", sz)
	}
}

func TestNamespaceOps(t *testing.T) {
	efs := Wrap(vfs.NewMem(),
		Rule{Op: OpCreate, Path: "bad"},
		Rule{Op: OpRename, Path: "dst"},
		Rule{Op: OpSyncDir},
		Rule{Op: OpAllocate, Err: syscall.ENOSPC},
	)
	if _, err := efs.Create("/bad", vfs.OpenOptions{}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("create: %v", err)
	}
	f, err := efs.Create("/good", vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Allocate(0, 100); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("allocate: %v", err)
	}
	if err := efs.Rename("/good", "/dst"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename: %v", err)
	}
	if err := efs.SyncDir("/"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("syncdir: %v", err)
	}
	if err := efs.SyncDir("/"); err != nil {
		t.Fatalf("second syncdir: %v", err)
	}
}

func TestMapperPassThrough(t *testing.T) {
	efs := Wrap(vfs.NewMem(), Rule{Op: OpSync, Nth: 2})
	f, _ := efs.Create("/f", vfs.OpenOptions{})
	f.Allocate(0, 4096)
	mp, ok := f.(vfs.Mapper)
	if !ok {
		t.Fatal("wrapped MemFS file is not a Mapper")
	}
	b, err := mp.Map(4096)
	if err != nil {
		t.Fatal(err)
	}
	ms := f.(vfs.MapSyncer)
	if err := ms.SyncMapped(b, 0, 10); err != nil {
		t.Fatal(err)
	}
	if err := ms.SyncMapped(b, 0, 10); !errors.Is(err, syscall.EIO) {
		t.Fatalf("second SyncMapped: %v", err)
	}
	mp.Unmap(b)
}

func TestConcurrent(t *testing.T) {
	efs := Wrap(vfs.NewMem(), Rule{Op: OpWrite, Nth: 50})
	f, _ := efs.Create("/f", vfs.OpenOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	fails := 0
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if _, err := f.WriteAt([]byte("x"), int64(g*100+i)); err != nil {
					mu.Lock()
					fails++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if fails != 1 || efs.Count(OpWrite) != 100 {
		t.Fatalf("fails %d writes %d", fails, efs.Count(OpWrite))
	}
}

// A failing Close reports the injected error and still closes the file
// underneath, as close(2) does.
func TestCloseFails(t *testing.T) {
	mem := vfs.NewMem()
	efs := Wrap(mem, Rule{Op: OpClose, Path: "a"})
	a, _ := efs.Create("/a", vfs.OpenOptions{})
	o, _ := efs.Create("/other", vfs.OpenOptions{})
	if _, err := a.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrInjected) {
		t.Fatalf("close: %v", err)
	}
	if err := o.Close(); err != nil {
		t.Fatalf("other path failed: %v", err)
	}
	if efs.Count(OpClose) != 2 || efs.Injected() != 1 {
		t.Fatalf("counts: close %d injected %d", efs.Count(OpClose), efs.Injected())
	}
	if OpClose.String() != "close" {
		t.Fatalf("OpClose prints as %q", OpClose)
	}
}
