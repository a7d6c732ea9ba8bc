package backend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/samsamq/samsa/storage/vfs"
)

// The odirect backend: O_DIRECT writes of 4 KiB-aligned blocks from an
// in-memory append buffer, fdatasync to flush. Nothing goes through the
// page cache, so a flush costs the device's write and nothing else, and
// the kernel holds no dirty pages of the log.
//
// Memory: each segment owns an append buffer, a ring of BufferSize bytes
// (4 KiB-aligned, from the Go heap) holding the file bytes [onDisk, Written)
// at offset off % BufferSize, where onDisk is block-aligned and every block
// below it is written to the file in full. Append copies into the ring and
// never does I/O while the ring has room. Flush writes the blocks from
// onDisk through the block holding the tail, then fdatasyncs; the partial
// last block stays in the ring (onDisk stops at its start) and is rewritten
// in place, with more bytes, by the next Flush. Its bytes below the tail
// are the same in every version, so a torn or lost rewrite cannot harm what
// an earlier Flush reported durable.
//
//   - A flush whose aligned range fits StageSize is copied into one bounce
//     buffer and written with one call (one device round trip). A larger
//     one writes its full blocks straight from the ring (two calls where the
//     ring wraps) and its partial tail block from the bounce buffer: the
//     flusher never hands the kernel ring memory the appender may be
//     writing (the bytes past the tail in the tail block).
//   - An Append that does not fit the ring's free room writes the ring's
//     full blocks first ("spill", no sync) and carries on; so any append
//     size works with a bounded buffer. Only then does Append wait for the
//     disk. If a spill fails, Written does not move and the ring is put back
//     as it was.
//   - Reads of bytes at or past onDisk are copies from the ring; reads below
//     are O_DIRECT reads (aligned, through a pooled scratch buffer) on the
//     same descriptor. We chose this over a second, buffered descriptor:
//     one descriptor, the page cache stays out of the log both ways, and
//     MemFS checks the read path's alignment too. The price is no readahead
//     for reads behind the buffer; the CommitLog reads the recent bytes,
//     which the ring holds.
//   - Create opens with vfs.OpenOptions{Direct: true} and reserves the
//     whole capacity with Allocate (fallocate); Open grows a shorter file
//     the same way and reloads the partial tail block from the file.
//     Capacity must be a multiple of vfs.DirectAlignment. A file system
//     that refuses O_DIRECT makes Create and Open fail with an error
//     wrapping vfs.ErrDirectUnsupported; there is no buffered fallback.
//   - Memory: an open segment holds BufferSize (StagedRingSize of page
//     cache instead when it stages) + StageSize (+ 1 MiB of
//     zeros with ZeroAhead) until it is full and flushed; then it drops
//     them, and a full segment opens without any, so the CommitLog's
//     older segments, open for reads, cost no buffers.
//   - Stage (Config.StagePath): the ring is the buffer of a stage file's
//     shared mapping instead of heap memory, so an append is in the kernel
//     once copied, and a write-behind goroutine writes the full blocks
//     while the appender fills the rest (odirect_stage.go).
//   - ZeroAhead (off by default) keeps the file written with zeros some way
//     past the tail, so the extents the log writes next are already
//     "written" rather than fallocate's "unwritten" and fdatasync need not
//     commit their conversion: more bytes written, fewer journal commits.
//
// Locks, in order: io (serialises disk writes: Flush and spills; holds the
// sticky error), then ringMu (readers of the ring hold it shared; moving
// onDisk, which frees ring room, holds it exclusively, so a slot is never
// reused under a reader). appendMu serialises Append and is never taken
// by the flusher. Written and onDisk are atomics: Append stores Written
// after copying (readers and the flusher load it before reading below it).
//
// Stats: WriteCalls counts pwrite calls (Flush and spills), BytesWritten
// every byte handed to them (tail rewrites and zeros included), Fsyncs the
// fdatasync calls.

func init() { Register(mustDirectBackend(NewODirect(ODirectOptions{}))) }

