package client

// DefaultSlots is HashSlots' table size when Slots is 0: a prime, as
// Maglev's table construction requires.
const DefaultSlots = 65537

// HashSlots sends a keyed message to the queue owning slot hash(key) mod
// Slots of a fixed table of Slots entries (Maglev hashing: Eisenbud et al.,
// NSDI 2016). The table gives every queue Slots/n entries, ±1, so keys
// spread evenly; when a queue is added or removed most slots keep their
// queue (slightly more than the minimal 1/(n+1) move). Lookup is one table
// read. The table is built per topic when its queues change, in O(Slots ×
// log Slots) time. Messages without a key go round robin. Safe for
// concurrent use; the zero value uses DefaultSlots.
type HashSlots struct {
	// Slots is the table size (default 65537). It must be a prime well
	// above 100 × queues for an even spread; a non-prime is raised to the
	// next prime.
	Slots int

	rr     RoundRobin
	tables topicCache[[]uint16]
}

// Select implements Balancer.
func (b *HashSlots) Select(key string, queues []MessageQueue) int {
	if key == "" {
		return b.rr.Select(key, queues)
	}
	t, ok := b.tables.lookup(queues)
	if !ok {
		t = b.buildTable(queues)
		b.tables.store(queues, t)
	}
	return int(t[hashString(key)%uint64(len(t))])
}

// Keyed implements Balancer: true.
func (b *HashSlots) Keyed() bool { return true }

// buildTable fills the Maglev lookup table: each queue walks its own
// permutation of the slots (offset and skip from two hashes of its label)
// and, in turn, claims the next free slot on its walk, until all are taken.
func (b *HashSlots) buildTable(queues []MessageQueue) []uint16 {
	m := b.Slots
	if m <= 0 {
		m = DefaultSlots
	}
	m = nextPrime(m)
	n := len(queues)
	if n > 1<<16-1 {
		n = 1<<16 - 1 // more queues than a uint16 names: the rest get no slot
	}
	offset := make([]uint64, n)
	skip := make([]uint64, n)
	next := make([]uint64, n)
	for i := 0; i < n; i++ {
		label := queueLabel(queues[i])
		offset[i] = hashString(label) % uint64(m)
		skip[i] = hashString(label+"#skip")%uint64(m-1) + 1
	}
	const free = 1<<16 - 1
	table := make([]uint16, m)
	for i := range table {
		table[i] = free
	}
	filled := 0
	for filled < m {
		for i := 0; i < n && filled < m; i++ {
			c := (offset[i] + next[i]*skip[i]) % uint64(m)
			for table[c] != free {
				next[i]++
				c = (offset[i] + next[i]*skip[i]) % uint64(m)
			}
			table[c] = uint16(i)
			next[i]++
			filled++
		}
	}
	return table
}

func nextPrime(n int) int {
	if n < 3 {
		return 3
	}
	for ; ; n++ {
		if isPrime(n) {
			return n
		}
	}
}

func isPrime(n int) bool {
	if n%2 == 0 {
		return n == 2
	}
	for d := 3; d*d <= n; d += 2 {
		if n%d == 0 {
			return false
		}
	}
	return true
}
