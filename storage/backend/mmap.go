package backend

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/samsamq/samsa/storage/vfs"
)

// The mmap backend: the whole segment is mapped shared and read-write;
// appends are copies into the mapping, reads are copies out of it (or no
// copy at all through Bytes), and a flush is msync of the bytes appended
// since the last one (vfs.MapSyncer; File.Sync where the file offers no
// range sync). This is RocketMQ's MappedFile.
//
//   - Create reserves the full capacity with Allocate (fallocate) so that
//     a page written into the mapping never lacks disk space: on a full
//     disk a sparse mapped file would kill the process with SIGBUS instead
//     of returning ENOSPC. Only where the file system does not support
//     fallocate (EOPNOTSUPP) and Preallocate was not asked for does it fall
//     back to a sparse Truncate.
//   - Open grows a shorter file (one written by another backend) to the
//     capacity the same way and continues from cfg.Written.
//   - The file must be a vfs.Mapper (the OS and MemFS files are; errorfs
//     keeps it), or Create and Open fail.
//   - Append counts no WriteCalls: there is no system call.
//   - Prefaulting (mmap_prefault.go): a copy into a page not yet mapped
//     takes a page fault, and the first one into a fallocated block runs
//     the file system's page_mkwrite too; taken under the append lock,
//     they were half of an async writer's time. A helper goroutine per
//     writable segment keeps PrefaultAhead bytes past the tail populated
//     (madvise MADV_POPULATE_WRITE; touching the pages for read where the
//     kernel lacks it), so the appender mostly copies into mapped pages.
//     Only OS files are prefaulted (a MemFS mapping is heap memory).
//   - Page size (mmap_prefault.go): the kernel fills a mapping's page
//     cache with large folios (up to 2 MiB, grown by fault read-around)
//     and dirties a folio as a whole, so a flush writes every folio it
//     touches in full: at sync with many writers each msync of ~37 KiB of
//     records wrote ~1.2 MB. A segment whose flushes stay small
//     (SmallFlush) therefore switches the part of the mapping not yet
//     faulted in to small pages (MADV_RANDOM: no read-around, so 4 KiB
//     folios), and back when flushes grow large (async), where large
//     folios make copying faster; a full segment gets the normal advice
//     for its readers.
//
// Close stops the helper and unmaps. ReadAt and Flush after Close fail; a
// slice from Bytes must not be used after Close (the memory is gone).

func init() { Register(mustMmapBackend(NewMmap(MmapOptions{}))) }

// MmapOptions configure the mmap backend. The zero value means the
// defaults.
type MmapOptions struct {
	// PrefaultAhead is how far past the tail the helper keeps the mapping
	// populated (refilled when half is used up; a new segment starts at
	// 1 MiB and doubles per refill up to this). Default 16 MiB; negative
	// turns prefaulting off; else a multiple of 4 KiB. Larger: the helper
	// stays ahead of faster bursts, at the cost of that many dirty zero
	// pages per writable segment.
	PrefaultAhead int64
	// SmallFlush: after 4 flushes in a row below this many bytes the
	// segment's not yet faulted part switches to small pages, and after 4
	// at or above 4 times it back to the kernel's normal (large folio)
	// paging. Default 256 KiB; negative keeps the normal paging.
	SmallFlush int64
}

const (
	defaultPrefaultAhead = 16 << 20
	defaultSmallFlush    = 256 << 10
	mmapPage             = 4096
)

// EnsureDefaults fills in zero fields.
func (o *MmapOptions) EnsureDefaults() {
	if o.PrefaultAhead == 0 {
		o.PrefaultAhead = defaultPrefaultAhead
	}
	if o.SmallFlush == 0 {
		o.SmallFlush = defaultSmallFlush
	}
}

