package backend

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/samsamq/samsa/storage/vfs"
)

// pwriteSegment is the pwrite backend's segment (see pwrite.go).
type pwriteSegment struct {
	f    vfs.File
	fs   vfs.FS
	path string
	// stagePath: keep the buffer in a stage there (stage.go); stage is
	// it once the buffer exists (under io and bufMu exclusively, like buf).
	stagePath string
	stage     *stage
	// ring is a staging segment's buffer (pwrite_stage.go), ringSize its
	// size once made, hdrBase the base the appender last stored in the
	// stage's header, wb its write-behind; buf stays nil then.
	ring     appendRing
	ringSize int64
	hdrBase  int64
	wb       pwriteBehind
	capacity int64
	bufSize  int // the buffer's size once allocated
	closed   atomic.Bool

	// written is the tail; every byte below onFile is in the file (onFile
	// may run ahead of written while a write-through append finishes);
	// flushed is the last durable offset Flush reported (a copy of
	// flush.durable the appender can load).
	written atomic.Int64
	onFile  atomic.Int64
	flushed atomic.Int64
	// outErr is WriteOut's sticky error (Flush reports it too).
	outErr atomic.Pointer[error]

	// appendMu serialises Append (the CommitLog's lock makes it
	// uncontended).
	appendMu sync.Mutex
	// reserved: the file is allocated up to here. The appender reserves
	// what it needs (under appendMu); a staged ring's write-behind also
	// reserves a ring's worth ahead (under io), so the appender, holding
	// the CommitLog's lock, does not meet fallocate's wait for the
	// inode lock that the write-behind's write holds. It only grows.
	reserved  atomic.Int64
	noReserve atomic.Bool // the file system refused fallocate: reserve nothing

	// io serialises writes to the file and changes of buf and base.
	io sync.Mutex
	// bufMu: readers of buffer memory hold it shared; changing buf or
	// base (which frees the memory for reuse) holds it exclusively, with
	// io held too. Only the appender writes buffer memory, at or past
	// written; readers and the write-outs read it below written.
	bufMu sync.RWMutex
	buf   []byte // holds the file bytes [base, written); nil before the first Append, once full, after Close
	base  int64

	// flush serialises Flush calls and holds the sticky error.
	flush struct {
		sync.Mutex
		durable int64
		err     error
	}
	c segCounters
	// direct is the O_DIRECT descriptor of cold reads (coldread.go).
	direct directFile
}

func newPwriteSegment(f vfs.File, cfg Config, opts PwriteOptions, written, reserved int64) *pwriteSegment {
	s := &pwriteSegment{f: f, fs: cfg.FS, path: cfg.Path, stagePath: cfg.StagePath, capacity: cfg.Capacity}
	s.reserved.Store(reserved)
	s.bufSize = int(min(int64(opts.BufferSize), cfg.Capacity-written))
	s.written.Store(written)
	s.onFile.Store(written)
	s.base = written
	// flushed (and flush.durable) start at 0: the first Flush after Open
	// syncs what recovery found (it may be only in the page cache).
	return s
}

func (s *pwriteSegment) Append(p []byte) error {
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
	end := w + int64(len(p))
	// Write through when nothing waits for a flush (see pwrite.go); else
	// the bytes wait in the buffer. Either way the file range is reserved
	// first: buffered bytes then cannot fail with ENOSPC when written
	// later, and a write-through does not extend the file, which would
	// make the next fdatasync write metadata too.
	through := s.flushed.Load() == w
	if err := s.reserve(end); err != nil {
		return err
	}
	if s.stagePath != "" {
		return s.appendRinged(p, w, end, through)
	}
	if s.buf == nil || end > s.base+int64(len(s.buf)) {
		if err := s.restartBuffer(w); err != nil {
			return err
		}
	}
	if len(p) > len(s.buf) {
		return s.writeLarge(p, w)
	}
	copy(s.buf[w-s.base:], p)
	if s.stage != nil {
		s.stage.setWritten(end)
	}
	if through {
		s.io.Lock()
		err := s.writeOutLocked(end)
		s.io.Unlock()
		if err != nil {
			return err
		}
	}
	s.written.Store(end)
	return nil
}

// reserve makes sure the file is allocated up to end (appendMu held),
// reserving a buffer's worth beyond it at once; on a nearly full disk it
// settles for end itself.
func (s *pwriteSegment) reserve(end int64) error {
	from := max(s.reserved.Load(), s.onFile.Load())
	if end <= from || s.noReserve.Load() {
		return nil
	}
	to := min(s.capacity, end+int64(s.bufSize))
	err := s.f.Allocate(from, to-from)
	if errors.Is(err, syscall.ENOSPC) && to > end {
		to = end
		err = s.f.Allocate(from, to-from)
	}
	switch {
	case err == nil:
		s.raiseReserved(to)
		return nil
	case errors.Is(err, syscall.EOPNOTSUPP):
		// No fallocate here (some network file systems): buffered bytes
		// then meet a full disk only when written out.
		s.noReserve.Store(true)
		return nil
	}
	return fmt.Errorf("backend: pwrite %s: reserve [%d, %d): %w", s.path, from, to, err)
}

