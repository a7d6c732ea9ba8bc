package client

import (
	"slices"
	"strconv"
)

// DefaultVirtualNodes is ConsistentHash's virtual nodes per queue when
// VirtualNodes is 0.
const DefaultVirtualNodes = 160

// ConsistentHash sends a keyed message to the queue owning the key's
// point on a hash ring where every queue has VirtualNodes points. Adding a
// queue moves only the keys the new queue takes over (about 1/(n+1) of
// them), all to the new queue; removing one moves only its own keys.
// Lookup is a binary search over n×VirtualNodes points. Messages without
// a key go round robin. Safe for concurrent use; the zero value uses
// DefaultVirtualNodes.
type ConsistentHash struct {
	// VirtualNodes is the points per queue on the ring (default 160):
	// more points spread keys more evenly (about ±1/sqrt(VirtualNodes))
	// at the cost of memory and rebuild time on route changes.
	VirtualNodes int

	rr    RoundRobin
	rings topicCache[*hashRing]
}

type hashRing struct {
	points []uint64 // sorted
	owner  []int32  // queue index of each point
}

// Select implements Balancer.
func (b *ConsistentHash) Select(key string, queues []MessageQueue) int {
	if key == "" {
		return b.rr.Select(key, queues)
	}
	r, ok := b.rings.lookup(queues)
	if !ok {
		r = b.buildRing(queues)
		b.rings.store(queues, r)
	}
	h := hashString(key)
	i, _ := slices.BinarySearch(r.points, h)
	if i == len(r.points) {
		i = 0
	}
	return int(r.owner[i])
}

// Keyed implements Balancer: true.
func (b *ConsistentHash) Keyed() bool { return true }

func (b *ConsistentHash) buildRing(queues []MessageQueue) *hashRing {
	v := b.VirtualNodes
	if v <= 0 {
		v = DefaultVirtualNodes
	}
	type point struct {
		h uint64
		q int32
	}
	pts := make([]point, 0, len(queues)*v)
	for qi, q := range queues {
		base := queueLabel(q) + "#"
		for i := 0; i < v; i++ {
			pts = append(pts, point{hashString(base + strconv.Itoa(i)), int32(qi)})
		}
	}
	// Ties (rare) break by queue label order, so every producer builds
	// the same ring.
	slices.SortFunc(pts, func(a, b point) int {
		if a.h != b.h {
			if a.h < b.h {
				return -1
			}
			return 1
		}
		return queues[a.q].Compare(queues[b.q])
	})
	r := &hashRing{points: make([]uint64, len(pts)), owner: make([]int32, len(pts))}
	for i, p := range pts {
		r.points[i], r.owner[i] = p.h, p.q
	}
	return r
}

// queueLabel identifies a queue within its topic, for hashing.
func queueLabel(q MessageQueue) string { return q.BrokerName + "/" + strconv.Itoa(q.QueueID) }
