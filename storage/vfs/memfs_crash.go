package vfs

import (
	"math/rand"
	"sort"
)

// Two crashes, side by side. A test takes one of these images of m at the
// moment it chooses (with no goroutine writing through a mapping) and
// reopens the store on it; the old store is abandoned: nothing it does
// afterwards reaches the image.
//
//	                      ProcessCrashClone            CrashClone (power loss)
//	what dies             the process: its user-space  the machine: the process and
//	                      buffers, open files, locks,  the kernel's page cache and
//	                      mappings                     unsynced directory entries
//	bytes written         all kept (synced or not)     synced kept; each unsynced 4 KiB
//	                                                   block kept or lost, one torn
//	written via a mapping all kept                     as unsynced blocks
//	size changes          all kept                     synced kept; unsynced all or none
//	names (create,        all kept, SyncDir or not     as of the parent's last SyncDir
//	rename, remove)
//	durability state      kept: a later power loss     none left to lose: every byte
//	                      of the clone still loses     and name of the clone is durable
//	                      what m had not synced
//
// A process crash (kill -9, a panic, the OOM killer) loses only what the
// process held; a power loss (or a kernel panic) also loses what the
// kernel had not written back. A store that acknowledges an append once
// its bytes are in the kernel (durability "process-crash") must lose no
// acknowledged append to the first; only one that acknowledges after fsync
// ("power-loss") survives the second.

// ProcessCrashClone returns a new MemFS holding what the kernel holds when
// the process using m dies: every file's current bytes and size, every
// current name, whether synced or not, bytes written through a mapping
// included. What m had not yet made durable stays not durable in the clone
// (dirty blocks, unsynced sizes and names), so a CrashClone of the clone is
// the power loss that follows. Files no name points at (removed while
// open) are gone. The clone shares nothing with m and has m's capacity and
// usage, no open files, locks or mappings. Call it while no goroutine
// writes through a mapping of m.
func (m *MemFS) ProcessCrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	c.mu.capacity = m.mu.capacity
	c.mu.used = m.mu.used
	c.mu.boot = m.mu.boot // the kernel lives on
	c.mu.root = processNode(m.mu.root, map[*memNode]*memNode{})
	return c
}

// processNode returns n's copy after a process crash (once per node: a
// file reached by a current and a durable name stays one file).
func processNode(n *memNode, memo map[*memNode]*memNode) *memNode {
	if c, ok := memo[n]; ok {
		return c
	}
	if n.dir {
		c := newDirNode()
		memo[n] = c
		for k, cn := range n.children {
			c.children[k] = processNode(cn, memo)
		}
		for k, sn := range n.synced {
			c.synced[k] = processNode(sn, memo)
		}
		return c
	}
	d := &n.file
	c := &memNode{file: memData{
		cur:    append([]byte(nil), d.cur...),
		dur:    append([]byte(nil), d.dur...),
		minLen: d.minLen,
		dirty:  append(blockSet(nil), d.dirty...),
		backed: d.backed,
	}}
	// The mapping goes with the process; what it dirtied stays dirty.
	d.mappedDirtyLocked(func(b int64) { c.file.dirty.add(b) })
	memo[n] = c
	return c
}

// CrashClone returns a new MemFS holding what a power loss would leave of
// m: every durable name and byte; of each file's unsynced dirty blocks
// (written, or differing in a mapped range) each kept or reverted to its
// durable bytes at random, with at most one block per file torn (a random
// prefix of it kept); an unsynced size change (truncate, allocate, a write
// past the end) applied or not; names created, renamed or removed since
// the parent's last SyncDir reverted.
//
// With rng nil the outcome is the harshest deterministic one: every
// unsynced block and size change is lost. Given the same seed and the same
// operations, the outcome is the same. m is unchanged; the clone shares
// nothing with it and has m's capacity, no open files, locks or mappings.
// Call it while no goroutine writes through a mapping of m.
func (m *MemFS) CrashClone(rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	c.mu.capacity = m.mu.capacity
	memo := map[*memNode]*memNode{}
	c.mu.root = crashNode(m.mu.root, rng, memo)
	for _, n := range memo {
		if !n.dir {
			c.mu.used += n.file.backed
		}
	}
	return c
}

// crashNode returns n's after-crash copy (once per node, so a file reached
// by two durable names stays one file).
func crashNode(n *memNode, rng *rand.Rand, memo map[*memNode]*memNode) *memNode {
	if c, ok := memo[n]; ok {
		return c
	}
	if n.dir {
		c := newDirNode()
		memo[n] = c
		// Sorted, so a seed always draws the same numbers for the same file.
		names := make([]string, 0, len(n.synced))
		for k := range n.synced {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			cc := crashNode(n.synced[k], rng, memo)
			c.children[k] = cc
			c.synced[k] = cc
		}
		return c
	}
	img := crashImage(&n.file, rng)
	c := &memNode{file: memData{
		cur:    img,
		dur:    append([]byte(nil), img...),
		minLen: len(img),
		backed: min(n.file.backed, int64(len(img))),
	}}
	memo[n] = c
	return c
}

// crashImage returns the bytes of d that survive a power loss.
func crashImage(d *memData, rng *rand.Rand) []byte {
	img := append([]byte(nil), d.dur...)
	if rng == nil {
		return img
	}
	cur := d.cur
	if len(cur) != len(d.dur) || d.minLen < len(d.dur) {
		// The unsynced size change: all of it, or none.
		if rng.Intn(2) == 0 {
			img = resizeZero(img[:min(len(img), d.minLen)], len(cur))
		}
	}
	var blocks []int64
	d.dirty.each(func(b int64) { blocks = append(blocks, b) })
	d.mappedDirtyLocked(func(b int64) { blocks = append(blocks, b) })
	sort.Slice(blocks, func(i, j int) bool { return blocks[i] < blocks[j] })
	blocks = dedupInRange(blocks, int64(len(cur)))

	torn := -1
	if len(blocks) > 0 && rng.Intn(2) == 0 {
		torn = rng.Intn(len(blocks))
	}
	for i, b := range blocks {
		s := b * memBlock
		e := min(s+memBlock, int64(len(cur)))
		keep := s
		switch {
		case i == torn:
			keep = s + rng.Int63n(e-s)
		case rng.Intn(2) == 0:
			keep = e
		}
		if keep <= s {
			continue
		}
		if int64(len(img)) < keep {
			img = resizeZero(img, int(keep))
		}
		copy(img[s:keep], cur[s:keep])
	}
	return img
}

// dedupInRange drops repeats from sorted blocks and those starting at or
// past size.
func dedupInRange(blocks []int64, size int64) []int64 {
	out := blocks[:0]
	for _, b := range blocks {
		if b*memBlock >= size || (len(out) > 0 && out[len(out)-1] == b) {
			continue
		}
		out = append(out, b)
	}
	return out
}