// reserveAhead is the write-behind's reservation (io held): while less
// than a ring's worth past the tail w is allocated, it allocates two
// rings' worth past it. A failure is left to the appender's own reserve,
// which reports it.
func (s *pwriteSegment) reserveAhead(w int64) {
	from := max(s.reserved.Load(), s.onFile.Load())
	if from >= w+s.ringSize || from >= s.capacity || s.noReserve.Load() {
		return
	}
	to := min(s.capacity, w+2*s.ringSize)
	if s.f.Allocate(from, to-from) == nil {
		s.raiseReserved(to)
	}
}

// raiseReserved moves reserved up to to, never down.
func (s *pwriteSegment) raiseReserved(to int64) {
	for {
		r := s.reserved.Load()
		if to <= r || s.reserved.CompareAndSwap(r, to) {
			return
		}
	}
}

// restartBuffer writes out what the buffer holds below w and starts it
// again at w (appendMu held), allocating it on first use.
func (s *pwriteSegment) restartBuffer(w int64) error {
	s.io.Lock()
	defer s.io.Unlock()
	if s.buf != nil {
		if err := s.writeOutLocked(w); err != nil {
			return err
		}
	}
	var st *stage
	if s.buf == nil && s.stagePath != "" {
		var err error
		if st, err = openStage(s.fs, s.stagePath, s.bufSize, w, layoutLinear); err != nil {
			return err
		}
	}
	s.bufMu.Lock()
	switch {
	case st != nil:
		s.stage, s.buf = st, st.buf()
	case s.buf == nil:
		s.buf = make([]byte, s.bufSize)
	}
	s.base = w
	s.bufMu.Unlock()
	s.restage(w)
	return nil
}

// restage moves the stage's header to a buffer that starts (and ends) at
// w, every byte below w being in the file (io held).
func (s *pwriteSegment) restage(w int64) {
	if s.stage != nil {
		s.stage.reset(w)
	}
}

// writeLarge writes p, longer than the whole buffer, straight to the file
// at w (appendMu held; the buffer is empty and starts at w).
func (s *pwriteSegment) writeLarge(p []byte, w int64) error {
	end := w + int64(len(p))
	s.io.Lock()
	defer s.io.Unlock()
	if err := s.writeLocked(p, w); err != nil {
		return err
	}
	s.onFile.Store(end)
	s.bufMu.Lock()
	s.base = end
	s.bufMu.Unlock()
	s.restage(end)
	if end == s.capacity {
		if err := s.releaseLocked(); err != nil {
			return err
		}
	}
	s.written.Store(end)
	return nil
}

// writeOutLocked writes the buffered bytes [onFile, to) (io held). Once
// the segment is full and on file it drops the buffer.
func (s *pwriteSegment) writeOutLocked(to int64) error {
	from := s.onFile.Load()
	if to <= from {
		return nil
	}
	if s.ringed() {
		// Kept when full: only Seal or Close lets a stage go.
		for off := from; off < to; {
			pos := off % s.ringSize
			n := min(to-off, s.ringSize-pos)
			if err := s.writeLocked(s.ring.buf[pos:pos+n], off); err != nil {
				return err
			}
			off += n
		}
		s.moveOnFileLocked(to)
		return nil
	}
	if err := s.writeLocked(s.buf[from-s.base:to-s.base], from); err != nil {
		return err
	}
	s.onFile.Store(to)
	if to == s.capacity {
		return s.releaseLocked()
	}
	return nil
}

// writeLocked is one pwrite of p at off (io held). A partial write leaves
// garbage past onFile, which a later write of the same range replaces.
func (s *pwriteSegment) writeLocked(p []byte, off int64) error {
	n, err := s.f.WriteAt(p, off)
	s.c.writeCalls.Add(1)
	s.c.bytesWritten.Add(int64(n))
	if err != nil {
		return fmt.Errorf("backend: pwrite %s at %d: %w", s.path, off, err)
	}
	if n != len(p) {
		return fmt.Errorf("backend: pwrite %s at %d: short write %d of %d: %w", s.path, off, n, len(p), io.ErrShortWrite)
	}
	return nil
}

// Seal writes out the buffer and drops it (and its stage): nothing is
// appended again (backend.Sealer). Reads then come from the file.
func (s *pwriteSegment) Seal() error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.closed.Load() {
		return errSegmentClosed
	}
	s.stopWriteBehind()
	s.io.Lock()
	defer s.io.Unlock()
	if err := s.writeOutLocked(s.written.Load()); err != nil {
		return err
	}
	return s.releaseLocked()
}

// releaseLocked drops the buffer of a full segment (io held): nothing is
// appended again and every byte is read from the file.
func (s *pwriteSegment) releaseLocked() error {
	if st := s.dropBufferLocked(); st != nil {
		return st.close(s.fs, true)
	}
	return nil
}

