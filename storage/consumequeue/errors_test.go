package consumequeue

import (
	"errors"
	"syscall"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

func errTable(t *testing.T, rules ...errorfs.Rule) (*errorfs.FS, *Table) {
	t.Helper()
	efs := errorfs.Wrap(vfs.NewMem(), rules...)
	return efs, openTable(t, efs, crashDir, 10)
}

func TestSyncErrorSticks(t *testing.T) {
	efs, tb := errTable(t)
	defer tb.Close()
	q := tb.Queue("T", 0)
	appendN(t, q, 0, 5)
	efs.AddRule(errorfs.Rule{Op: errorfs.OpSync})
	err := q.Flush()
	if !errors.Is(err, syscall.EIO) || !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Flush: %v", err)
	}
	// Sticky: no retry makes it durable.
	if err2 := q.Flush(); !errors.Is(err2, syscall.EIO) {
		t.Fatalf("second Flush: %v", err2)
	}
	e := entryFor(5)
	if err := q.Append(5, e.PhysOffset, e.Size, e.TagsCode); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append after failed sync: %v", err)
	}
	checkRange(t, q, 0, 5) // reads still work
	if err := tb.Flush(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Table.Flush: %v", err)
	}
	// Other queues are not affected.
	appendN(t, tb.Queue("T", 1), 0, 5)
	if err := tb.Queue("T", 1).Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestWriteErrorSticks(t *testing.T) {
	_, tb := errTable(t, errorfs.Rule{Op: errorfs.OpWrite, Err: syscall.ENOSPC})
	defer tb.Close()
	q := tb.Queue("T", 0)
	appendN(t, q, 0, 9) // buffered, no write yet
	e := entryFor(9)
	if err := q.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush: %v", err)
	}
	if err := q.Append(9, e.PhysOffset, e.Size, e.TagsCode); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append: %v", err)
	}
}

func TestCreateErrorOnNewFile(t *testing.T) {
	_, tb := errTable(t, errorfs.Rule{Op: errorfs.OpCreate, Nth: 2}) // the second file
	defer tb.Close()
	q := tb.Queue("T", 0)
	appendN(t, q, 0, 10)
	e := entryFor(10)
	if err := q.Append(10, e.PhysOffset, e.Size, e.TagsCode); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append into a new file: %v", err)
	}
	if q.MaxOffset() != 10 {
		t.Fatalf("max %d", q.MaxOffset())
	}
	checkRange(t, q, 0, 10)
}

func TestTornWriteRecovered(t *testing.T) {
	// A write torn mid-entry (then the process dies): reopen ends the
	// queue at the last whole entry.
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem, errorfs.Rule{Op: errorfs.OpWrite, Nth: 2, Tear: true, TearAt: 3*EntrySize + 7})
	tb := openTable(t, efs, crashDir, 1000)
	q := tb.Queue("T", 0)
	appendN(t, q, 0, writeBufEntries) // first write: whole
	appendN(t, q, writeBufEntries, 2*writeBufEntries-1)
	e := entryFor(2*writeBufEntries - 1)
	if err := q.Append(2*writeBufEntries-1, e.PhysOffset, e.Size, e.TagsCode); !errors.Is(err, syscall.EIO) {
		t.Fatalf("torn write: %v", err)
	}
	// Reopen what is on "disk" (no crash: the page cache keeps the prefix).
	tb2 := openTable(t, mem, crashDir, 1000)
	defer tb2.Close()
	q2 := tb2.Queue("T", 0)
	if q2.MaxOffset() != writeBufEntries+3 {
		t.Fatalf("max %d, want %d", q2.MaxOffset(), writeBufEntries+3)
	}
	checkRange(t, q2, 0, writeBufEntries+3)
}
