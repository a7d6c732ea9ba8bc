package storage

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/consumequeue"
)

// The read block cache. The records a pull takes from one queue lie
// among other queues' records in the CommitLog, so a span read (get.go)
// copies the whole stretch out of the kernel for the few records it
// wants: consumers draining eight interleaved queues copied every byte of
// the backlog eight times, the largest cost of the broker's pull. The
// pulls of a topic's queues move through the same stretch of the log at
// about the same time, so the stretch is read once, in aligned blocks,
// into a small cache, and each pull copies its records out of the blocks.
//
// Only span reads go through it (records that do not lie together), and
// only over whole blocks below the handed offset (handoff.go): the bytes
// there are in the file, not in a backend's write buffer, and change only
// by a cut; a block remembers the cut generation it was read in.
// Records are checked after the copy (verifyRecord), as before, so a
// block holds what the file holds, never more trusted. mmap segments
// never use it (their reads copy from the mapping).
const readBlockSize = 256 << 10

// DefaultReadCacheSize is the read block cache's size when
// Options.ReadCacheSize is 0: 256 blocks. Two consumers draining eight
// interleaved queues (experiments/backlog-drain.json) spread over more
// than 16 MiB of the log: with 16 MiB each block was read 1.7 times cold
// and 4.5 times warm, with 64 MiB once.
const DefaultReadCacheSize = 64 << 20

// readBlock is one cached block of the log. start, gen and the place in
// the index change under blockCache.mu with mu write-locked; readers copy
// under mu read-locked and check start, gen and ok there.
type readBlock struct {
	mu    sync.RWMutex
	start int64 // CommitLog offset, a multiple of readBlockSize
	gen   int64 // the cut generation it was read in
	ok    bool  // its bytes were read
	used  atomic.Bool
	// data holds the block's bytes; n of them were read: fewer than a
	// block at the end of a sealed segment's file, which stops after its
	// last record (the blank record's header, not its span).
	data []byte
	n    int
}

type blockCache struct {
	mu     sync.Mutex
	index  map[int64]*readBlock
	blocks []*readBlock
	max    int
	hand   int

	hits, misses, direct atomic.Int64
	// ahead carries read-ahead requests (kickAhead) to
	// runBlockReadAhead; nil without Options.DirectColdReads.
	ahead chan blockReq
}

// newBlockCache returns a cache of size bytes, or nil (no cache) when
// size holds fewer than two blocks.
func newBlockCache(size int64) *blockCache {
	n := int(size / readBlockSize)
	if n < 2 {
		return nil
	}
	return &blockCache{index: make(map[int64]*readBlock, n), max: n}
}

// covers says whether the cache may serve [start, end): whole blocks, all
// below handed (in the file: a block read past it would keep the zeros of
// bytes still in a write buffer) and in one segment.
func (c *blockCache) covers(s *Store, start, end int64) bool {
	if c == nil || s.segSize%readBlockSize != 0 {
		return false
	}
	last := (end + readBlockSize - 1) &^ (readBlockSize - 1)
	return last <= s.handed.Load() && start/s.segSize == (last-1)/s.segSize
}

// readGroup copies the records of group (ascending, within [start, end)
// that covers approved) into dst back to back, through the blocks.
// ok is false when it could not get a block (every one busy): the caller
// reads the span itself.
func (c *blockCache) readGroup(s *Store, dst []byte, group []consumequeue.Entry, gen int64) (ok bool, err error) {
	off, i := 0, 0
	pos := group[0].PhysOffset
	for i < len(group) {
		bstart := pos &^ (readBlockSize - 1)
		b, err := c.get(s, bstart, gen)
		if b == nil || err != nil {
			return false, err
		}
		if group[len(group)-1].PhysOffset+int64(group[len(group)-1].Size) > bstart+int64(b.n) && b.n < readBlockSize {
			b.mu.RUnlock() // the group runs past the file's end: not here
			return false, nil
		}
		bend := bstart + readBlockSize
		for i < len(group) && pos < bend {
			e := group[i]
			recEnd := e.PhysOffset + int64(e.Size)
			n := min(recEnd, bend) - pos
			off += copy(dst[off:], b.data[pos-bstart:pos-bstart+n])
			pos += n
			if pos == recEnd {
				if i++; i < len(group) {
					pos = group[i].PhysOffset
				}
			}
		}
		b.mu.RUnlock()
	}
	return true, nil
}

// maxBlockTries bounds get's retries when the block it found was taken
// for another one before it could read-lock it.
const maxBlockTries = 4

// get returns the block at start read-locked, reading it on a miss; nil
// when every block is busy or the block kept being taken.
func (c *blockCache) get(s *Store, start, gen int64) (*readBlock, error) {
	for try := 0; try < maxBlockTries; try++ {
		c.mu.Lock()
		if b := c.index[start]; b != nil && b.gen == gen {
			b.used.Store(true)
			c.mu.Unlock()
			b.mu.RLock()
			if b.ok && b.start == start && b.gen == gen {
				c.hits.Add(1)
				return b, nil
			}
			b.mu.RUnlock() // being read, failed, or taken for another block
			continue
		}
		b := c.claimLocked(start, gen)
		c.mu.Unlock()
		if b == nil {
			return nil, nil
		}
		direct, err := c.load(s, b)
		if err != nil {
			return nil, err
		}
		if direct {
			c.kickAhead(s, start, gen)
		}
		b.mu.RLock()
		if b.ok && b.start == start && b.gen == gen {
			return b, nil
		}
		b.mu.RUnlock()
	}
	return nil, nil
}

