package backend

import "sync/atomic"

// A staging pwrite segment (Config.StagePath) keeps its buffer in a stage
// laid out as a ring (stage.go), written behind the appender:
//
//   - The first Append makes the stage: a ring of pwriteRingBuffers
//     buffers (BufferSize each, capped at the capacity), holding the
//     segment bytes [onFile, Written) at offset x modulo its size, and
//     starts the write-behind goroutine.
//   - Append copies into the ring and stores the header's written; once
//     a buffer's worth waits it wakes the write-behind, which writes a
//     buffer at a time (one pwrite, two where the ring wraps) and moves
//     onFile, so the appender makes no system call. Before it reuses room
//     below onFile the appender stores the header's base there.
//   - A full ring: the appender wakes the write-behind and waits on a
//     condition (a signal after each round) until room is freed; it
//     writes itself only when the write-behind has failed or stopped, an
//     append longer than the ring (written straight from the caller's
//     slice, after the ring), and a write-through (pwrite.go).
//   - Flush, WriteOut, Seal and Close write out [onFile, Written) under
//     io, as without a stage; Seal and Close stop the write-behind first.
//   - A write-behind write that fails is not sticky: the write-behind
//     stops until an append comes, and that append writes out what waits
//     itself first, so it fails with the error (refused, Written
//     unchanged) or, the write going through (space freed), goes on; a
//     Flush meets the error as its own (sticky) write error.
//
// Without a stage the buffer stays linear and the appender writes it out
// when it fills (pwrite_seg.go): that path acknowledges only after its
// write anyway (storage's hand-off), so a write-behind would buy nothing.
// Only the appender writes the mapping (bytes and header); moving onFile,
// which frees ring room, holds bufMu exclusively, so a reader's slot is
// never reused under it.

// pwriteRingBuffers is a staged ring's size in buffers (BufferSize each):
// the write-behind starts at one, so the appender has seven more of room
// while it writes.
const pwriteRingBuffers = 8

// pwriteBehind is a staging segment's write-behind state.
type pwriteBehind struct {
	writeBehind             // a round writes a buffer's worth
	waiting     atomic.Bool // an appender waits for room (awaitWriteBehind)
}

// ringed says whether the buffer is a staged ring (appendMu or io held).
func (s *pwriteSegment) ringed() bool { return s.ring.buf != nil }

// share is a write-behind round's most bytes: a buffer (ringSize is set
// before the write-behind starts and never changes).
func (s *pwriteSegment) share() int64 { return s.ringSize / pwriteRingBuffers }

// appendRinged is Append for a staging segment (appendMu held; the file
// reserved up to end = w + len(p)).
func (s *pwriteSegment) appendRinged(p []byte, w, end int64, through bool) error {
	if s.stage == nil {
		if err := s.openRing(w); err != nil {
			return err
		}
	}
	if s.wb.failed.Load() {
		// The write-behind's last write failed: this append meets the
		// error itself (refused, Written unchanged) or, the write now
		// going through, takes over from it.
		s.io.Lock()
		err := s.writeOutLocked(w)
		s.io.Unlock()
		if err != nil {
			return err
		}
		s.wb.failed.Store(false)
	}
	size := s.ringSize
	if int64(len(p)) > size {
		return s.writeLargeRinged(p, w, end)
	}
	for end-s.onFile.Load() > size {
		if s.awaitWriteBehind() {
			continue
		}
		s.io.Lock()
		err := s.writeOutLocked(w)
		s.io.Unlock()
		if err != nil {
			return err
		}
	}
	if d := s.onFile.Load(); d > s.hdrBase {
		// The room below d is about to be reused: the header must stop
		// claiming it first.
		s.stage.setBase(d)
		s.hdrBase = d
	}
	s.ring.copyIn(w, p)
	s.stage.setWritten(end)
	if through {
		s.io.Lock()
		err := s.writeOutLocked(end)
		s.io.Unlock()
		if err != nil {
			return err
		}
	}
	s.written.Store(end)
	s.kickWriteBehind(end)
	return nil
}