// ODirectOptions configure the odirect backend (and the uring backend,
// which shares its memory layout). The zero value means the defaults.
type ODirectOptions struct {
	// BufferSize is the append buffer per segment: the most appended bytes
	// held in memory beyond the last full block on disk. Default 4 MiB; a
	// multiple of vfs.DirectAlignment, two blocks to 1 GiB. Larger: more
	// appends between flushes without the appender writing, and more recent
	// bytes read from memory; smaller: less memory per open segment.
	BufferSize int
	// StageSize is the largest flush copied into one bounce buffer and
	// written with one call (not to be confused with a stage file,
	// Config.StagePath). Default 64 KiB; a multiple of
	// vfs.DirectAlignment up to 1 GiB. Larger: fewer write calls for mid-size flushes,
	// at the cost of a second memcpy of the flushed bytes.
	StageSize int
	// StagedRingSize is the append ring of a segment that stages
	// (Config.StagePath): its stage's buffer, capped at the segment's
	// capacity. Default 64 MiB; a multiple of vfs.DirectAlignment, two
	// blocks to 1 GiB. The write-behind starts writing once an eighth of
	// it waits, so it also sets the size of the O_DIRECT writes (8 MiB by
	// default). Larger: larger device writes and more room for the
	// appender to run ahead of the disk in a burst; it is page cache (a
	// shared mapping of the stage file), not heap, and the stage file
	// takes that much disk. Smaller: less of both.
	//
	// 1 KiB async appends, one writer, 3 s rounds alternated with pwrite
	// on this repository's 2-vCPU VM (a virtio disk that takes 400-550
	// MB/s of 2 MiB O_DIRECT writes): a 4 MiB ring written at half gave
	// 0.71-0.77x pwrite's msgs/s, 16 MiB at an eighth 0.69-1.03x, 64 MiB
	// at an eighth 0.86-1.21x.
	StagedRingSize int
	// ZeroAhead, if positive, keeps the file written with zeros this many
	// bytes past the tail (refilled when half is used up). Default 0 (off);
	// a multiple of vfs.DirectAlignment. It doubles the bytes written to
	// spare fdatasync the extent-conversion journal commit.
	ZeroAhead int64
}

const (
	defaultDirectBufferSize = 4 << 20
	defaultDirectStageSize  = 64 << 10
	defaultStagedRingSize   = 64 << 20
	maxDirectBuffer         = 1 << 30 // one write call or io_uring op must stay below 2 GiB
)

// EnsureDefaults fills in zero fields.
func (o *ODirectOptions) EnsureDefaults() {
	if o.BufferSize == 0 {
		o.BufferSize = defaultDirectBufferSize
	}
	if o.StageSize == 0 {
		o.StageSize = defaultDirectStageSize
	}
	if o.StagedRingSize == 0 {
		o.StagedRingSize = defaultStagedRingSize
	}
}

