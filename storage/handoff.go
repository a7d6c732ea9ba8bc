package storage

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Hand-over: at the process-crash and power-loss levels (see Durability)
// an append is acknowledged, and indexed for consumers, only once its
// bytes are in the kernel. The backends that buffer in user space (pwrite,
// odirect, uring) write them out in WriteOut; mmap's appends are the
// kernel's already.
//
// It is group commit without a goroutine: the appender that finds its
// bytes not yet handed over and no write-out running becomes the writer
// and writes out everything written so far (its own bytes and those of
// every appender that came meanwhile), so a lone writer pays one write per
// append and no goroutine switch, and under load one write covers many
// appends. An appender that finds a write-out running waits for one that
// covers it (handOff).
//
// A write-out failure is terminal, as an fsync failure is: the bytes are
// written (readers past handed could otherwise see a hole), so the store
// is broken and nothing more is acknowledged.
type handOver struct {
	// writing: an appender is the writer (one write-out at a time).
	// Waiters that stop yielding park on cond (on mu), counted in parked;
	// the writer broadcasts after its write when any are parked.
	writing atomic.Bool
	parked  atomic.Int32
	mu      sync.Mutex
	cond    sync.Cond
	// The writer's own (only the appender with writing set touches them):
	// mark is the append count at the last write-out, lastN the appends
	// that write covered.
	mark, lastN int64
	// inAppend: the backend's Append itself puts the bytes in the kernel
	// (mmap), so appendLocked moves handed.
	inAppend bool
	// buffered: AckBuffered with a buffering backend (DurabilityMemory):
	// appends are acknowledged and indexed from the buffer; handed moves
	// only with spills, flushes and segment rolls, and records become
	// visible at written.
	buffered bool
}

// visibleLimit is the CommitLog offset below which records may be indexed
// and served: the offset of the store's acknowledgement level. Sync flush:
// durable (no consumer sees a record a power loss can take back); the
// default async and none: handed; AckBuffered: written.
func (s *Store) visibleLimit() int64 {
	switch {
	case s.policy == FlushSync:
		return s.durable.Load()
	case s.ho.buffered:
		return s.written.Load()
	}
	return s.handed.Load()
}

// needsHandOff says whether an Append hands its bytes over before it
// returns: at the process-crash level with a buffering backend. (Sync
// flush waits for the flush, which writes out and syncs; mmap's appends
// are in the kernel already; AckBuffered does not wait.)
func (s *Store) needsHandOff() bool {
	return s.policy != FlushSync && !s.ho.buffered && !s.ho.inAppend
}

// handOff returns once every byte below end is in the kernel. One
// appender at a time is the writer (writing); the others wait for a write
// that covers them, yielding the processor a few times (a write into the
// page cache takes microseconds, less than parking and waking) and then
// parking on the condition, which every write broadcasts to.
func (s *Store) handOff(end int64) error {
	h := &s.ho
	wrote := false
	defer func() {
		if !wrote {
			s.m.handOffFree.Add(1)
		}
	}()
	for spins := 0; s.handed.Load() < end; {
		if err := s.Err(); err != nil {
			return err
		}
		if h.writing.CompareAndSwap(false, true) {
			wrote = true
			err := s.writeRound(end)
			h.writing.Store(false)
			if h.parked.Load() > 0 {
				h.mu.Lock()
				h.cond.Broadcast()
				h.mu.Unlock()
			}
			if err != nil {
				return err
			}
			continue
		}
		if spins < maxHandOffSpins {
			spins++
			runtime.Gosched()
			continue
		}
		h.mu.Lock()
		h.parked.Add(1)
		for h.writing.Load() && s.handed.Load() < end {
			h.cond.Wait()
		}
		h.parked.Add(-1)
		h.mu.Unlock()
	}
	return nil
}

// writeRound is one write-out by the writer: unless someone else's write
// covered end meanwhile, it gathers, as group commit does (gather.go):
// the appenders the last write released are on their way back
// (closed-loop writers), so it waits, yielding, until as many appends
// await a write as the last write covered. Bounded; a lone writer never
// yields.
func (s *Store) writeRound(end int64) error {
	h := &s.ho
	if s.handed.Load() >= end {
		return nil
	}
	for i := 0; i < maxGatherYields && s.m.appends.Load()-h.mark < h.lastN; i++ {
		runtime.Gosched()
	}
	n := s.m.appends.Load()
	err := s.writeOut()
	h.lastN, h.mark = n-h.mark, n
	return err
}

// maxGatherYields bounds a write's gather, maxHandOffSpins a waiter's
// yields before it parks. A yield goes through the scheduler's global run
// queue lock, so more of them cost more than they gather. bench storage
// --backend pwrite --flush async --writers 64, alternated rounds on a quiet
// machine: (spins 16, gather 8) 290-343k msgs/s; (4, 4) 329, 381, 312,
// 412k; (1, 1) 390, 396, 345, 419k in the same rounds (the old buffered
// mode 468-501k); (0, 0), parking and writing at once, 288-362k with 450-580
// write calls per 1,000 appends against 28-45.
const (
	maxGatherYields = 1
	maxHandOffSpins = 1
)

// writeOut writes out every segment holding bytes in [handed, written)
// and moves handed; only the hand-over's writer calls it.
func (s *Store) writeOut() error {
	if err := s.Err(); err != nil {
		return err
	}
	// Read before the segment list and the WriteOuts: each WriteOut covers
	// every byte appended to its segment before it, so all below w.
	w := s.written.Load()
	h := s.handed.Load()
	if w <= h {
		return nil
	}
	for _, g := range s.segmentsSnapshot() {
		if g.end(s.segSize) <= h || g.base >= w {
			continue
		}
		if _, err := g.seg.WriteOut(); err != nil {
			if s.handed.Load() >= w {
				return nil // Close's final flush wrote it out and closed the segment meanwhile
			}
			if s.isClosed() {
				return fmt.Errorf("%w: write out %s: %w", ErrClosed, g.path, err)
			}
			s.m.writeErrors.Add(1)
			return s.breakWith(fmt.Errorf("write out %s: %w", g.path, err))
		}
	}
	s.storeHanded(w)
	s.m.writeOuts.Add(1)
	return nil
}

// storeHandedLocked is storeHanded where appends reach the kernel in
// Append (ho.inAppend: only appends, under the append lock, move handed):
// w is past handed, so a store does, with no compare-and-swap loop.
func (s *Store) storeHandedLocked(w int64) {
	s.handed.Store(w)
	s.runOnHanded(w)
}

// runOnHanded runs the OnHanded callbacks for a new handed offset w.
func (s *Store) runOnHanded(w int64) {
	if p := s.onHanded.Load(); p != nil {
		for _, fn := range *p {
			fn(w)
		}
	}
}

// storeHanded raises handed to w (never lowers it) and runs the OnHanded
// callbacks if it did.
func (s *Store) storeHanded(w int64) {
	for {
		h := s.handed.Load()
		if w <= h {
			return
		}
		if s.handed.CompareAndSwap(h, w) {
			break
		}
	}
	s.runOnHanded(w)
}

// HandedOffset is the CommitLog offset below which every byte is in the
// kernel (page cache or device): what a process crash cannot take back.
// DurableOffset <= HandedOffset <= WrittenOffset.
func (s *Store) HandedOffset() int64 { return s.handed.Load() }
