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
// bytes not yet handed over takes the write-out lock and writes out
// everything written so far (its own bytes and those of every appender
// that came meanwhile), so a lone writer pays one write per append and
// no goroutine switch, and under load one write covers many appends. An
// appender that gets the lock after someone else's write-out covered it
// returns at once.
//
// A write-out failure is terminal, as an fsync failure is: the bytes are
// written (readers past handed could otherwise see a hole), so the store
// is broken and nothing more is acknowledged.
type handOver struct {
	// mu guards writing; cond (on mu) is broadcast after every write-out.
	mu      sync.Mutex
	cond    sync.Cond
	writing bool // an appender is the writer: one write-out at a time
	// inflight counts appends between their start and the end of their
	// hand-over; appended those of them that have appended (and so wait
	// for, or do, a write-out).
	inflight, appended atomic.Int64
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
// appender at a time is the writer; the others wait on the condition and
// are all woken by the write that covers them (a broadcast: they do not
// queue on a lock to learn it), so they append again while the next
// writer gathers.
func (s *Store) handOff(end int64) error {
	if s.handed.Load() >= end {
		return nil
	}
	h := &s.ho
	h.mu.Lock()
	defer h.mu.Unlock()
	waited := false
	for s.handed.Load() < end {
		if err := s.Err(); err != nil {
			return err
		}
		if h.writing {
			h.cond.Wait()
			waited = true
			continue
		}
		h.writing = true
		h.mu.Unlock()
		// Gather: while appends that started are still on their way
		// (encoding, or waiting for the append lock), let them copy their
		// bytes in first, so that this write covers them too. Bounded; a
		// lone writer never yields.
		for i := 0; i < maxGatherYields && h.appended.Load() < h.inflight.Load(); i++ {
			runtime.Gosched()
		}
		err := s.writeOut()
		h.mu.Lock()
		h.writing = false
		h.cond.Broadcast()
		if err != nil {
			return err
		}
	}
	if waited {
		s.m.handOffFree.Add(1)
	}
	return nil
}

// maxGatherYields bounds a hand-over's gather (each yield lets every
// runnable goroutine run once).
const maxGatherYields = 8

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
			s.m.writeErrors.Add(1)
			return s.breakWith(fmt.Errorf("write out %s: %w", g.path, err))
		}
	}
	s.storeHanded(w)
	s.m.writeOuts.Add(1)
	return nil
}

// storeHanded raises handed to w (never lowers it).
func (s *Store) storeHanded(w int64) {
	for {
		h := s.handed.Load()
		if w <= h || s.handed.CompareAndSwap(h, w) {
			return
		}
	}
}

// HandedOffset is the CommitLog offset below which every byte is in the
// kernel (page cache or device): what a process crash cannot take back.
// DurableOffset <= HandedOffset <= WrittenOffset.
func (s *Store) HandedOffset() int64 { return s.handed.Load() }