// Validate reports every invalid field at once.
func (o ODirectOptions) Validate() error {
	var errs []string
	const a = vfs.DirectAlignment
	if o.BufferSize < 2*a || o.BufferSize > maxDirectBuffer || o.BufferSize%a != 0 {
		errs = append(errs, fmt.Sprintf("BufferSize %d must be a multiple of %d in [%d, %d]", o.BufferSize, a, 2*a, maxDirectBuffer))
	}
	if o.StageSize < a || o.StageSize > maxDirectBuffer || o.StageSize%a != 0 {
		errs = append(errs, fmt.Sprintf("StageSize %d must be a multiple of %d in [%d, %d]", o.StageSize, a, a, maxDirectBuffer))
	}
	if o.StagedRingSize < 2*a || o.StagedRingSize > maxDirectBuffer || o.StagedRingSize%a != 0 {
		errs = append(errs, fmt.Sprintf("StagedRingSize %d must be a multiple of %d in [%d, %d]", o.StagedRingSize, a, 2*a, maxDirectBuffer))
	}
	if o.ZeroAhead < 0 || o.ZeroAhead%a != 0 {
		errs = append(errs, fmt.Sprintf("ZeroAhead %d must be a non-negative multiple of %d", o.ZeroAhead, a))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("backend: odirect options: %s", strings.Join(errs, "; "))
}

// String is stable, for result files.
func (o ODirectOptions) String() string {
	return fmt.Sprintf("buffer=%d stage=%d stagedring=%d zeroahead=%d", o.BufferSize, o.StageSize, o.StagedRingSize, o.ZeroAhead)
}

// NewODirect returns an odirect backend with the given options (zero
// fields take their defaults). The registered "odirect" uses the defaults.
func NewODirect(opts ODirectOptions) (Backend, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return odirectBackend{opts: opts}, nil
}

func mustDirectBackend(b Backend, err error) Backend {
	if err != nil {
		panic(err) // only reachable with invalid built-in defaults
	}
	return b
}

type odirectBackend struct{ opts ODirectOptions }

func (odirectBackend) Name() string { return "odirect" }

// Stages: an odirect segment keeps its append ring in a stage when asked
// (Config.StagePath, odirect_stage.go).
func (odirectBackend) Stages() bool { return true }

func (b odirectBackend) Create(cfg Config) (Segment, error) {
	f, err := createDirectFile("odirect", cfg, true)
	if err != nil {
		return nil, err
	}
	return newDirectSegment("odirect", f, cfg, b.opts, 0, newPwriteIO)
}

func (b odirectBackend) Open(cfg Config) (Segment, error) {
	f, err := openDirectFile("odirect", cfg, true)
	if err != nil {
		return nil, err
	}
	return newDirectSegment("odirect", f, cfg, b.opts, cfg.Written, newPwriteIO)
}

// checkDirectConfig adds the block alignment of the capacity to the
// common checks.
func checkDirectConfig(name string, cfg Config, open bool) error {
	if err := checkSegmentConfig(name, cfg, open); err != nil {
		return err
	}
	if cfg.Capacity%vfs.DirectAlignment != 0 {
		return fmt.Errorf("backend: %s config %q: Capacity %d must be a multiple of %d",
			name, cfg.Path, cfg.Capacity, vfs.DirectAlignment)
	}
	return nil
}

// createDirectFile creates the segment file (O_DIRECT if direct) and
// reserves its capacity.
func createDirectFile(name string, cfg Config, direct bool) (vfs.File, error) {
	if err := checkDirectConfig(name, cfg, false); err != nil {
		return nil, err
	}
	f, err := cfg.FS.Create(cfg.Path, vfs.OpenOptions{Direct: direct})
	if err != nil {
		return nil, directOpenError(name, "create", cfg.Path, err)
	}
	if err := f.Allocate(0, cfg.Capacity); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("backend: %s preallocate %s: %w", name, cfg.Path, err)
	}
	return f, nil
}

// openDirectFile opens an existing segment file, checks it holds
// cfg.Written bytes and reserves the capacity if the file is shorter.
func openDirectFile(name string, cfg Config, direct bool) (vfs.File, error) {
	if err := checkDirectConfig(name, cfg, true); err != nil {
		return nil, err
	}
	f, err := cfg.FS.Open(cfg.Path, vfs.OpenOptions{Direct: direct})
	if err != nil {
		return nil, directOpenError(name, "open", cfg.Path, err)
	}
	size, err := f.Size()
	if err == nil && size < cfg.Written {
		err = fmt.Errorf("file has %d bytes, recovery says %d are written", size, cfg.Written)
	}
	if err == nil && size < cfg.Capacity {
		err = f.Allocate(size, cfg.Capacity-size)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("backend: %s open %s: %w", name, cfg.Path, err)
	}
	return f, nil
}

func directOpenError(name, op, path string, err error) error {
	if errors.Is(err, vfs.ErrDirectUnsupported) {
		return fmt.Errorf("backend: %s %s %s: the file system refuses O_DIRECT (choose the pwrite or mmap backend there): %w",
			name, op, path, err)
	}
	return fmt.Errorf("backend: %s %s: %w", name, op, err)
}
