package backend

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// A staging odirect or uring segment (Config.StagePath): the append ring
// is the buffer of a stage (stage.go, ring layout), a shared mapping of a
// file, so an appended byte is in the kernel once copied and a process
// crash loses nothing appended. The segment file still gets only whole,
// aligned blocks by O_DIRECT (or io_uring) writes from the ring:
//
//   - The first Append makes the stage (StagedRingSize, capped at the
//     capacity), moves the tail block a reopened segment holds into it
//     and starts the write-behind goroutine.
//   - Append copies into the ring and stores the header's written; once
//     an eighth of the ring waits to be written it wakes the write-behind, which
//     writes the full blocks below the tail an eighth of the ring at a
//     time (one write call, or one io_uring submission; two where the
//     ring wraps) and moves onDisk without a sync, so the appender finds
//     room without waiting for the disk. When the ring is full the
//     appender waits for the write-behind's next round to free room (a
//     condition, not I/O of its own); it writes (spills) itself only
//     when the write-behind cannot help: an append longer than the room
//     the published tail leaves, or a write-behind that failed or
//     stopped. Before it reuses room freed below onDisk, it stores the
//     header's base there.
//   - Flush and WriteOut write as without a stage: the blocks from onDisk
//     through the tail block, the partial tail block from the bounce
//     buffer (the appender may be writing past the tail in its slot).
//     Flush's fdatasync then runs outside io (a plain File.Sync, also for
//     uring: the ring is io's), so a slow sync holds up neither the
//     write-behind nor a spilling appender, as pwrite's does not.
//   - Seal (the CommitLog rolled past the segment) writes out the rest,
//     drops the ring and removes the stage; so does Close, which keeps
//     the stage for the next Open's replay if the file may lack a byte.
//   - A write-behind failure is sticky, as a failed WriteOut is: every
//     later Flush and WriteOut reports it.
//
// Only the appender writes the mapping (bytes and header); the
// write-behind and the flusher read below the tail.

// errSegmentSealed refuses an Append after Seal.
var errSegmentSealed = errors.New("backend: segment sealed")

// writeBehind is a staging segment's write-behind goroutine's state.
type writeBehind struct {
	kick chan struct{} // buffered 1: a share of the ring waits
	stop chan struct{} // closed by Seal and Close
	done chan struct{} // closed when the goroutine exits
	// pending: a kick was sent and its round has not ended; the appender
	// sends no other meanwhile.
	pending atomic.Bool
	// freed (buffered 1) is signalled after every round, failed set
	// before it by a round that failed: what an appender waiting for room
	// waits on (awaitWriteBehind).
	freed  chan struct{}
	failed atomic.Bool
}

// claim kicks the goroutine unless a round is claimed already (pending).
func (wb *writeBehind) claim() {
	if wb.pending.Load() || !wb.pending.CompareAndSwap(false, true) {
		return
	}
	select {
	case wb.kick <- struct{}{}:
	default:
	}
}

// await waits, the ring being full with progress (what the rounds move)
// at d, until a round moves it: true then, or the outcome once the
// goroutine failed or stopped. Due whatever the share, and kicked
// whenever no round is claimed, every time round: a round that ended
// (pending cleared before its signal) between reading d and waiting
// freed room below d only, and nothing else would wake the goroutine
// again.
func (wb *writeBehind) await(progress *atomic.Int64, d int64) bool {
	for progress.Load() == d {
		wb.claim()
		select {
		case <-wb.freed:
		case <-wb.done:
			return progress.Load() > d
		}
		if wb.failed.Load() {
			return progress.Load() > d
		}
	}
	return true
}

// openStage makes the stage at the first Append (appendMu held; w the
// tail): the ring moves into its buffer, with the bytes [onDisk, w) the
// heap ring held.
func (s *directSegment) openStage(w int64) error {
	size := int(min(int64(s.opts.StagedRingSize), s.capacity))
	d := s.onDisk.Load()
	st, err := openStage(s.fs, s.stagePath, size, d, layoutRing)
	if err != nil {
		return fmt.Errorf("backend: %s %s: %w", s.name, s.path, err)
	}
	ring := appendRing{buf: st.buf()[:size:size]}
	if uintptr(unsafe.Pointer(&ring.buf[0]))%blockSize != 0 {
		return errors.Join(fmt.Errorf("backend: %s %s: the stage's mapping is not %d-byte aligned", s.name, s.path, blockSize),
			st.close(s.fs, true))
	}
	tail := make([]byte, w-d)
	s.io.Lock()
	s.ringMu.Lock()
	s.ring.copyOut(tail, d)
	ring.copyIn(d, tail)
	s.ring = ring
	s.ringMu.Unlock()
	s.st, s.hdrBase = st, d
	s.io.Unlock()
	st.setWritten(w)
	s.wb.kick = make(chan struct{}, 1)
	s.wb.freed = make(chan struct{}, 1)
	s.wb.stop = make(chan struct{})
	s.wb.done = make(chan struct{})
	go s.writeBehind()
	return nil
}

// writeBehindDue says whether a share of the ring below the tail w waits
// to be written.
func (s *directSegment) writeBehindDue(w int64) bool {
	return alignDown(w)-s.onDisk.Load() >= s.writeBehindChunk()
}

// writeBehindChunk is a write-behind round's most bytes: a share of the
// ring, at least a block (a round always frees room).
func (s *directSegment) writeBehindChunk() int64 {
	return max(s.ring.size()/writeBehindShare, blockSize)
}

// writeBehindShare: the write-behind starts once 1/writeBehindShare of the
// ring waits (see ODirectOptions.StagedRingSize).
const writeBehindShare = 8

