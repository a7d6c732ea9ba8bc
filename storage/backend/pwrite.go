package backend

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/samsamq/samsa/storage/vfs"
)

// The pwrite backend: appends are coalesced in a per-segment write buffer
// and written into the page cache with one pwrite per buffer (or per
// Flush); fdatasync makes them durable.
//
//   - Append copies into the buffer, which holds the file bytes
//     [base, Written) contiguously; bytes below "onFile" (base <= onFile <=
//     Written) are also in the file. When the bytes do not fit, Append
//     first writes out what the buffer holds ("spill", no sync) and starts
//     it again at the tail; an append larger than the whole buffer is
//     written straight from the caller's slice.
//   - Write-through: an append that finds the segment fully durable
//     (every byte appended before it flushed) is written at once, from the
//     buffer, before Append returns. A sync store's lone writer gains
//     nothing from coalescing (its Flush comes next and would issue the
//     same pwrite), and so its write errors refuse the append itself, as
//     an unbuffered segment's do. Under load (appends arriving while
//     earlier ones wait for a flush) and with async flush, appends are
//     coalesced. A write-through append reserves its range ahead like a
//     buffered one: a pwrite that extends the file makes each fdatasync
//     also write the inode's new size and block allocation (a lone sync
//     writer's p50 was 1.5x the raw disk's write+fdatasync here, and 1.15x
//     with the reservation).
//   - Flush (outside the append lock) writes out [onFile, w) for the w it
//     loads first, then fdatasyncs, and reports w durable: anything
//     appended meanwhile waits for the next Flush. A failure of either
//     step is sticky.
//   - ReadAt serves [onFile, Written) from the buffer and the rest with
//     pread, so readers see every byte below Written at once.
//   - Errors. An append that writes (write-through, spill, large append)
//     fails with the write's error and leaves Written alone; bytes it
//     copied past Written are garbage that later appends overwrite. Bytes
//     an earlier, successful append buffered are never lost by that: they
//     stay in the buffer until a spill or Flush writes them. A write error
//     of buffered bytes in Flush is a Flush error (sticky, as a failed
//     fdatasync). ENOSPC cannot come from there: before an append is
//     buffered, the file is reserved (fallocate) at least up to its end,
//     a BufferSize step at a time, so a full disk refuses the append.
//     With Config.Preallocate the whole capacity is reserved at Create.
//   - Open continues from cfg.Written; bytes beyond it are garbage that
//     later appends overwrite (nothing is truncated, which keeps a
//     preallocated file preallocated). The first Flush after Open syncs
//     everything (recovered bytes may be only in the page cache).
//   - Close writes out what the buffer holds (no sync: the file then holds
//     every appended byte, as it would without a buffer), unless a Flush
//     failed; it makes nothing durable.
//   - Memory: the buffer (min(BufferSize, Capacity)) is allocated at the
//     first Append and dropped once the segment is full and written out:
//     full segments, open for reads, hold none.
//
// Durability: bytes appended but not yet written out are lost if the
// process dies, not only if the machine does, unless the buffer is a stage
// (Config.StagePath, stage.go): a shared mapping of a file, so that the
// buffered bytes are in the kernel and a replay puts them in the segment
// file after a process crash. A stage is a ring of eight buffers written
// behind the appender by a goroutine of its own (pwrite_stage.go): the
// appender makes no write call, and waits only when the ring is full. The CommitLog stages under async and none
// flush (its default, durability "process-crash"); without a stage it
// calls WriteOut before it acknowledges an append; only with its
// AckBuffered option (RocketMQ's transientStorePoolEnable) does it
// acknowledge bytes still in a heap buffer.
//
// Locks, in order: io (serialises file writes: spills, write-through,
// Flush's write-out; owns base changes), then bufMu (readers of buffer
// memory hold it shared; moving base, which lets the appender reuse the
// memory, holds it exclusively). appendMu serialises Append; Flush's own
// mutex serialises Flush and is taken before io. Written and onFile are
// atomics, stored after the bytes they cover are in place.
//
// Stats: WriteCalls counts pwrite calls, BytesWritten the bytes handed to
// them, Fsyncs the fdatasync calls. Reservations (fallocate) are not
// counted.

func init() { Register(mustPwriteBackend(NewPwrite(PwriteOptions{}))) }

// PwriteOptions configure the pwrite backend. The zero value means the
// defaults.
type PwriteOptions struct {
	// BufferSize is the write buffer per segment (capped at the segment's
	// capacity): the most appended bytes held in memory before Append
	// writes them out, and the step in which the file is reserved ahead
	// of the tail. Default 256 KiB; 4 KiB to 1 GiB. Larger: fewer write
	// calls (one per BufferSize under async flush) and more recent bytes
	// read from memory, but more memory per open segment and, past the CPU
	// caches, slower copies; smaller: more write calls.
	BufferSize int
}

const (
	defaultPwriteBufferSize = 256 << 10
	minPwriteBufferSize     = 4 << 10
	maxPwriteBufferSize     = 1 << 30
)

// EnsureDefaults fills in zero fields.
func (o *PwriteOptions) EnsureDefaults() {
	if o.BufferSize == 0 {
		o.BufferSize = defaultPwriteBufferSize
	}
}

