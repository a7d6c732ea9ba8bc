package consumequeue

import (
	"errors"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestStartAt: a queue with no file starts at an offset above 0 (its
// first file named for it), takes appends from there, keeps it across a
// reopen, and is refused once it has a file; Clear empties the table.
func TestStartAt(t *testing.T) {
	fs := vfs.NewMem()
	tb := openTable(t, fs, "/cq", 16)
	q := tb.Queue("T", 3)
	if err := q.Append(37, 1000, 40, 0); !errors.Is(err, ErrGap) {
		t.Fatalf("Append(37) on an empty queue: %v, want ErrGap", err)
	}
	if err := q.StartAt(37); err != nil {
		t.Fatal(err)
	}
	if q.MinOffset() != 37 || q.MaxOffset() != 37 {
		t.Fatalf("offsets [%d, %d) after StartAt(37)", q.MinOffset(), q.MaxOffset())
	}
	appendN(t, q, 37, 60) // across files of 16 entries
	checkRange(t, q, 37, 60)
	if err := q.StartAt(100); !errors.Is(err, ErrConflict) {
		t.Fatalf("StartAt on a queue with files: %v, want ErrConflict", err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb = openTable(t, fs, "/cq", 16)
	q = tb.Queue("T", 3)
	if q.MinOffset() != 37 || q.MaxOffset() != 60 {
		t.Fatalf("offsets [%d, %d) after reopen, want [37, 60)", q.MinOffset(), q.MaxOffset())
	}
	checkRange(t, q, 37, 60)
	if err := tb.Clear(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Entry(40); !errors.Is(err, ErrClosed) {
		t.Fatalf("a cleared queue's read: %v, want ErrClosed", err)
	}
	if n := tb.Queue("T", 3).MaxOffset(); n != 0 {
		t.Fatalf("after Clear the queue holds offsets up to %d", n)
	}
	tb.Close()
}
