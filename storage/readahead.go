package storage

import (
	"sync"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/consumequeue"
)

// Backlog read-ahead. A consumer reading far behind the tail (a backlog no
// longer in the page cache: MetaQ's "massive accumulation") reads small
// runs of records, each a page-cache miss, one disk wait after another;
// and the kernel's sequential read-ahead, kept per descriptor, sees the
// interleaved reads of several consumers on one segment's descriptor as
// random. So the store asks for the next readAheadWindow bytes of the
// CommitLog itself, once per half window a queue's reads advance, when a
// read lies more than readAheadLag behind the written end. The window
// holds every queue's records of that stretch, which the other queues'
// consumers, draining beside it, read next.
const (
	readAheadWindow = 16 << 20
	readAheadLag    = 64 << 20
	readAheadSlots  = 64
)

// readAhead remembers, per queue (hashed into a few slots; a collision
// costs only an extra hint), where its last hint ended.
type readAhead struct {
	window, lag int64 // readAheadWindow, readAheadLag (tests use less)
	mu          sync.Mutex
	slot        [readAheadSlots]struct {
		q   queueKey
		end int64
	}
}

// adviseBacklogRead hints the window after phys, where a read of
// (topic, qid) begins, if that read is a backlog read and the last hint
// for the queue does not already cover most of the window.
func (s *Store) adviseBacklogRead(topic string, qid int32, phys int64) {
	w := s.written.Load()
	window, lag := int64(readAheadWindow), int64(readAheadLag)
	if s.ra.window > 0 {
		window, lag = s.ra.window, s.ra.lag
	}
	if w-phys < lag {
		return
	}
	k := queueKey{topic, qid}
	h := uint32(2166136261) // FNV-1a of the topic, then the id
	for j := 0; j < len(topic); j++ {
		h = (h ^ uint32(topic[j])) * 16777619
	}
	i := (h ^ uint32(qid)) * 16777619 % readAheadSlots
	end := min(phys+window, w)
	s.ra.mu.Lock()
	sl := &s.ra.slot[i]
	from := phys
	if sl.q == k && sl.end > phys {
		if sl.end-phys > window/2 {
			s.ra.mu.Unlock()
			return
		}
		from = sl.end
	}
	sl.q, sl.end = k, end
	s.ra.mu.Unlock()

	s.segs.RLock() // a segment closes under the write lock
	defer s.segs.RUnlock()
	for from < end {
		g := s.segmentAtLocked(from)
		if g == nil {
			return
		}
		upTo := min(end, g.end(s.segSize))
		if ra, ok := g.seg.(backend.ReadAdviser); ok {
			ra.AdviseRead(from-g.base, upTo-from)
		}
		from = upTo
	}
}

// coldReadsCached says whether a read of picked goes through the read
// block cache with Options.DirectColdReads: its records are not adjacent
// (a span read, which the cache serves) and the cache reads misses around
// the page cache. Such a read gets no read-ahead hint, which would fill
// the page cache with the backlog the cache reads directly.
func (s *Store) coldReadsCached(picked []consumequeue.Entry) bool {
	return s.opts.DirectColdReads && s.rc != nil && len(picked) > 1 &&
		picked[1].PhysOffset != picked[0].PhysOffset+int64(picked[0].Size)
}
