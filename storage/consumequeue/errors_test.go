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

// TestWriteErrorRetried: a failed write (a full disk) refuses the Append or
// Flush that made it and changes nothing; once the disk has room the same
// calls succeed and every entry is there, on disk after a reopen.
func TestWriteErrorRetried(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem, errorfs.Rule{Op: errorfs.OpWrite, Err: syscall.ENOSPC, Sticky: true})
	tb := openTable(t, efs, crashDir, 10)
	q := tb.Queue("T", 0)
	appendN(t, q, 0, 9) // buffered, no write yet
	for i := 0; i < 2; i++ {
		if err := q.Flush(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Flush %d on a full disk: %v", i, err)
		}
	}
	appendN(t, q, 9, 10) // still buffered: the file has room for it
	e := entryFor(10)
	if err := q.Append(10, e.PhysOffset, e.Size, e.TagsCode); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append into a new file on a full disk: %v", err)
	}
	if q.MaxOffset() != 10 {
		t.Fatalf("refused Append moved max to %d", q.MaxOffset())
	}
	checkRange(t, q, 0, 10) // reads go on from the buffer
	efs.ClearRules()
	appendN(t, q, 10, 25)
	if err := q.Flush(); err != nil {
		t.Fatalf("Flush with room again: %v", err)
	}
	checkRange(t, q, 0, 25)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb2 := openTable(t, mem.CrashClone(nil), crashDir, 10)
	defer tb2.Close()
	checkRange(t, tb2.Queue("T", 0), 0, 25)
}

// TestCreateErrorRetried: a queue whose directory or file cannot be made
// (ENOSPC on mkdir, then on create) takes the Append once they can.
func TestCreateErrorRetried(t *testing.T) {
	efs, tb := errTable(t)
	defer tb.Close()
	efs.AddRule(errorfs.Rule{Op: errorfs.OpMkdir, Err: syscall.ENOSPC})
	efs.AddRule(errorfs.Rule{Op: errorfs.OpCreate, Err: syscall.ENOSPC})
	q := tb.Queue("T", 0)
	e := entryFor(0)
	for i, op := range []errorfs.Op{errorfs.OpMkdir, errorfs.OpCreate} {
		if err := q.Append(0, e.PhysOffset, e.Size, e.TagsCode); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Append %d, %s failing: %v", i, op, err)
		}
	}
	appendN(t, q, 0, 12)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	checkRange(t, q, 0, 12)
	if efs.Injected() != 2 {
		t.Fatalf("injected %d errors, want 2", efs.Injected())
	}
}

// TestFullBufferWriteRetried: when the write of a full buffer fails the
// entry that filled it is kept; the next Append writes the buffer first.
func TestFullBufferWriteRetried(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	tb := openTable(t, efs, crashDir, 1000) // files of several buffers
	defer tb.Close()
	q := tb.Queue("T", 0)
	appendN(t, q, 0, writeBufEntries-1)
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Err: syscall.ENOSPC, Nth: 1, Sticky: true})
	appendN(t, q, writeBufEntries-1, writeBufEntries) // fills the buffer; its write fails
	e := entryFor(writeBufEntries)
	if err := q.Append(writeBufEntries, e.PhysOffset, e.Size, e.TagsCode); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append past a full unwritten buffer: %v", err)
	}
	checkRange(t, q, 0, writeBufEntries)
	efs.ClearRules()
	appendN(t, q, writeBufEntries, writeBufEntries+5)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	checkRange(t, q, 0, writeBufEntries+5)
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
	efs := errorfs.Wrap(mem, errorfs.Rule{Op: errorfs.OpWrite, Nth: 2, Sticky: true, Tear: true, TearAt: 3*EntrySize + 7})
	tb := openTable(t, efs, crashDir, 1000)
	q := tb.Queue("T", 0)
	appendN(t, q, 0, writeBufEntries) // first write: whole
	appendN(t, q, writeBufEntries, 2*writeBufEntries-1)
	// The entry that fills the buffer is stored whatever its write does;
	// the torn write is reported by the next Flush (or Append).
	appendN(t, q, 2*writeBufEntries-1, 2*writeBufEntries)
	if err := q.Flush(); !errors.Is(err, syscall.EIO) {
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
