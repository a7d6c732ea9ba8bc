package backend

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Prefaulting and page-size advice of the mmap backend (see mmap.go for
// why).

// prefaultStep is the most the helper populates under one hold of the
// mapping's read lock (Close waits for at most one step).
const prefaultStep = 1 << 20

// prefaultStart is the helper's first window.
const prefaultStart = 1 << 20

// paging is a segment's prefaulting helper and page-size advice.
type paging struct {
	opts   MmapOptions
	osFile bool  // an OS file's mapping: madvise applies
	page   int64 // the system page size

	// populated: the helper has populated the mapping up to here (from
	// about the tail on). window: how far past the tail it populates,
	// from prefaultStart doubling at each refill up to PrefaultAhead (a
	// slow start: the first flushes decide the page size before much of
	// the mapping is faulted in with large folios). Both stored by the
	// helper, loaded by the appender.
	populated, window atomic.Int64
	// kick wakes the helper (capacity 1; nil without one); quit stops it
	// and done closes when it has exited.
	kick, quit, done chan struct{}
	stopOnce         sync.Once
	touch            bool // helper-owned: no MADV_POPULATE_WRITE here, read-touch pages instead
	sink             byte // helper-owned: keeps the read-touches

	// small: the mapping's unpopulated part is advised MADV_RANDOM, and
	// the helper populates for reading (stored by the flusher, loaded by
	// the helper).
	small atomic.Bool
	// Flusher-owned (under the segment's flush mutex).
	advised bool // some madvise changed the mapping's paging
	streak  int  // flushes in a row pointing to the other page size
}

// startPaging sets up paging for a new segment and starts the helper if
// the segment is a writable OS-file mapping.
func (s *mmapSegment) startPaging(opts MmapOptions, osFile bool) {
	p := &s.pg
	p.opts, p.osFile, p.page = opts, osFile, int64(unix.Getpagesize())
	w := s.written.Load()
	p.populated.Store(w &^ (p.page - 1))
	if !osFile || opts.PrefaultAhead < 0 || w >= s.capacity {
		return
	}
	p.window.Store(min(prefaultStart, opts.PrefaultAhead))
	p.kick = make(chan struct{}, 1)
	p.quit = make(chan struct{})
	p.done = make(chan struct{})
	p.kick <- struct{}{} // the first window at once
	go s.prefaultLoop()
}

// appended is the appender's hook after moving the tail to end: it wakes
// the helper when the tail comes within half a window of what is
// populated.
func (p *paging) appended(end int64) {
	if p.kick != nil && end+p.window.Load()/2 > p.populated.Load() {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// stop stops the helper and waits for it (Close; idempotent).
func (p *paging) stop() {
	p.stopOnce.Do(func() {
		if p.quit != nil {
			close(p.quit)
			<-p.done
		}
	})
}

// prefaultLoop is the helper goroutine of a writable OS-file segment.
// Woken by kick (at start and by the appender), it populates the mapping
// from the tail (or where it got to) up to window past the tail,
// prefaultStep at a time, each step under the mapping's read lock. It owns
// populated, window, touch and sink. It exits when quit closes (Close),
// once the whole segment is populated, or when populating fails (the
// appender then takes its own faults, as without the helper).
func (s *mmapSegment) prefaultLoop() {
	p := &s.pg
	defer close(p.done)
	for first := true; ; first = false {
		select {
		case <-p.quit:
			return
		case <-p.kick:
		}
		win := p.window.Load()
		if !first && win < p.opts.PrefaultAhead {
			win = min(2*win, p.opts.PrefaultAhead)
			p.window.Store(win)
		}
		for {
			w := s.written.Load()
			from := max(p.populated.Load(), w&^(p.page-1))
			to := min(s.capacity, (w+win+p.page-1)&^(p.page-1), from+prefaultStep)
			if from >= s.capacity {
				return // the tail reached the end first
			}
			if from >= to {
				break
			}
			if !s.populate(from, to) {
				return
			}
			p.populated.Store(to)
			if to == s.capacity {
				return
			}
			select {
			case <-p.quit:
				return
			default:
			}
		}
	}
}

// populate faults in the mapping's bytes [from, to), from page-aligned,
// as writes would (helper only). It reports false if the mapping is gone
// or the kernel refused.
func (s *mmapSegment) populate(from, to int64) bool {
	s.mapping.RLock()
	defer s.mapping.RUnlock()
	if s.mapping.data == nil {
		return false
	}
	b := s.mapping.data[from:to]
	p := &s.pg
	if !p.touch {
		// Populating for writing dirties the pages (zeros): with small,
		// frequent flushes they would sit dirty long enough for the
		// journal's periodic commit to write them out, and the data again
		// later. Such a segment populates for reading: the pages are in
		// the page cache and mapped, and the appender's write fault only
		// makes one writable.
		advice := unix.MADV_POPULATE_WRITE
		if p.small.Load() {
			advice = unix.MADV_POPULATE_READ
		}
		err := unix.Madvise(b, advice)
		for err == unix.EINTR || err == unix.EAGAIN {
			err = unix.Madvise(b, advice)
		}
		if err == nil {
			return true
		}
		if err != unix.EINVAL {
			return false
		}
		// Linux before 5.14: no MADV_POPULATE_WRITE. Reading a byte a
		// page maps the page cache pages (allocated and zeroed here, not
		// under the append lock); the appender's first write still takes
		// a write-protect fault, the cheap part.
		p.touch = true
	}
	var sum byte
	for i := 0; i < len(b); i += int(p.page) {
		sum += b[i]
	}
	p.sink += sum
	return true
}

// flushed is Flush's hook (flush mutex and mapping read lock held) after
// making n bytes durable up to w: it switches the unpopulated part of the
// mapping between small and normal pages as the flushes stay small or
// large, and gives a full segment the normal advice back.
func (p *paging) flushed(data []byte, n, w, capacity int64) {
	if !p.osFile {
		return
	}
	if w == capacity {
		if p.advised {
			p.advised = false
			p.small.Store(false)
			_ = unix.Madvise(data, unix.MADV_NORMAL) // a hint: an error changes nothing
		}
		return
	}
	if p.opts.SmallFlush < 0 {
		return
	}
	small := p.small.Load()
	if (!small && n < p.opts.SmallFlush) || (small && n >= 4*p.opts.SmallFlush) {
		p.streak++
	} else {
		p.streak = 0
	}
	if p.streak < 4 {
		return
	}
	p.streak = 0
	from := (max(p.populated.Load(), w) + p.page - 1) &^ (p.page - 1)
	if from >= capacity {
		return
	}
	advice := unix.MADV_NORMAL
	if !small {
		advice = unix.MADV_RANDOM
	}
	if unix.Madvise(data[from:], advice) == nil {
		p.small.Store(!small)
		p.advised = true
	}
}
