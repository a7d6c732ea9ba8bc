package storage

import (
	"context"
	"errors"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

func TestFencedRefusesAppendsOnly(t *testing.T) {
	s := mustOpen(t, testOptions(vfs.NewMem(), "pwrite", FlushAsync))
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Append(ctx, testMessage("Ta", 0, 10)); err != nil {
		t.Fatal(err)
	}
	w := s.WrittenOffset()
	s.SetFenced(true)
	if !s.Fenced() {
		t.Fatal("not fenced")
	}
	if _, err := s.Append(ctx, testMessage("Tb", 0, 10)); !errors.Is(err, ErrFenced) {
		t.Fatalf("append while fenced: %v, want ErrFenced", err)
	}
	if _, err := s.AppendBatch(ctx, []*Message{testMessage("Tc", 0, 10)}); !errors.Is(err, ErrFenced) {
		t.Fatalf("batch while fenced: %v, want ErrFenced", err)
	}
	if s.WrittenOffset() != w {
		t.Fatalf("written moved from %d to %d while fenced", w, s.WrittenOffset())
	}
	s.SetFenced(false)
	if _, err := s.Append(ctx, testMessage("Td", 0, 10)); err != nil {
		t.Fatalf("append after unfencing: %v", err)
	}
}