// Validate reports every invalid field at once.
func (o PwriteOptions) Validate() error {
	var errs []string
	if o.BufferSize < minPwriteBufferSize || o.BufferSize > maxPwriteBufferSize {
		errs = append(errs, fmt.Sprintf("BufferSize %d must be in [%d, %d]", o.BufferSize, minPwriteBufferSize, maxPwriteBufferSize))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("backend: pwrite options: %s", strings.Join(errs, "; "))
}

// String is stable, for result files.
func (o PwriteOptions) String() string { return fmt.Sprintf("buffer=%d", o.BufferSize) }

// NewPwrite returns a pwrite backend with the given options (zero fields
// take their defaults). The registered "pwrite" uses the defaults.
func NewPwrite(opts PwriteOptions) (Backend, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return pwriteBackend{opts: opts}, nil
}

func mustPwriteBackend(b Backend, err error) Backend {
	if err != nil {
		panic(err) // only reachable with invalid built-in defaults
	}
	return b
}

type pwriteBackend struct{ opts PwriteOptions }

func (pwriteBackend) Name() string { return "pwrite" }

// Stages: a pwrite segment keeps its buffer in a stage when asked
// (Config.StagePath, stage.go).
func (pwriteBackend) Stages() bool { return true }

func (b pwriteBackend) Create(cfg Config) (Segment, error) {
	if err := checkSegmentConfig("pwrite", cfg, false); err != nil {
		return nil, err
	}
	f, err := cfg.FS.Create(cfg.Path, vfs.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("backend: pwrite create: %w", err)
	}
	var reserved int64
	if cfg.Preallocate {
		if err := f.Allocate(0, cfg.Capacity); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("backend: pwrite preallocate %s: %w", cfg.Path, err)
		}
		reserved = cfg.Capacity
	}
	return newPwriteSegment(f, cfg, b.opts, 0, reserved), nil
}

func (b pwriteBackend) Open(cfg Config) (Segment, error) {
	if err := checkSegmentConfig("pwrite", cfg, true); err != nil {
		return nil, err
	}
	f, err := cfg.FS.Open(cfg.Path, vfs.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("backend: pwrite open: %w", err)
	}
	size, err := f.Size()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("backend: pwrite open %s: %w", cfg.Path, err)
	}
	if size < cfg.Written {
		_ = f.Close()
		return nil, fmt.Errorf("backend: pwrite open %s: file has %d bytes, recovery says %d are written",
			cfg.Path, size, cfg.Written)
	}
	// The file's bytes are allocated (written, or reserved by Preallocate
	// or an earlier run): reservations continue from its end.
	return newPwriteSegment(f, cfg, b.opts, cfg.Written, min(size, cfg.Capacity)), nil
}

// checkSegmentConfig checks what every backend needs of a Config (shared by
// the pwrite and mmap backends).
func checkSegmentConfig(backend string, cfg Config, open bool) error {
	var errs []string
	if cfg.FS == nil {
		errs = append(errs, "FS is nil")
	}
	if cfg.Path == "" {
		errs = append(errs, "Path is empty")
	}
	if cfg.Capacity <= 0 {
		errs = append(errs, fmt.Sprintf("Capacity %d must be positive", cfg.Capacity))
	}
	if open && (cfg.Written < 0 || cfg.Written > cfg.Capacity) {
		errs = append(errs, fmt.Sprintf("Written %d outside [0, Capacity %d]", cfg.Written, cfg.Capacity))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("backend: %s config %q: %v", backend, cfg.Path, errs)
}

// segCounters are the atomic counterpart of Stats.
type segCounters struct {
	bytesWritten, writeCalls, fsyncs, flushBatches atomic.Int64
}

func (c *segCounters) stats() Stats {
	return Stats{
		BytesWritten: c.bytesWritten.Load(),
		WriteCalls:   c.writeCalls.Load(),
		Fsyncs:       c.fsyncs.Load(),
		FlushBatches: c.flushBatches.Load(),
	}
}

// readBelow reads len(p) bytes at off from r, refusing to read at or past
// limit (it reads what lies below and returns io.EOF, as io.ReaderAt does).
func readBelow(r io.ReaderAt, p []byte, off, limit int64) (int, error) {
	p, tail, done, err := clipBelow(p, off, limit)
	if done {
		return 0, err
	}
	n, err := r.ReadAt(p, off)
	if err == nil {
		err = tail
	}
	return n, err
}

// clipBelow checks a read of p at off against limit (the tail): q is p
// cut to the bytes below limit, and tail is io.EOF when it was cut (a
// short read, as io.ReaderAt reports it). With done the read ends at once
// with (0, err): a negative offset, or nothing below limit.
func clipBelow(p []byte, off, limit int64) (q []byte, tail error, done bool, err error) {
	if off < 0 {
		return nil, nil, true, fmt.Errorf("backend: read at negative offset %d", off)
	}
	if off >= limit {
		if len(p) == 0 {
			return nil, nil, true, nil
		}
		return nil, nil, true, io.EOF
	}
	if int64(len(p)) > limit-off {
		return p[:limit-off], io.EOF, false, nil
	}
	return p, nil, false, nil
}
