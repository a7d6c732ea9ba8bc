package backend

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/samsamq/samsa/storage/vfs"
)

// directSegment is the segment of the odirect and uring backends: the
// append ring, the flush plan and the read path (see odirect.go); only the
// executor differs.
type directSegment struct {
	name     string // backend name, for errors
	f        vfs.File
	fs       vfs.FS
	path     string
	capacity int64
	opts     ODirectOptions
	// stagePath: keep the ring in a stage there (odirect_stage.go). st is
	// that stage once the first Append made it; the ring's memory is then
	// its buffer. The appender owns both (changing st also holds io and
	// ringMu); hdrBase is the base it last stored in the stage's header.
	stagePath string
	st        *stage
	hdrBase   int64
	wb        writeBehind
	// flushMu serialises a staging segment's Flush, whose fdatasync runs
	// outside io (odirect_stage.go).
	flushMu sync.Mutex

	ring appendRing
	// written is the tail; onDisk is block-aligned and every block below
	// it is in the file: the ring holds [onDisk, written).
	written atomic.Int64
	onDisk  atomic.Int64
	closed  atomic.Bool

	// appendMu serialises Append and Seal (the CommitLog's lock makes it
	// uncontended). saved is a spilling Append's copy of the tail block;
	// sealed: Seal ran, nothing is appended again.
	appendMu sync.Mutex
	saved    []byte
	sealed   bool

	// ringMu: readers of ring memory hold it shared; moving onDisk holds
	// it exclusively (see odirect.go).
	ringMu sync.RWMutex

	// send is a buffered, read-only descriptor of the file for sendfile
	// (filesource.go), which cannot read an O_DIRECT one at record
	// offsets: opened on the first DupFile, closed by Close.
	send struct {
		sync.Mutex
		f vfs.File
	}

	// io serialises disk writes (Flush, spills) and owns their state.
	io struct {
		sync.Mutex
		exec    directIO
		bounce  []byte // aligned, StageSize: the copy of small flushes and of the tail block
		ws      []blockWrite
		durable int64
		handed  int64 // every byte below it was written by a WriteOut or Flush
		hwm     int64 // end of the highest block written (zero-ahead starts here)
		err     error // sticky flush error
	}
	zeros   []byte    // aligned zeros for ZeroAhead, nil when off
	scratch sync.Pool // *[]byte, aligned readChunk bytes for disk reads
	c       segCounters
}

const readChunk = 128 << 10

// newDirectSegment takes ownership of f (closing it on error), continues
// from written, reloading its partial block from the file, and then makes
// the executor with newExec (which may use the segment's buffers).
func newDirectSegment(name string, f vfs.File, cfg Config, opts ODirectOptions, written int64,
	newExec func(s *directSegment) (directIO, error)) (*directSegment, error) {
	s := &directSegment{name: name, f: f, fs: cfg.FS, path: cfg.Path, capacity: cfg.Capacity, opts: opts, stagePath: cfg.StagePath}
	if written < cfg.Capacity {
		// A full segment (an older one, opened by recovery for reads)
		// needs no buffers: it will not be written again. A staging one
		// holds its tail block on the heap until the first Append moves
		// it into the stage.
		ringSize := opts.BufferSize
		if s.stagePath != "" {
			ringSize = blockSize
		}
		s.ring = appendRing{buf: alignedBytes(ringSize)}
		s.io.bounce = alignedBytes(opts.StageSize)
		if opts.ZeroAhead > 0 {
			s.zeros = alignedBytes(int(min(opts.ZeroAhead, 1<<20)))
		}
	}
	s.scratch.New = func() any { b := alignedBytes(readChunk); return &b }
	a := alignDown(written)
	if written > a {
		blk := alignedBytes(blockSize)
		if n, err := f.ReadAt(blk, a); int64(n) < written-a {
			_ = f.Close()
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("backend: %s open %s: reload tail block at %d: %w", name, cfg.Path, a, err)
		}
		s.ring.copyIn(a, blk[:written-a])
	}
	s.written.Store(written)
	s.onDisk.Store(a)
	s.io.hwm = alignUp(written)
	// durable starts at 0: the first Flush after Open syncs what recovery
	// found (it may be in a device cache only).
	exec, err := newExec(s)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	s.io.exec = exec
	return s, nil
}