// openRing makes the stage at the first Append (appendMu held; w the
// tail, on file) and starts the write-behind.
func (s *pwriteSegment) openRing(w int64) error {
	size := int(min(int64(pwriteRingBuffers)*int64(s.bufSize), s.capacity))
	if s.ringSize != 0 {
		size = int(s.ringSize) // a ring made again (an Append after Seal) keeps its size
	}
	st, err := openStage(s.fs, s.stagePath, size, w, layoutRing)
	if err != nil {
		return err
	}
	s.io.Lock()
	s.bufMu.Lock()
	s.stage, s.ring, s.ringSize = st, appendRing{buf: st.buf()[:size:size]}, int64(size)
	s.base, s.hdrBase = w, w
	s.bufMu.Unlock()
	s.io.Unlock()
	s.wb = pwriteBehind{writeBehind: writeBehind{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		freed: make(chan struct{}, 1)}}
	go s.writeBehind()
	return nil
}

// writeLargeRinged writes p, longer than the ring, straight to the file
// at w after what the ring holds (appendMu held); the ring then starts
// empty at the new tail.
func (s *pwriteSegment) writeLargeRinged(p []byte, w, end int64) error {
	s.io.Lock()
	defer s.io.Unlock()
	if err := s.writeOutLocked(w); err != nil {
		return err
	}
	if err := s.writeLocked(p, w); err != nil {
		return err
	}
	s.moveOnFileLocked(end)
	// Nothing of the ring is claimed below end: the header may say so.
	s.stage.reset(end)
	s.hdrBase = end
	s.written.Store(end)
	return nil
}

// moveOnFileLocked raises onFile to to (io held); in a ring it frees room,
// so it waits for readers of the ring first.
func (s *pwriteSegment) moveOnFileLocked(to int64) {
	if !s.ringed() {
		s.onFile.Store(to)
		return
	}
	s.bufMu.Lock()
	s.onFile.Store(to)
	s.bufMu.Unlock()
}

// writeBehindDue says whether a buffer's worth below the tail w waits.
func (s *pwriteSegment) writeBehindDue(w int64) bool {
	return w-s.onFile.Load() >= s.share()
}

// kickWriteBehind wakes the write-behind when a buffer's worth waits and
// no round is pending (appendMu held).
func (s *pwriteSegment) kickWriteBehind(w int64) {
	if s.writeBehindDue(w) {
		s.wb.claim()
	}
}

// awaitWriteBehind waits, the ring being full, until the write-behind
// has moved onFile (true), or returns false at once when it failed or
// stopped, or has nothing published to write: the caller then writes
// itself.
func (s *pwriteSegment) awaitWriteBehind() bool {
	d := s.onFile.Load()
	if s.written.Load() <= d || s.wb.failed.Load() {
		return false
	}
	s.wb.waiting.Store(true)
	defer s.wb.waiting.Store(false)
	return s.wb.await(&s.onFile, d)
}

// writeBehind is the write-behind goroutine of a staging segment: woken
// by the appender (kickWriteBehind, awaitWriteBehind), it writes the
// ring a buffer at a time (writeBehindRound, under io), round after round
// while a buffer's worth waits, and signals freed after each; it owns
// nothing else and exits when Seal or Close closes stop.
func (s *pwriteSegment) writeBehind() {
	defer close(s.wb.done)
	for {
		select {
		case <-s.wb.kick:
		case <-s.wb.stop:
			return
		}
		for {
			if !s.writeBehindRound() {
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
			if s.wb.failed.Load() || !s.writeBehindDue(s.written.Load()) || !s.wb.pending.CompareAndSwap(false, true) {
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

// writeBehindRound writes up to a buffer's worth below the tail; false on
// a failure, which the next append meets (appendRinged).
func (s *pwriteSegment) writeBehindRound() bool {
	s.io.Lock()
	defer s.io.Unlock()
	if !s.ringed() {
		return true // sealed or closed meanwhile
	}
	// A whole buffer, or less only for an appender that waits for room: a
	// round claimed earlier and run late must not write the tail below a
	// buffer's worth (that waits for a Flush, a full buffer or a waiter).
	d, w := s.onFile.Load(), s.written.Load()
	if w-d < s.share() && !s.wb.waiting.Load() {
		return true
	}
	ok := s.writeOutLocked(min(w, d+s.share())) == nil
	s.reserveAhead(w)
	return ok
}

// stopWriteBehind stops the write-behind goroutine, if running, and
// waits for it (io not held).
func (s *pwriteSegment) stopWriteBehind() {
	if s.wb.stop == nil {
		return
	}
	close(s.wb.stop)
	<-s.wb.done
	s.wb.stop = nil
}
