package backend

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestPwriteReadsMapped: on a file system that maps, reads below what is on
// file copy from a read-only mapping and see what was written, the tail
// still comes from the buffer, and a file cut under the mapping by someone
// else makes a read fail with an error instead of crashing the process.
func TestPwriteReadsMapped(t *testing.T) {
	dir := t.TempDir()
	b, err := NewPwrite(PwriteOptions{BufferSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "seg")
	sg, err := b.Create(Config{FS: vfs.Default, Path: path, Capacity: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	s := sg.(*pwriteSegment)
	defer s.Close()
	if !s.ReadsMapped() {
		t.Fatal("an OS file should be read through a mapping")
	}
	var all []byte
	for i := range 100 {
		p := bytes.Repeat([]byte{byte(i)}, 300)
		if err := s.Append(p); err != nil {
			t.Fatal(err)
		}
		all = append(all, p...)
	}
	if _, err := s.WriteOut(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(all))
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, all) {
		t.Fatalf("read back: %v, equal %t", err, bytes.Equal(got, all))
	}
	if s.rmap == nil {
		t.Fatal("a read below the buffer made no mapping")
	}
	// Someone else cuts the file: the mapped pages past the cut fault.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadAt(got[:300], 0); err == nil {
		t.Fatal("a read of a page the file no longer backs succeeded")
	}
}
