package backend

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/samsamq/samsa/storage/vfs"
)

// The pwrite backend: buffered writes into the page cache, fdatasync to
// flush.
//
//   - Append is one File.WriteAt (pwrite) at the tail. The bytes are in the
//     page cache when it returns, so ReadAt (pread) sees them.
//   - Flush is one File.Sync (fdatasync), run outside the append lock. It
//     reads Written before the sync starts and reports exactly that as
//     durable: anything appended while the sync runs waits for the next one.
//   - Open continues from cfg.Written; bytes beyond it are garbage that later
//     appends overwrite (nothing is truncated, which keeps a preallocated
//     file preallocated).
//
// Without Preallocate the file grows with the writes; with it the whole
// capacity is reserved with fallocate at create, so a later write cannot
// fail with ENOSPC and fdatasync need not update the file's size.

func init() { Register(pwriteBackend{}) }

type pwriteBackend struct{}

func (pwriteBackend) Name() string { return "pwrite" }

func (pwriteBackend) Create(cfg Config) (Segment, error) {
	if err := checkSegmentConfig("pwrite", cfg, false); err != nil {
		return nil, err
	}
	f, err := cfg.FS.Create(cfg.Path, vfs.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("backend: pwrite create: %w", err)
	}
	if cfg.Preallocate {
		if err := f.Allocate(0, cfg.Capacity); err != nil {
			f.Close()
			return nil, fmt.Errorf("backend: pwrite preallocate %s: %w", cfg.Path, err)
		}
	}
	return newPwriteSegment(f, cfg, 0), nil
}

func (pwriteBackend) Open(cfg Config) (Segment, error) {
	if err := checkSegmentConfig("pwrite", cfg, true); err != nil {
		return nil, err
	}
	f, err := cfg.FS.Open(cfg.Path, vfs.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("backend: pwrite open: %w", err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("backend: pwrite open %s: %w", cfg.Path, err)
	}
	if size < cfg.Written {
		f.Close()
		return nil, fmt.Errorf("backend: pwrite open %s: file has %d bytes, recovery says %d are written",
			cfg.Path, size, cfg.Written)
	}
	return newPwriteSegment(f, cfg, cfg.Written), nil
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

type pwriteSegment struct {
	f        vfs.File
	path     string
	capacity int64

	// written is the tail: stored by Append (under appendMu), loaded by
	// anyone.
	written atomic.Int64
	// appendMu makes a misuse (two concurrent appenders) safe rather than
	// silently interleaved; the CommitLog's own lock means it is never
	// contended.
	appendMu sync.Mutex

	// flush serialises Flush calls and holds the sticky error.
	flush struct {
		sync.Mutex
		durable int64
		err     error
	}
	c segCounters
}

func newPwriteSegment(f vfs.File, cfg Config, written int64) *pwriteSegment {
	s := &pwriteSegment{f: f, path: cfg.Path, capacity: cfg.Capacity}
	s.written.Store(written)
	// Bytes recovered at Open may still be only in the page cache (a
	// process crash, not a power loss): the first Flush syncs them.
	return s
}

func (s *pwriteSegment) Append(p []byte) error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	w := s.written.Load()
	if int64(len(p)) > s.capacity-w {
		return ErrSegmentFull
	}
	if len(p) == 0 {
		return nil
	}
	n, err := s.f.WriteAt(p, w)
	s.c.writeCalls.Add(1)
	s.c.bytesWritten.Add(int64(n))
	if err != nil {
		// The tail does not move: a partial write is garbage beyond
		// Written, overwritten by the next append.
		return fmt.Errorf("backend: pwrite %s at %d: %w", s.path, w, err)
	}
	if n != len(p) {
		return fmt.Errorf("backend: pwrite %s at %d: short write %d of %d: %w", s.path, w, n, len(p), io.ErrShortWrite)
	}
	s.written.Store(w + int64(n))
	return nil
}

func (s *pwriteSegment) ReadAt(p []byte, off int64) (int, error) {
	return readBelow(s.f, p, off, s.written.Load())
}

// readBelow reads len(p) bytes at off from r, refusing to read at or past
// limit (it reads what lies below and returns io.EOF, as io.ReaderAt does).
func readBelow(r io.ReaderAt, p []byte, off, limit int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("backend: read at negative offset %d", off)
	}
	if off >= limit {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	short := false
	if int64(len(p)) > limit-off {
		p = p[:limit-off]
		short = true
	}
	n, err := r.ReadAt(p, off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

func (s *pwriteSegment) Flush() (int64, error) {
	s.flush.Lock()
	defer s.flush.Unlock()
	if s.flush.err != nil {
		return s.flush.durable, s.flush.err
	}
	// Read the tail before the sync: fdatasync covers at least every byte
	// written before it started, and possibly more, never less.
	w := s.written.Load()
	if w == s.flush.durable {
		return w, nil
	}
	s.c.flushBatches.Add(1)
	s.c.fsyncs.Add(1)
	if err := s.f.Sync(); err != nil {
		s.flush.err = fmt.Errorf("backend: pwrite fdatasync %s: %w", s.path, err)
		return s.flush.durable, s.flush.err
	}
	s.flush.durable = w
	return w, nil
}

func (s *pwriteSegment) Written() int64  { return s.written.Load() }
func (s *pwriteSegment) Capacity() int64 { return s.capacity }
func (s *pwriteSegment) Stats() Stats    { return s.c.stats() }
func (s *pwriteSegment) Close() error    { return s.f.Close() }
