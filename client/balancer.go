package client

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Balancer chooses the queue a message is sent to. A producer has one and
// calls it from many goroutines at once: implementations must be safe for
// concurrent use.
//
// queues is never empty, holds the writable queues of one topic sorted in
// RocketMQ's order (SortQueues), and is not modified while the route it
// came from is current: a balancer may cache state derived from it per
// topic and recognise the same slice again cheaply (see sameQueues).
type Balancer interface {
	// Select returns the index in queues of the queue for a message
	// with the given sharding key ("" for none).
	Select(key string, queues []MessageQueue) int
	// Keyed reports whether Select sends equal non-empty keys to equal
	// queues. The producer then always passes a keyed message all
	// writable queues, even those of a broker it is avoiding, and
	// retries it on the same queue, so a key keeps its order.
	Keyed() bool
}

// RoundRobin sends successive messages to successive queues; keys are
// ignored. The zero value is ready to use.
type RoundRobin struct{ n atomic.Uint64 }

// Select implements Balancer.
func (b *RoundRobin) Select(_ string, queues []MessageQueue) int {
	return int((b.n.Add(1) - 1) % uint64(len(queues)))
}

// Keyed implements Balancer: false.
func (b *RoundRobin) Keyed() bool { return false }

// Random sends each message to a queue picked uniformly at random; keys
// are ignored. The zero value is ready to use.
type Random struct{}

// Select implements Balancer.
func (Random) Select(_ string, queues []MessageQueue) int { return rand.IntN(len(queues)) }

// Keyed implements Balancer: false.
func (Random) Keyed() bool { return false }

// HashModulo sends a keyed message to queue hash(key) mod len(queues):
// equal keys share a queue, so they keep their order. Any change in the
// number of queues moves most keys (see ConsistentHash and HashSlots).
// Messages without a key go round robin. The zero value is ready to use.
type HashModulo struct{ rr RoundRobin }

// Select implements Balancer.
func (b *HashModulo) Select(key string, queues []MessageQueue) int {
	if key == "" {
		return b.rr.Select(key, queues)
	}
	return int(hashString(key) % uint64(len(queues)))
}

// Keyed implements Balancer: true.
func (b *HashModulo) Keyed() bool { return true }

// hashString is 64-bit FNV-1a with a final avalanche (splitmix64's), so
// short keys that differ in one byte spread over the whole range.
// Deterministic across processes: producers agree on a key's queue.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

func mix64(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// topicCache keeps one value built from each topic's queue list, rebuilt
// when the list changes. Reads take no lock.
type topicCache[T any] struct {
	m sync.Map // topic -> *cachedQueues[T]
}

type cachedQueues[T any] struct {
	queues []MessageQueue
	v      T
}

func (c *topicCache[T]) lookup(queues []MessageQueue) (T, bool) {
	if e, ok := c.m.Load(queues[0].Topic); ok {
		if e := e.(*cachedQueues[T]); sameQueues(e.queues, queues) {
			return e.v, true
		}
	}
	var zero T
	return zero, false
}

func (c *topicCache[T]) store(queues []MessageQueue, v T) {
	c.m.Store(queues[0].Topic, &cachedQueues[T]{queues: queues, v: v})
}

// sameQueues reports whether a and b hold the same queues: at once if they
// are the same slice (the route's, unchanged), else element by element.
func sameQueues(a, b []MessageQueue) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) {
		return true
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