func (s *directSegment) Append(p []byte) error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.closed.Load() {
		return errSegmentClosed
	}
	w := s.written.Load()
	if int64(len(p)) > s.capacity-w {
		return ErrSegmentFull
	}
	if len(p) == 0 {
		return nil
	}
	if s.sealed {
		return errSegmentSealed
	}
	if s.stagePath != "" && s.st == nil {
		if err := s.openStage(w); err != nil {
			return err
		}
	}
	to, saved := w, false // the bytes below to are copied
	for len(p) > 0 {
		d := s.onDisk.Load()
		room := d + s.ring.size() - to
		if room <= 0 && s.st != nil && s.awaitWriteBehind(d) {
			continue
		}
		if room <= 0 {
			if !saved {
				s.saveTailBlock(w)
				saved = true
			}
			if s.st != nil {
				s.st.setWritten(to) // the header covers what the spill frees
			}
			if err := s.spill(to); err != nil {
				s.restore(w)
				return fmt.Errorf("backend: %s %s: append at %d: write out full buffer: %w", s.name, s.path, w, err)
			}
			continue
		}
		if s.st != nil && d > s.hdrBase {
			// The room below d is about to be reused: the header must
			// stop claiming it first.
			s.st.setBase(d)
			s.hdrBase = d
		}
		n := min(room, int64(len(p)))
		s.ring.copyIn(to, p[:n])
		to += n
		p = p[n:]
	}
	if s.st != nil {
		s.st.setWritten(to)
		s.written.Store(to)
		s.kickWriteBehind(to)
		return nil
	}
	s.written.Store(to)
	return nil
}

// saveTailBlock keeps the bytes [alignDown(w), w) before a spill may let
// the appender reuse their ring slot.
func (s *directSegment) saveTailBlock(w int64) {
	if s.saved == nil {
		s.saved = make([]byte, blockSize)
	}
	a := alignDown(w)
	s.ring.copyOut(s.saved[:w-a], a)
}

// spill writes the ring's full blocks below to (bytes copied but not
// yet published as Written count: they are garbage past the tail until
// the Append succeeds) without a sync, freeing ring room.
func (s *directSegment) spill(to int64) error {
	s.io.Lock()
	defer s.io.Unlock()
	return s.spillLocked(to)
}

// spillLocked is spill with io held (the write-behind's too).
func (s *directSegment) spillLocked(to int64) error {
	d, end := s.onDisk.Load(), alignDown(to)
	if end <= d {
		return nil // the flusher freed room meanwhile
	}
	ws := s.ring.writes(s.io.ws[:0], d, end)
	s.io.ws = ws[:0]
	if err := s.io.exec.write(ws, false); err != nil {
		return err
	}
	s.io.hwm = max(s.io.hwm, end)
	s.moveOnDisk(end)
	return nil
}

// restore undoes a failed spilling Append whose earlier spills moved
// onDisk past the block holding w: it puts that block's bytes back into
// the ring and onDisk back to its start, so the ring holds [onDisk, w)
// again. The file's blocks from there on hold w's bytes below w and
// garbage above, which the next Flush rewrites. A stage's header is put
// back to [onDisk, w) too, never claiming room being refilled.
func (s *directSegment) restore(w int64) {
	a := alignDown(w)
	s.io.Lock()
	defer s.io.Unlock()
	if s.onDisk.Load() <= a {
		// The block's slot was never reused, nor any below it the header
		// claims (it stopped at the base it set before reusing room).
		if s.st != nil {
			s.st.setWritten(w)
		}
		return
	}
	if s.st != nil {
		// The spill that moved onDisk past a wrote every byte below w to
		// the file: the header may claim nothing meanwhile (a base at or
		// past written).
		s.st.setBase(max(s.hdrBase, s.st.hdr.written))
		s.st.setWritten(w)
	}
	s.ringMu.Lock()
	s.ring.copyIn(a, s.saved[:w-a])
	s.onDisk.Store(a)
	s.ringMu.Unlock()
	if s.st != nil {
		s.st.setBase(a)
		s.hdrBase = a
	}
}