// Validate reports every invalid field at once.
func (o MmapOptions) Validate() error {
	var errs []string
	if o.PrefaultAhead > 0 && o.PrefaultAhead%mmapPage != 0 {
		errs = append(errs, fmt.Sprintf("PrefaultAhead %d must be negative or a multiple of %d", o.PrefaultAhead, mmapPage))
	}
	if o.PrefaultAhead == 0 || o.SmallFlush == 0 {
		errs = append(errs, "zero PrefaultAhead or SmallFlush (call EnsureDefaults)")
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("backend: mmap options: %s", strings.Join(errs, "; "))
}

// String is stable, for result files.
func (o MmapOptions) String() string {
	return fmt.Sprintf("prefault=%d smallflush=%d", o.PrefaultAhead, o.SmallFlush)
}

// NewMmap returns an mmap backend with the given options (zero fields
// take their defaults). The registered "mmap" uses the defaults.
func NewMmap(opts MmapOptions) (Backend, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return mmapBackend{opts: opts}, nil
}

func mustMmapBackend(b Backend, err error) Backend {
	if err != nil {
		panic(err) // only reachable with invalid built-in defaults
	}
	return b
}

type mmapBackend struct{ opts MmapOptions }

func (mmapBackend) Name() string { return "mmap" }

func (b mmapBackend) Create(cfg Config) (Segment, error) {
	if err := checkMmapConfig(cfg, false); err != nil {
		return nil, err
	}
	f, err := cfg.FS.Create(cfg.Path, vfs.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("backend: mmap create: %w", err)
	}
	return newMmapSegment(f, cfg, b.opts, 0, 0)
}

func (b mmapBackend) Open(cfg Config) (Segment, error) {
	if err := checkMmapConfig(cfg, true); err != nil {
		return nil, err
	}
	f, err := cfg.FS.Open(cfg.Path, vfs.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("backend: mmap open: %w", err)
	}
	size, err := f.Size()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("backend: mmap open %s: %w", cfg.Path, err)
	}
	if size < cfg.Written {
		_ = f.Close()
		return nil, fmt.Errorf("backend: mmap open %s: file has %d bytes, recovery says %d are written",
			cfg.Path, size, cfg.Written)
	}
	return newMmapSegment(f, cfg, b.opts, size, cfg.Written)
}

func checkMmapConfig(cfg Config, open bool) error {
	if err := checkSegmentConfig("mmap", cfg, open); err != nil {
		return err
	}
	if cfg.Capacity > math.MaxInt {
		return fmt.Errorf("backend: mmap config %q: Capacity %d does not fit a mapping", cfg.Path, cfg.Capacity)
	}
	return nil
}

// newMmapSegment reserves the file (currently size bytes) up to the
// capacity, maps it and takes ownership of f (closing it on error).
func newMmapSegment(f vfs.File, cfg Config, opts MmapOptions, size, written int64) (_ *mmapSegment, err error) {
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	mp, ok := f.(vfs.Mapper)
	if !ok {
		return nil, fmt.Errorf("backend: mmap %s: file (%T) cannot be memory-mapped", cfg.Path, f)
	}
	if size < cfg.Capacity {
		if err := f.Allocate(size, cfg.Capacity-size); err != nil {
			if cfg.Preallocate || !errors.Is(err, syscall.EOPNOTSUPP) {
				return nil, fmt.Errorf("backend: mmap reserve %s: %w", cfg.Path, err)
			}
			if err := f.Truncate(cfg.Capacity); err != nil {
				return nil, fmt.Errorf("backend: mmap size %s: %w", cfg.Path, err)
			}
		}
	}
	data, err := mp.Map(int(cfg.Capacity))
	if err != nil {
		return nil, fmt.Errorf("backend: mmap %s: %w", cfg.Path, err)
	}
	s := &mmapSegment{f: f, mp: mp, path: cfg.Path, capacity: cfg.Capacity}
	s.ms, _ = f.(vfs.MapSyncer)
	s.mapping.data = data
	s.written.Store(written)
	// The first Flush after Open syncs [0, written): recovered bytes may be
	// only in the page cache.
	s.startPaging(opts, f.Fd() != vfs.InvalidFd)
	return s, nil
}

type mmapSegment struct {
	f        vfs.File
	mp       vfs.Mapper
	ms       vfs.MapSyncer // nil: Flush uses File.Sync
	path     string
	capacity int64

	// mapping guards the mapping's life: readers, the appender and the
	// flusher hold it shared, Close exclusively (so a read after Close is
	// an error, not a segfault).
	mapping struct {
		sync.RWMutex
		data []byte // nil once closed
	}
	written  atomic.Int64
	appendMu sync.Mutex // see pwriteSegment.appendMu

	flush struct {
		sync.Mutex
		durable int64
		err     error
	}
	pg paging // prefaulting and page-size advice (mmap_prefault.go)
	c  segCounters
}

