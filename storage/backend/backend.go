// Package backend holds the write paths of a CommitLog segment: how appended
// bytes reach the page cache or the disk, and how they are made durable.
//
// One Segment is one commit-log file of fixed capacity. The CommitLog drives
// it with two kinds of caller:
//
//   - the appender, holding the CommitLog's append lock: Append copies bytes
//     to the tail, strictly sequentially. After Append returns, ReadAt sees
//     the bytes (the "written" position).
//   - the flusher, one goroutine, not holding the append lock: Flush makes
//     every byte appended before Flush started durable, and returns the
//     offset up to which the segment is now durable.
//
// Append, WriteOut and Flush may run concurrently; ReadAt may run
// concurrently with all three. Everything else (Open, Close, Truncate) runs with no Append or Flush
// in flight. A Flush error is sticky: the segment reports it again on every
// later Flush and the CommitLog treats the store as broken.
//
// Implementations (one file each): mmap, pwrite, odirect, uring. Each is
// registered under its name so options, benchmarks and the conformance suite
// can choose it by string. pwrite, odirect and uring can keep their write
// buffer in a stage (Config.StagePath): one stage type and one replay for
// all three (stage.go); pwrite's buffer is linear (pwrite_seg.go), odirect's
// and uring's is their append ring, written behind the appender
// (odirect_stage.go).
package backend

import (
	"fmt"
	"sort"
	"sync"

	"github.com/samsamq/samsa/storage/vfs"
)

// Segment is one commit-log file's write path.
type Segment interface {
	// Append copies p to the tail. It fails with ErrSegmentFull, writing
	// nothing, when p does not fit; the caller decides what goes where.
	Append(p []byte) error
	// ReadAt reads len(p) bytes at off, which must lie below Written.
	ReadAt(p []byte, off int64) (int, error)
	// WriteOut hands every byte appended before the call to the kernel
	// (the page cache; the device for O_DIRECT) without making it durable,
	// and returns the offset it now covers: from then on a crash of the
	// process cannot lose those bytes, only a crash of the machine. It
	// writes the bytes in log order, after every byte before them. It may
	// run concurrently with Append and Flush (not with another WriteOut);
	// a failed write is sticky as a failed Flush is.
	WriteOut() (handed int64, err error)
	// Flush makes everything appended before the call durable and returns
	// the durable offset (bytes from the segment's start).
	Flush() (durable int64, err error)
	// Written is the offset up to which bytes have been appended.
	Written() int64
	// Capacity is the segment's fixed size in bytes.
	Capacity() int64
	// Stats returns the segment's I/O counters.
	Stats() Stats
	// Close flushes nothing; it releases the file (and mapping or ring).
	Close() error
}

// MappedReader is implemented by a segment whose ReadAt copies from a
// mapping, with no system call: a reader then gains nothing by reading a
// span around the records it wants (storage's readRecords) and only copies
// more.
type MappedReader interface {
	ReadsMapped() bool
}

// Stats are a segment's I/O counters, added up by the CommitLog.
type Stats struct {
	BytesWritten int64 // bytes handed to the OS or the disk
	WriteCalls   int64 // write syscalls (pwrite, memcpy-free for mmap: 0), or io_uring submits
	Fsyncs       int64 // fdatasync/fsync/msync calls, including linked ones in a ring
	FlushBatches int64 // Flush calls that had something to make durable
}

// Add returns the sum of two Stats.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		BytesWritten: s.BytesWritten + o.BytesWritten,
		WriteCalls:   s.WriteCalls + o.WriteCalls,
		Fsyncs:       s.Fsyncs + o.Fsyncs,
		FlushBatches: s.FlushBatches + o.FlushBatches,
	}
}

// Config is what a backend needs to create or open a segment.
type Config struct {
	FS       vfs.FS
	Path     string
	Capacity int64
	// Written is, for Open, the offset the segment holds valid data up to
	// (found by recovery); appends continue from there. Create ignores it.
	Written int64
	// Preallocate reserves the whole segment with fallocate at create
	// (odirect always does).
	Preallocate bool
	// StagePath, if set, is where a Stager backend keeps the segment's
	// write buffer in a shared mapping (stage.go): appended bytes are
	// then in the kernel at once. The FS must be a vfs.Booter whose files
	// are vfs.Mappers. The caller replays (ReplayStage) any stage file a
	// crash left there before it reads or opens the segment.
	StagePath string
}

// Sealer is implemented by segments that hold memory (or a stage) for
// appends: Seal says no byte is appended again, so the segment writes out
// what it holds and lets it go. The CommitLog seals a segment when it
// rolls past it (a sealed segment's blank does not fill the file, so the
// segment cannot tell by itself).
type Sealer interface {
	Seal() error
}

// Stager is implemented by backends that can stage appends
// (Config.StagePath).
type Stager interface {
	Stages() bool
}

// Backend creates and opens segments of one kind.
type Backend interface {
	// Name is the backend's registered name ("mmap", "pwrite", ...).
	Name() string
	// Create makes a new, empty segment file.
	Create(cfg Config) (Segment, error)
	// Open opens an existing segment file, appending from cfg.Written.
	Open(cfg Config) (Segment, error)
}

// ErrSegmentFull is returned by Append when the bytes do not fit.
var ErrSegmentFull = fmt.Errorf("backend: segment full")

var registry struct {
	sync.Mutex
	m map[string]Backend
}

// Register makes a backend available by name. It panics on a duplicate.
func Register(b Backend) {
	registry.Lock()
	defer registry.Unlock()
	if registry.m == nil {
		registry.m = map[string]Backend{}
	}
	if _, ok := registry.m[b.Name()]; ok {
		panic("backend: duplicate " + b.Name())
	}
	registry.m[b.Name()] = b
}

// Get returns the named backend.
func Get(name string) (Backend, error) {
	registry.Lock()
	defer registry.Unlock()
	b, ok := registry.m[name]
	if !ok {
		return nil, fmt.Errorf("backend: unknown backend %q (have %v)", name, namesLocked())
	}
	return b, nil
}

// Names lists the registered backends, sorted.
func Names() []string {
	registry.Lock()
	defer registry.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	var n []string
	for k := range registry.m {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// FileSource is implemented by segments that can hand a sender (sendfile)
// their file: a pull answer's records then go from the file to the socket
// without a copy in the process.
type FileSource interface {
	// DupFile returns a new descriptor of the segment's file, which the
	// caller closes, and the offset below which the file holds every byte
	// appended (bytes above it may still be in a write buffer). It fails
	// with ErrNoFile when the file has no descriptor (MemFS) or the
	// segment is closed. The descriptor reads through the page cache.
	DupFile() (fd int, limit int64, err error)
}

// ErrNoFile says a segment cannot hand out its file (FileSource).
var ErrNoFile = fmt.Errorf("backend: no file to send from")
