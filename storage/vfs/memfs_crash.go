package vfs

import (
	"math/rand"
	"sort"
)

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
