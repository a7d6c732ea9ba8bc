package storage

import (
	"bytes"
	"context"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestReadBufferClasses: a buffer holds what was asked for, in the
// smallest class that does; past the largest class it is exactly the size.
func TestReadBufferClasses(t *testing.T) {
	for _, tc := range []struct{ n, cap int }{
		{1, minReadBuffer}, {minReadBuffer, minReadBuffer}, {minReadBuffer + 1, 2 * minReadBuffer},
		{70 << 10, 128 << 10}, {maxReadBuffer, maxReadBuffer}, {maxReadBuffer + 1, maxReadBuffer + 1},
	} {
		b := getReadBuffer(tc.n)
		if got := cap(*b.p); got != tc.cap {
			t.Errorf("getReadBuffer(%d): cap %d, want %d", tc.n, got, tc.cap)
		}
		if got := len(b.bytes(tc.n)); got != tc.n {
			t.Errorf("bytes(%d): %d bytes", tc.n, got)
		}
		b.Release()
	}
	ReadBuffer{}.Release() // the zero buffer: nothing to do
}

// TestGetMessagesPooled: a pooled read returns what GetMessages does; once
// released, its buffer serves the next pooled read, which returns its own
// records; a read that finds nothing holds no buffer.
func TestGetMessagesPooled(t *testing.T) {
	s := mustOpen(t, testOptions(vfs.NewMem(), "pwrite", FlushAsync))
	defer s.Close()
	ctx := context.Background()
	for i := range 64 {
		for q := int32(0); q < 2; q++ {
			if _, err := s.Append(ctx, testMessage("T", q, 100+i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s)
	for q := int32(0); q < 2; q++ {
		want, err := s.GetMessages("T", q, 0, 32, 0, nil)
		if err != nil || want.Status != Found {
			t.Fatalf("get: %v %v", err, want.Status)
		}
		for round := 0; round < 2; round++ {
			got, err := s.GetMessagesPooled("T", q, 0, 32, 0, nil)
			if err != nil || got.Status != Found || len(got.Records) != 32 {
				t.Fatalf("pooled get: %v %v, %d records", err, got.Status, len(got.Records))
			}
			if got.Buffer.p == nil {
				t.Fatal("a pooled read holds no buffer")
			}
			if !bytes.Equal(got.Whole, want.Whole) || !bytes.Equal(bytes.Join(got.Records, nil), want.Whole) {
				t.Fatalf("queue %d round %d: pooled records differ from GetMessages'", q, round)
			}
			got.Release()
			if got.Buffer.p != nil || got.Records != nil || got.Whole != nil {
				t.Fatal("Release left the buffer or the records in the result")
			}
			got.Release() // again: nothing is handed back twice
		}
	}
	none, err := s.GetMessagesPooled("T", 0, 64, 32, 0, nil)
	if err != nil || none.Status != OffsetOverflowOne || none.Buffer.p != nil {
		t.Fatalf("read at the end: %v %v, buffer held %v", err, none.Status, none.Buffer.p != nil)
	}
}
