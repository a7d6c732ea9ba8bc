package backend

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

func TestPwriteBasics(t *testing.T) {
	b, err := Get("pwrite")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{FS: vfs.Default, Path: filepath.Join(t.TempDir(), "seg"), Capacity: 10000, Preallocate: true}
	s, err := b.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 700)
	if err := s.Append(data[:3001]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(data[3001:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(make([]byte, 3001)); !errors.Is(err, ErrSegmentFull) {
		t.Fatalf("append past capacity: %v", err)
	}
	if d, err := s.Flush(); err != nil || d != 7000 {
		t.Fatalf("flush %d %v", d, err)
	}
	got := make([]byte, 100)
	if n, err := s.ReadAt(got, 6950); err != io.EOF || n != 50 {
		t.Fatalf("read across the tail: %d %v", n, err)
	}
	if st := s.Stats(); st.WriteCalls != 2 || st.BytesWritten != 7000 || st.Fsyncs != 1 || st.FlushBatches != 1 {
		t.Fatalf("stats %+v", st)
	}
	s.Close()
	cfg.Written = 7000
	s, err = b.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	got = make([]byte, 7004)
	if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, append(data, "tail"...)) {
		t.Fatalf("read back after reopen: %v", err)
	}
}
