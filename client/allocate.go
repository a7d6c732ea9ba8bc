package client

import (
	"slices"
	"strconv"
)

// AllocateStrategy divides a topic's queues among the members of a
// consumer group in clustering mode. Every member runs it over the same
// inputs and must reach a consistent answer: each queue to exactly one
// member. Implementations must be deterministic and safe for concurrent
// use.
type AllocateStrategy interface {
	// Name identifies the strategy in heartbeats and logs.
	Name() string
	// Allocate returns self's share. queues (non-empty) are sorted by
	// SortQueues and members (client ids) by string; self is one of
	// members.
	Allocate(self string, members []string, queues []MessageQueue) []MessageQueue
}

// AllocateAveraged gives each member a contiguous run of queues, the first
// len(queues) mod len(members) members one more: RocketMQ's
// AllocateMessageQueueAveragely, so members of a group mixing this client
// and RocketMQ's agree.
type AllocateAveraged struct{}

// Name implements AllocateStrategy.
func (AllocateAveraged) Name() string { return "AVG" }

// Allocate implements AllocateStrategy.
func (AllocateAveraged) Allocate(self string, members []string, queues []MessageQueue) []MessageQueue {
	idx := slices.Index(members, self)
	if idx < 0 || len(queues) == 0 {
		return nil
	}
	n, m := len(queues), len(members)
	mod := n % m
	size := n / m
	if n <= m {
		size = 1
	} else if mod > 0 && idx < mod {
		size++
	}
	start := idx*size + mod
	if mod > 0 && idx < mod {
		start = idx * size
	}
	if start >= n {
		return nil
	}
	return slices.Clone(queues[start:min(start+size, n)])
}

// AllocateAveragedByCircle deals the queues out to members in turn (queue
// i to member i mod len(members)): RocketMQ's
// AllocateMessageQueueAveragelyByCircle. A member's queues then spread
// over the brokers.
type AllocateAveragedByCircle struct{}

// Name implements AllocateStrategy.
func (AllocateAveragedByCircle) Name() string { return "AVG_BY_CIRCLE" }

// Allocate implements AllocateStrategy.
func (AllocateAveragedByCircle) Allocate(self string, members []string, queues []MessageQueue) []MessageQueue {
	idx := slices.Index(members, self)
	if idx < 0 {
		return nil
	}
	var out []MessageQueue
	for i := idx; i < len(queues); i += len(members) {
		out = append(out, queues[i])
	}
	return out
}

// AllocateConsistentHash places members on a hash ring (VirtualNodes
// points each) and gives every queue to the member owning its point, so a
// member joining or leaving moves only the queues it takes or gives up.
// The hash is this package's, not RocketMQ's MD5 ring: every member of a
// group using it must be this client. The zero value uses 10 virtual
// nodes, RocketMQ's default.
type AllocateConsistentHash struct {
	// VirtualNodes is the points per member (default 10).
	VirtualNodes int
}

// Name implements AllocateStrategy.
func (AllocateConsistentHash) Name() string { return "CONSISTENT_HASH" }

// Allocate implements AllocateStrategy.
func (a AllocateConsistentHash) Allocate(self string, members []string, queues []MessageQueue) []MessageQueue {
	if !slices.Contains(members, self) {
		return nil
	}
	v := a.VirtualNodes
	if v <= 0 {
		v = 10
	}
	type point struct {
		h      uint64
		member string
	}
	ring := make([]point, 0, len(members)*v)
	for _, m := range members {
		for i := 0; i < v; i++ {
			ring = append(ring, point{hashString(m + "#" + strconv.Itoa(i)), m})
		}
	}
	slices.SortFunc(ring, func(a, b point) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		if a.member < b.member {
			return -1
		}
		return 1
	})
	var out []MessageQueue
	for _, q := range queues {
		h := hashString(q.String())
		i, _ := slices.BinarySearchFunc(ring, h, func(p point, h uint64) int {
			switch {
			case p.h < h:
				return -1
			case p.h > h:
				return 1
			}
			return 0
		})
		if i == len(ring) {
			i = 0
		}
		if ring[i].member == self {
			out = append(out, q)
		}
	}
	return out
}

// AllocateByConfig gives this member exactly the configured queues,
// whatever the others do: RocketMQ's AllocateMessageQueueByConfig. The
// operator makes the members' lists disjoint and complete.
type AllocateByConfig struct {
	Queues []MessageQueue
}

// Name implements AllocateStrategy.
func (AllocateByConfig) Name() string { return "CONFIG" }

// Allocate implements AllocateStrategy: the configured queues of this
// topic (the topic of queues[0]).
func (a AllocateByConfig) Allocate(_ string, _ []string, queues []MessageQueue) []MessageQueue {
	if len(queues) == 0 {
		return nil
	}
	var out []MessageQueue
	for _, q := range a.Queues {
		if q.Topic == queues[0].Topic {
			out = append(out, q)
		}
	}
	return out
}
