package countfs

import (
	"strings"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

func TestCountsMatchingFiles(t *testing.T) {
	fs := Wrap(vfs.NewMem(), func(name string) bool { return strings.Contains(name, "log") })
	if err := fs.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	logf, err := fs.Create("/d/log", vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := fs.Create("/d/other", vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []vfs.File{logf, other} {
		if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Allocate(0, 4096); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(5); err != nil {
			t.Fatal(err)
		}
	}
	if logf.Fd() != vfs.InvalidFd {
		t.Fatal("a counted file shows its descriptor: a backend could sync around the count")
	}
	if m, ok := logf.(vfs.Mapper); ok {
		b, err := m.Map(5)
		if err != nil {
			t.Fatal(err)
		}
		if err := logf.(vfs.MapSyncer).SyncMapped(b, 0, 5); err != nil {
			t.Fatal(err)
		}
		if err := m.Unmap(b); err != nil {
			t.Fatal(err)
		}
	} else {
		_ = logf.Sync() // the same count either way
	}
	if err := fs.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	// Reopened, the file is still counted.
	logf.Close()
	again, err := fs.Open("/d/log", vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Sync(); err != nil {
		t.Fatal(err)
	}
	again.Close()
	other.Close()
	want := Counts{Syncs: 3, MaxConcurrent: 1, DirSyncs: 1, Writes: 1, BytesWritten: 5, Allocates: 1, Truncates: 1, Creates: 1}
	if got := fs.Counts(); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	// The bytes went through.
	f, err := fs.Open("/d/log", vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 5)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "hello" {
		t.Fatalf("read %q %v", b, err)
	}
}

func TestNilMatchCountsEverything(t *testing.T) {
	fs := Wrap(vfs.NewMem(), nil)
	f, err := fs.Create("/x", vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if c := fs.Counts(); c.Syncs != 1 || c.Creates != 1 {
		t.Fatalf("counts %+v", c)
	}
}