// moveOnDisk raises onDisk (io held), waiting for readers of the ring
// slots it frees. Once the whole segment is on disk it drops the buffers
// (unless it stages): nothing reads the ring at or past the capacity, and
// nothing appends.
func (s *directSegment) moveOnDisk(to int64) {
	if to <= s.onDisk.Load() {
		return
	}
	// A staging segment keeps its ring (the stage) until Seal or Close:
	// only the appender may let the stage go.
	release := to == s.capacity && s.stagePath == ""
	s.ringMu.Lock()
	s.onDisk.Store(to)
	if release {
		s.ring.buf = nil
	}
	s.ringMu.Unlock()
	if release {
		s.io.bounce, s.zeros = nil, nil
		s.io.exec.release()
	}
}

func (s *directSegment) Flush() (int64, error) {
	if s.closed.Load() {
		return 0, errSegmentClosed
	}
	if s.stagePath != "" {
		return s.flushStaged()
	}
	s.io.Lock()
	defer s.io.Unlock()
	if s.io.err != nil {
		return s.io.durable, s.io.err
	}
	// Load the tail before planning: every byte below it is in the ring
	// or the file, and the flush covers exactly that.
	w := s.written.Load()
	if w == s.io.durable {
		return w, nil
	}
	s.c.flushBatches.Add(1)
	if err := s.writeLocked(w, true); err != nil {
		return s.io.durable, err
	}
	s.io.durable = w
	return w, nil
}

// WriteOut writes every block through the one holding the tail (the same
// writes as Flush, no fdatasync): with O_DIRECT the bytes are then on the
// device, out of the process.
func (s *directSegment) WriteOut() (int64, error) {
	if s.closed.Load() {
		return 0, errSegmentClosed
	}
	s.io.Lock()
	defer s.io.Unlock()
	if s.io.err != nil {
		return s.io.handed, s.io.err
	}
	w := s.written.Load()
	if w <= s.io.handed {
		return s.io.handed, nil
	}
	if err := s.writeLocked(w, false); err != nil {
		return s.io.handed, err
	}
	return w, nil
}

// writeLocked writes what lies between the last write-out and w (nothing
// if a WriteOut covered it), then fdatasyncs if sync; io held. An error
// is sticky.
func (s *directSegment) writeLocked(w int64, sync bool) error {
	var ws []blockWrite
	onDisk, hwm := s.onDisk.Load(), s.io.hwm
	if w > s.io.handed {
		ws, onDisk = s.planFlushLocked(w)
		ws, hwm = s.zeroAheadLocked(ws, w)
	}
	s.io.ws = ws[:0]
	if err := s.io.exec.write(ws, sync); err != nil {
		op := "write out"
		if sync {
			op = "flush"
		}
		s.io.err = fmt.Errorf("backend: %s %s %s to %d: %w", s.name, op, s.path, w, err)
		return s.io.err
	}
	s.io.hwm = hwm
	s.moveOnDisk(onDisk)
	s.io.handed = max(s.io.handed, w)
	return nil
}

// planFlushLocked returns the writes that put every byte below w in the
// file, and the onDisk that holds once they succeed.
func (s *directSegment) planFlushLocked(w int64) ([]blockWrite, int64) {
	ws := s.io.ws[:0]
	d, a := s.onDisk.Load(), alignDown(w)
	if d > a || d == w {
		return ws, d // spills already wrote every block below w
	}
	bb := s.io.bounce
	if span := alignUp(w) - d; span <= int64(len(bb)) {
		s.ring.copyOut(bb[:w-d], d)
		clear(bb[w-d : span])
		return append(ws, blockWrite{buf: bb[:span:span], off: d}), a
	}
	ws = s.ring.writes(ws, d, a)
	if w > a {
		s.ring.copyOut(bb[:w-a], a)
		clear(bb[w-a : blockSize])
		ws = append(ws, blockWrite{buf: bb[:blockSize:blockSize], off: a})
	}
	return ws, a
}