var errSegmentClosed = errors.New("backend: segment closed")

func (s *mmapSegment) Append(p []byte) error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.mapping.RLock()
	defer s.mapping.RUnlock()
	if s.mapping.data == nil {
		return errSegmentClosed
	}
	w := s.written.Load()
	if int64(len(p)) > s.capacity-w {
		return ErrSegmentFull
	}
	copy(s.mapping.data[w:], p)
	s.c.bytesWritten.Add(int64(len(p)))
	s.written.Store(w + int64(len(p)))
	s.pg.appended(w + int64(len(p)))
	return nil
}

// ReadsMapped: reads are copies from the mapping (MappedReader).
func (s *mmapSegment) ReadsMapped() bool { return true }

func (s *mmapSegment) ReadAt(p []byte, off int64) (int, error) {
	s.mapping.RLock()
	defer s.mapping.RUnlock()
	if s.mapping.data == nil {
		return 0, errSegmentClosed
	}
	return readBelow(mappingReader(s.mapping.data), p, off, s.written.Load())
}

type mappingReader []byte

func (m mappingReader) ReadAt(p []byte, off int64) (int, error) {
	n := copy(p, m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Bytes returns the n bytes at off without copying: a slice of the
// mapping, valid until Close, which the caller must not modify. It returns
// nil unless [off, off+n) lies below Written. Callers find it by type
// assertion: seg.(interface{ Bytes(off, n int64) []byte }).
func (s *mmapSegment) Bytes(off, n int64) []byte {
	s.mapping.RLock()
	defer s.mapping.RUnlock()
	if s.mapping.data == nil || off < 0 || n < 0 || off+n > s.written.Load() {
		return nil
	}
	return s.mapping.data[off : off+n : off+n]
}

// WriteOut has nothing to do: Append copies into a shared mapping, that
// is into the page cache, so every appended byte is already the kernel's.
func (s *mmapSegment) WriteOut() (int64, error) {
	s.mapping.RLock()
	defer s.mapping.RUnlock()
	if s.mapping.data == nil {
		return 0, errSegmentClosed
	}
	return s.written.Load(), nil
}

func (s *mmapSegment) Flush() (int64, error) {
	s.flush.Lock()
	defer s.flush.Unlock()
	if s.flush.err != nil {
		return s.flush.durable, s.flush.err
	}
	w := s.written.Load()
	if w == s.flush.durable {
		return w, nil
	}
	s.mapping.RLock()
	defer s.mapping.RUnlock()
	if s.mapping.data == nil {
		return s.flush.durable, errSegmentClosed
	}
	s.c.flushBatches.Add(1)
	s.c.fsyncs.Add(1)
	var err error
	if s.ms != nil {
		// Only the bytes appended since the last flush: never the tail an
		// appender may be copying into right now.
		err = s.ms.SyncMapped(s.mapping.data, s.flush.durable, w-s.flush.durable)
	} else {
		err = s.f.Sync()
	}
	if err != nil {
		s.flush.err = fmt.Errorf("backend: mmap flush %s: %w", s.path, err)
		return s.flush.durable, s.flush.err
	}
	s.pg.flushed(s.mapping.data, w-s.flush.durable, w, s.capacity)
	s.flush.durable = w
	return w, nil
}

func (s *mmapSegment) Written() int64  { return s.written.Load() }
func (s *mmapSegment) Capacity() int64 { return s.capacity }
func (s *mmapSegment) Stats() Stats    { return s.c.stats() }

func (s *mmapSegment) Close() error {
	s.pg.stop()
	s.mapping.Lock()
	defer s.mapping.Unlock()
	if s.mapping.data == nil {
		return errSegmentClosed
	}
	err := s.mp.Unmap(s.mapping.data)
	s.mapping.data = nil
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backend: mmap close %s: %w", s.path, err)
	}
	return nil
}