// claimLocked takes a block for start (c.mu held): indexed, not yet
// read, write-locked; nil when none is free.
func (c *blockCache) claimLocked(start, gen int64) *readBlock {
	b := c.victimLocked()
	if b == nil {
		return nil
	}
	if c.index[b.start] == b {
		delete(c.index, b.start)
	}
	b.start, b.gen, b.ok = start, gen, false
	c.index[start] = b
	return b
}

// load reads the claimed block b and unlocks it; a block that failed
// leaves the index. direct says the read went around the page cache.
func (c *blockCache) load(s *Store, b *readBlock) (direct bool, err error) {
	c.misses.Add(1)
	n, direct, err := c.read(s, b.data, b.start)
	b.ok, b.n = err == nil, n
	if err != nil {
		c.mu.Lock()
		if c.index[b.start] == b {
			delete(c.index, b.start)
		}
		c.mu.Unlock()
	}
	b.used.Store(err == nil)
	b.mu.Unlock()
	return direct, err
}

// Read-ahead of direct reads. A miss read with O_DIRECT waits for the
// disk, and nothing else reads ahead of it (the kernel's read-ahead and
// the store's hints fill the page cache, which direct reads go around):
// so after such a miss the next readAheadBlocks blocks are read into the
// cache by the store's read-ahead goroutine (runBlockReadAhead), while
// the pull that missed goes on. A request that finds the queue full, the
// block cached or no longer below the handed offset is dropped.
const readAheadBlocks = 4

// blockReq asks for the block at start, read in cut generation gen.
type blockReq struct{ start, gen int64 }

// kickAhead queues the blocks after start (never waits).
func (c *blockCache) kickAhead(s *Store, start, gen int64) {
	if c.ahead == nil {
		return
	}
	for k := int64(1); k <= readAheadBlocks; k++ {
		select {
		case c.ahead <- blockReq{start + k*readBlockSize, gen}:
		default:
			return
		}
	}
}

// prefetch reads the block r asks for unless it is cached or no longer
// one the cache may hold.
func (c *blockCache) prefetch(s *Store, r blockReq) {
	if s.cuts.Load() != r.gen || !c.covers(s, r.start, r.start+readBlockSize) {
		return
	}
	c.mu.Lock()
	if b := c.index[r.start]; b != nil && b.gen == r.gen {
		c.mu.Unlock()
		return
	}
	b := c.claimLocked(r.start, r.gen)
	c.mu.Unlock()
	if b != nil {
		_, _ = c.load(s, b) // a read that fails leaves no block: the pull that wants it reads it and sees the error
	}
}

// runBlockReadAhead serves the cache's read-ahead requests until Close
// closes stop.background.
func (s *Store) runBlockReadAhead() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop.background:
			return
		case r := <-s.rc.ahead:
			s.rc.prefetch(s, r)
		}
	}
}

// victimLocked returns a block write-locked for reuse: a new one while the
// cache is not full, else the first the clock finds unused since its last
// pass and not being read; nil when none is free.
func (c *blockCache) victimLocked() *readBlock {
	if len(c.blocks) < c.max {
		b := &readBlock{data: backend.AlignedBlock(readBlockSize), start: -1}
		b.mu.Lock()
		c.blocks = append(c.blocks, b)
		return b
	}
	for range 2 * len(c.blocks) {
		b := c.blocks[c.hand]
		c.hand = (c.hand + 1) % len(c.blocks)
		if b.used.Swap(false) {
			continue
		}
		if b.mu.TryLock() {
			return b
		}
	}
	return nil
}

// read reads the block at start into data: with Options.DirectColdReads
// around the page cache when its bytes are not all there, else (or when
// the segment cannot) as every read does.
func (c *blockCache) read(s *Store, data []byte, start int64) (n int, direct bool, err error) {
	if s.opts.DirectColdReads {
		n, direct, err := s.readColdAt(data, start)
		if err == nil {
			if direct {
				c.direct.Add(1)
			}
			return n, direct, nil
		}
		if !errors.Is(err, backend.ErrNoColdRead) {
			return 0, false, err
		}
	}
	n, err = s.readLogAt(data, start, true)
	return n, false, err
}

// readColdAt is readLogAt through the segment's ColdReader (which
// checks that every byte is in the file); backend.ErrNoColdRead when the
// segment has none.
func (s *Store) readColdAt(b []byte, phys int64) (int, bool, error) {
	s.segs.RLock() // written is checked under it: a cut lowers it under the write lock
	defer s.segs.RUnlock()
	g, err := s.segmentSpanLocked(phys, len(b))
	if err != nil {
		return 0, false, err
	}
	cr, ok := g.seg.(backend.ColdReader)
	if !ok {
		return 0, false, backend.ErrNoColdRead
	}
	n, direct, err := cr.ReadCold(b, phys-g.base)
	if err != nil && !errors.Is(err, backend.ErrNoColdRead) {
		err = fmt.Errorf("storage: read %d bytes at %d of %s: %w", len(b), phys-g.base, g.path, err)
	}
	return n, direct, err
}

func (c *blockCache) directCount() int64 {
	if c == nil {
		return 0
	}
	return c.direct.Load()
}

func (c *blockCache) hitCount() int64 {
	if c == nil {
		return 0
	}
	return c.hits.Load()
}

func (c *blockCache) missCount() int64 {
	if c == nil {
		return 0
	}
	return c.misses.Load()
}