// zeroAheadLocked appends the zero writes that keep ZeroAhead bytes past
// the tail written, when fewer than half are, and returns the high-water
// mark after the batch.
func (s *directSegment) zeroAheadLocked(ws []blockWrite, w int64) ([]blockWrite, int64) {
	from := max(s.io.hwm, alignUp(w), s.onDisk.Load())
	if s.zeros == nil || from-alignUp(w) >= s.opts.ZeroAhead/2 || from >= s.capacity {
		return ws, from
	}
	to := min(s.capacity, alignUp(w)+s.opts.ZeroAhead)
	for off := from; off < to; {
		n := min(to-off, int64(len(s.zeros)))
		ws = append(ws, blockWrite{buf: s.zeros[:n:n], off: off})
		off += n
	}
	return ws, to
}

func (s *directSegment) ReadAt(p []byte, off int64) (int, error) {
	if s.closed.Load() {
		return 0, errSegmentClosed
	}
	limit := s.written.Load()
	p, eof, done, err := clipBelow(p, off, limit)
	if done {
		return 0, err
	}
	end := off + int64(len(p))
	s.ringMu.RLock()
	if s.closed.Load() { // Close may be dropping the ring (a stage's mapping)
		s.ringMu.RUnlock()
		return 0, errSegmentClosed
	}
	d := s.onDisk.Load()
	if end > d {
		lo := max(off, d)
		s.ring.copyOut(p[lo-off:], lo)
	}
	s.ringMu.RUnlock()
	if off < d {
		// Blocks below onDisk are never written again (but for the one a
		// failed spill gives back, whose bytes below the tail do not
		// change), so reading them outside the lock is safe.
		if n, err := s.readDisk(p[:min(end, d)-off], off); err != nil {
			return n, fmt.Errorf("backend: %s read %s at %d: %w", s.name, s.path, off+int64(n), err)
		}
	}
	return len(p), eof
}

// readDisk fills p from the file at off with aligned reads through a
// scratch buffer.
func (s *directSegment) readDisk(p []byte, off int64) (int, error) {
	bp := s.scratch.Get().(*[]byte)
	defer s.scratch.Put(bp)
	buf, done := *bp, 0
	for done < len(p) {
		at := off + int64(done)
		start := alignDown(at)
		skip := at - start
		n := min(int64(len(buf)), alignUp(off+int64(len(p)))-start)
		k, err := s.f.ReadAt(buf[:n], start)
		want := min(n, skip+int64(len(p)-done))
		if int64(k) < want {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
		done += copy(p[done:], buf[skip:want])
	}
	return done, nil
}

func (s *directSegment) Written() int64  { return s.written.Load() }
func (s *directSegment) Capacity() int64 { return s.capacity }
func (s *directSegment) Stats() Stats    { return s.c.stats() }

// Close releases the file and the ring. A staging segment first writes
// out what its stage holds (unless a write or flush failed: the file is
// then left as the failure left it) and removes the stage once the file
// has every byte; a stage it keeps is replayed by the next Open.
func (s *directSegment) Close() error {
	if s.closed.Swap(true) {
		return errSegmentClosed
	}
	s.stopWriteBehind()
	s.io.Lock()
	defer s.io.Unlock()
	var err, stErr error
	if s.st != nil {
		if w := s.written.Load(); s.io.err == nil && w > s.io.handed {
			err = s.writeLocked(w, false)
		}
		stErr = s.dropStageLocked(err == nil && s.io.err == nil)
	}
	return errors.Join(err, stErr, s.io.exec.close(), s.closeSendFile(), s.f.Close())
}
