package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFileOffsetStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "g1", "offsets.json")
	s := NewFileOffsetStore(path)
	q0 := MessageQueue{"t", "b", 0}
	q1 := MessageQueue{"t", "b", 1}
	if _, err := s.Read(ctx, q0); !errors.Is(err, ErrNoOffset) {
		t.Fatalf("read of an empty store: %v", err)
	}
	if err := s.Commit(ctx, map[MessageQueue]int64{q0: 10, q1: 20}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, map[MessageQueue]int64{q1: 25}); err != nil {
		t.Fatal(err)
	}
	// A new store (a restarted consumer) reads what was committed.
	s2 := NewFileOffsetStore(path)
	for q, want := range map[MessageQueue]int64{q0: 10, q1: 25} {
		got, err := s2.Read(ctx, q)
		if err != nil || got != want {
			t.Fatalf("%v: %d, %v; want %d", q, got, err, want)
		}
	}
	// No temporary files left behind.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("directory holds %d files", len(ents))
	}
	// A corrupt file is an error, not an empty store.
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFileOffsetStore(path).Read(ctx, q0); err == nil || errors.Is(err, ErrNoOffset) {
		t.Fatalf("corrupt file read: %v", err)
	}
}

func TestMemoryOffsetStore(t *testing.T) {
	ctx := context.Background()
	var s MemoryOffsetStore
	q := MessageQueue{"t", "b", 3}
	if _, err := s.Read(ctx, q); !errors.Is(err, ErrNoOffset) {
		t.Fatal(err)
	}
	s.Commit(ctx, map[MessageQueue]int64{q: 7})
	if o, err := s.Read(ctx, q); o != 7 || err != nil {
		t.Fatal(o, err)
	}
}