// dropBufferLocked drops the buffer (io held) and returns its stage, if
// any, for the caller to close.
func (s *pwriteSegment) dropBufferLocked() *stage {
	s.bufMu.Lock()
	defer s.bufMu.Unlock()
	st := s.stage
	s.buf, s.stage, s.ring.buf = nil, nil, nil
	return st
}

func (s *pwriteSegment) ReadAt(p []byte, off int64) (int, error) {
	limit := s.written.Load()
	if s.closed.Load() {
		return 0, errSegmentClosed
	}
	p, eof, done, err := clipBelow(p, off, limit)
	if done {
		return 0, err
	}
	end := off + int64(len(p))
	s.bufMu.RLock()
	if s.closed.Load() {
		s.bufMu.RUnlock()
		return 0, errSegmentClosed
	}
	d := s.onFile.Load()
	if end > d {
		// [d, end) lies in [base, written): base moves only under bufMu,
		// and only to where onFile then was.
		lo := max(off, d)
		if s.ringed() {
			s.ring.copyOut(p[lo-off:], lo)
		} else {
			copy(p[lo-off:], s.buf[lo-s.base:end-s.base])
		}
	}
	s.bufMu.RUnlock()
	if off < d {
		// Bytes below onFile are in the file and never written again (but
		// by a retried write of the same bytes).
		want := int(min(end, d) - off)
		if n, err := s.f.ReadAt(p[:want], off); n < want {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return n, fmt.Errorf("backend: pwrite read %s at %d: %w", s.path, off+int64(n), err)
		}
	}
	return len(p), eof
}

func (s *pwriteSegment) Flush() (int64, error) {
	s.flush.Lock()
	defer s.flush.Unlock()
	if s.flush.err != nil {
		return s.flush.durable, s.flush.err
	}
	if s.closed.Load() {
		return s.flush.durable, errSegmentClosed
	}
	if p := s.outErr.Load(); p != nil {
		s.flush.err = *p
		return s.flush.durable, s.flush.err
	}
	// Load the tail before writing out and syncing: the flush covers
	// exactly the bytes below it.
	w := s.written.Load()
	if w == s.flush.durable {
		return w, nil
	}
	s.c.flushBatches.Add(1)
	s.io.Lock()
	err := s.writeOutLocked(w)
	s.io.Unlock()
	if err != nil {
		s.flush.err = fmt.Errorf("backend: pwrite flush %s: %w", s.path, err)
		return s.flush.durable, s.flush.err
	}
	s.c.fsyncs.Add(1)
	if err := s.f.Sync(); err != nil {
		s.flush.err = fmt.Errorf("backend: pwrite fdatasync %s: %w", s.path, err)
		return s.flush.durable, s.flush.err
	}
	s.flush.durable = w
	s.flushed.Store(w)
	return w, nil
}

// WriteOut writes the buffered bytes into the page cache (no sync). A
// write error is kept and returned by every later WriteOut and Flush.
func (s *pwriteSegment) WriteOut() (int64, error) {
	if s.closed.Load() {
		return 0, errSegmentClosed
	}
	if p := s.outErr.Load(); p != nil {
		return s.onFile.Load(), *p
	}
	w := s.written.Load()
	if s.onFile.Load() >= w {
		return w, nil
	}
	s.io.Lock()
	err := s.writeOutLocked(w)
	s.io.Unlock()
	if err != nil {
		return s.onFile.Load(), s.stickOut(err)
	}
	return w, nil
}

// stickOut makes err WriteOut's sticky error (unless one is set) and
// returns the sticky one. A function of its own, so the error escapes
// only on this path.
func (s *pwriteSegment) stickOut(err error) error {
	e := fmt.Errorf("backend: pwrite write out %s: %w", s.path, err)
	s.outErr.CompareAndSwap(nil, &e)
	return *s.outErr.Load()
}

func (s *pwriteSegment) Written() int64  { return s.written.Load() }
func (s *pwriteSegment) Capacity() int64 { return s.capacity }
func (s *pwriteSegment) Stats() Stats    { return s.c.stats() }

// Close writes out the buffer (unless a Flush failed: the file is then
// left as the failure left it), drops it and closes the file.
func (s *pwriteSegment) Close() error {
	s.flush.Lock()
	defer s.flush.Unlock()
	if s.closed.Swap(true) {
		return errSegmentClosed
	}
	s.stopWriteBehind()
	s.io.Lock()
	defer s.io.Unlock()
	var err error
	if s.flush.err == nil && (s.buf != nil || s.ringed()) {
		err = s.writeOutLocked(s.written.Load())
	}
	var stErr error
	if st := s.dropBufferLocked(); st != nil {
		// Kept if the file may lack some of its bytes: the next Open
		// replays it (ReplayStage).
		stErr = st.close(s.fs, err == nil && s.flush.err == nil)
	}
	return errors.Join(err, stErr, s.direct.close(), s.f.Close())
}
