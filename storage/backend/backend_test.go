// The conformance suite (package backendtest) over every backend and file
// system.
//
// To add a backend, append a row to conformanceRows, once per file system
// it should pass on ("mem": a fresh vfs.NewMem(), "os": vfs.Default in a
// t.TempDir()). A backend that cannot run on some machine (no io_uring, no
// O_DIRECT on the temp dir's file system) needs no special row: make its
// Create return an error wrapping errors.ErrUnsupported or
// vfs.ErrDirectUnsupported and backendtest.Run skips with that message.
package backend_test

import (
	"testing"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/backend/backendtest"
	"github.com/samsamq/samsa/storage/vfs"
)

var conformanceRows = []struct {
	backend string // registered name
	fs      string // a key of fileSystems
}{
	{"pwrite", "mem"},
	{"pwrite", "os"},
	{"mmap", "mem"},
	{"mmap", "os"},
	{"odirect", "mem"},
	{"odirect", "os"},
	{"uring", "mem"},
	{"uring", "os"},
}

var fileSystems = map[string]func(t *testing.T) vfs.FS{
	"mem": func(*testing.T) vfs.FS { return vfs.NewMem() },
	"os":  func(*testing.T) vfs.FS { return vfs.Default },
}

func TestConformance(t *testing.T) {
	for _, row := range conformanceRows {
		t.Run(row.backend+"/"+row.fs, func(t *testing.T) {
			b, err := backend.Get(row.backend)
			if err != nil {
				t.Fatal(err)
			}
			newFS, ok := fileSystems[row.fs]
			if !ok {
				t.Fatalf("no file system %q", row.fs)
			}
			backendtest.Run(t, b, newFS)
		})
	}
}
