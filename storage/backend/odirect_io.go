package backend

import (
	"fmt"
	"io"

	"github.com/samsamq/samsa/storage/vfs"
)

// directIO executes a direct segment's disk writes: pwrite calls (odirect)
// or one io_uring batch (uring). Calls are serialised by the segment's io
// lock.
type directIO interface {
	// write performs ws in order and then, if sync, makes the file's data
	// durable (fdatasync). It succeeds only if every write was whole and
	// the sync succeeded; it counts its calls in the segment's counters.
	write(ws []blockWrite, sync bool) error
	// release forgets the segment's buffers (unregistering them from a
	// ring): the segment is full and on disk and will not write again.
	release()
	// close releases what the executor holds (a ring); not the file.
	close() error
}

// pwriteIO is the odirect executor: one File.WriteAt per write, then
// File.Sync.
type pwriteIO struct {
	f vfs.File
	c *segCounters
}

func newPwriteIO(s *directSegment) (directIO, error) { return &pwriteIO{f: s.f, c: &s.c}, nil }

func (x *pwriteIO) write(ws []blockWrite, sync bool) error {
	for _, w := range ws {
		n, err := x.f.WriteAt(w.buf, w.off)
		x.c.writeCalls.Add(1)
		x.c.bytesWritten.Add(int64(n))
		if err != nil {
			return fmt.Errorf("pwrite %v: %w", w, err)
		}
		if n != len(w.buf) {
			return fmt.Errorf("pwrite %v: short write of %d: %w", w, n, io.ErrShortWrite)
		}
	}
	if sync {
		x.c.fsyncs.Add(1)
		if err := x.f.Sync(); err != nil {
			return fmt.Errorf("fdatasync: %w", err)
		}
	}
	return nil
}

func (x *pwriteIO) release()     {}
func (x *pwriteIO) close() error { return nil }