// kickWriteBehind wakes the write-behind when a share of the ring below
// the tail w waits to be written and no round is pending (appendMu held).
func (s *directSegment) kickWriteBehind(w int64) {
	if s.writeBehindDue(w) {
		s.wb.claim()
	}
}

// awaitWriteBehind waits, the ring being full with onDisk at d, until
// the write-behind has freed room (appendMu held): true once onDisk moved.
// False at once when it cannot free any (no full block below the
// published tail: the append being copied is longer than the room), and
// when it failed or stopped: the caller then spills itself.
func (s *directSegment) awaitWriteBehind(d int64) bool {
	if alignDown(s.written.Load()) <= d || s.wb.failed.Load() {
		return false
	}
	return s.wb.await(&s.onDisk, d)
}

// writeBehind is the write-behind goroutine of a staging segment: woken
// by the appender (kickWriteBehind), it writes the ring's full blocks
// below the tail (spillLocked, under io), round after round while a share
// of the ring waits (appends that came during a round sent no kick); it
// owns nothing else and exits when Seal or Close closes stop.
func (s *directSegment) writeBehind() {
	defer close(s.wb.done)
	for {
		select {
		case <-s.wb.kick:
		case <-s.wb.stop:
			return
		}
		for {
			ok := s.writeBehindRound()
			if !ok {
				s.wb.failed.Store(true)
			}
			// Clear pending before looking again (an append from here on
			// kicks, or finds the next round claimed below) and before the
			// signal: a waiter woken by it then sees no round claimed and
			// kicks one if it needs more room.
			s.wb.pending.Store(false)
			select {
			case s.wb.freed <- struct{}{}:
			default:
			}
			if !ok || !s.writeBehindDue(s.written.Load()) || !s.wb.pending.CompareAndSwap(false, true) {
				break
			}
			select {
			case <-s.wb.stop:
				return
			default:
			}
		}
	}
}

// writeBehindRound is one round of the write-behind; a failure is sticky
// (and ok false).
func (s *directSegment) writeBehindRound() (ok bool) {
	s.io.Lock()
	defer s.io.Unlock()
	if s.io.err != nil {
		return false
	}
	// A share at a time: an appender waiting for room (a full ring) waits
	// for one such write, not for the whole ring's.
	w := min(s.written.Load(), s.onDisk.Load()+s.writeBehindChunk())
	if err := s.spillLocked(w); err != nil {
		s.io.err = fmt.Errorf("backend: %s write behind %s to %d: %w", s.name, s.path, alignDown(w), err)
		return false
	}
	return true
}

// stopWriteBehind stops the write-behind goroutine, if running, and
// waits for it (appendMu held, or no Append in flight: Close).
func (s *directSegment) stopWriteBehind() {
	if s.wb.stop == nil {
		return
	}
	close(s.wb.stop)
	<-s.wb.done
	s.wb.stop = nil
}

// Seal writes out what the ring holds and drops it, with the bounce
// buffer and the stage: nothing is appended again (backend.Sealer), and
// reads come from the file. A write failure is sticky.
func (s *directSegment) Seal() error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.closed.Load() {
		return errSegmentClosed
	}
	if s.sealed {
		return nil
	}
	s.stopWriteBehind()
	s.io.Lock()
	defer s.io.Unlock()
	if s.io.err != nil {
		return s.io.err
	}
	if w := s.written.Load(); w > s.io.handed {
		if err := s.writeLocked(w, false); err != nil {
			return err
		}
	}
	s.sealed = true
	s.releaseLocked()
	if s.st == nil {
		return nil
	}
	return s.dropStageLocked(true)
}

// releaseLocked drops the ring and the buffers (io held) once every byte
// below the tail is in the file: onDisk moves past the tail block, so
// readers go to the file.
func (s *directSegment) releaseLocked() {
	s.ringMu.Lock()
	s.onDisk.Store(max(s.onDisk.Load(), alignUp(s.written.Load())))
	s.ring.buf = nil
	s.ringMu.Unlock()
	s.io.bounce, s.zeros = nil, nil
	s.io.exec.release()
}

// dropStageLocked unmaps and closes the stage (io held; the ring no longer
// uses it), removing its file if remove.
func (s *directSegment) dropStageLocked(remove bool) error {
	st := s.st
	s.ringMu.Lock()
	if s.ring.buf != nil {
		// Close: readers must not reach the unmapped ring.
		s.onDisk.Store(max(s.onDisk.Load(), alignUp(s.written.Load())))
		s.ring.buf = nil
	}
	s.st = nil
	s.ringMu.Unlock()
	return st.close(s.fs, remove)
}

// flushStaged is Flush for a staging segment: the writes under io, the
// fdatasync after them outside it (flushMu serialises Flushes). A failed
// write or sync is sticky.
func (s *directSegment) flushStaged() (int64, error) {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.io.Lock()
	if s.io.err != nil {
		defer s.io.Unlock()
		return s.io.durable, s.io.err
	}
	// Load the tail before writing: the flush covers exactly the bytes
	// below it.
	w := s.written.Load()
	if w == s.io.durable {
		s.io.Unlock()
		return w, nil
	}
	s.c.flushBatches.Add(1)
	err := s.writeLocked(w, false)
	d := s.io.durable
	s.io.Unlock()
	if err != nil {
		return d, err
	}
	s.c.fsyncs.Add(1)
	err = s.f.Sync()
	s.io.Lock()
	defer s.io.Unlock()
	if err != nil {
		s.io.err = cmpOr(s.io.err, fmt.Errorf("backend: %s flush %s to %d: fdatasync: %w", s.name, s.path, w, err))
		return s.io.durable, s.io.err
	}
	// Every byte below w was written before the sync began (blocks a
	// write-behind rewrote meanwhile hold the same bytes below w).
	s.io.durable = max(s.io.durable, w)
	return s.io.durable, s.io.err
}
