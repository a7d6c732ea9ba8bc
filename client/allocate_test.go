package client

import (
	"fmt"
	"slices"
	"testing"
)

func members(n int) []string {
	var m []string
	for i := 0; i < n; i++ {
		m = append(m, fmt.Sprintf("127.0.0.1@%d", 100+i))
	}
	slices.Sort(m)
	return m
}

// checkPartition asserts that the strategy gives each queue to exactly one
// member and returns the shares.
func checkPartition(t *testing.T, s AllocateStrategy, ms []string, qs []MessageQueue) map[string][]MessageQueue {
	t.Helper()
	owner := map[MessageQueue]string{}
	shares := map[string][]MessageQueue{}
	for _, m := range ms {
		got := s.Allocate(m, ms, qs)
		shares[m] = got
		for _, q := range got {
			if o, dup := owner[q]; dup {
				t.Fatalf("%s: %v given to %s and %s", s.Name(), q, o, m)
			}
			owner[q] = m
		}
	}
	if len(owner) != len(qs) {
		t.Fatalf("%s: %d of %d queues allocated (%d members)", s.Name(), len(owner), len(qs), len(ms))
	}
	return shares
}

func TestAllocateAveragedMatchesRocketMQ(t *testing.T) {
	qs := testQueues("t", 2, 5) // 10 queues
	ms := members(3)
	shares := checkPartition(t, AllocateAveraged{}, ms, qs)
	// RocketMQ: 10 over 3 → 4, 3, 3, contiguous.
	want := [][]MessageQueue{qs[0:4], qs[4:7], qs[7:10]}
	for i, m := range ms {
		if !slices.Equal(shares[m], want[i]) {
			t.Fatalf("member %d got %v, want %v", i, shares[m], want[i])
		}
	}
	// More members than queues: the first ones get one each, the rest none.
	few := testQueues("t", 1, 2)
	shares = checkPartition(t, AllocateAveraged{}, members(4), few)
	if n := len(shares[members(4)[3]]); n != 0 {
		t.Fatalf("the fourth member of four got %d of two queues", n)
	}
}

func TestAllocateByCircle(t *testing.T) {
	qs := testQueues("t", 2, 4)
	ms := members(3)
	shares := checkPartition(t, AllocateAveragedByCircle{}, ms, qs)
	if want := []MessageQueue{qs[1], qs[4], qs[7]}; !slices.Equal(shares[ms[1]], want) {
		t.Fatalf("member 1 got %v, want %v", shares[ms[1]], want)
	}
}

func TestAllocateStrategiesPartition(t *testing.T) {
	for _, s := range []AllocateStrategy{AllocateAveraged{}, AllocateAveragedByCircle{}, AllocateConsistentHash{}, AllocateConsistentHash{VirtualNodes: 50}} {
		for nq := 1; nq <= 17; nq += 4 {
			for nm := 1; nm <= 6; nm++ {
				shares := checkPartition(t, s, members(nm), testQueues("t", 1, nq))
				if _, isHash := s.(AllocateConsistentHash); !isHash {
					lo, hi := nq, 0
					for _, sh := range shares {
						lo, hi = min(lo, len(sh)), max(hi, len(sh))
					}
					if hi-lo > 1 {
						t.Fatalf("%s: %d queues over %d members: shares from %d to %d", s.Name(), nq, nm, lo, hi)
					}
				}
			}
		}
	}
	// A stranger gets nothing.
	if got := (AllocateAveraged{}).Allocate("nobody", members(2), testQueues("t", 1, 4)); len(got) != 0 {
		t.Fatalf("non-member got %v", got)
	}
}

func TestAllocateConsistentHashMovesFewOnJoin(t *testing.T) {
	s := AllocateConsistentHash{VirtualNodes: 40}
	qs := testQueues("t", 4, 16) // 64 queues
	before := checkPartition(t, s, members(4), qs)
	after := checkPartition(t, s, members(5), qs)
	newcomer := members(5)[4]
	moved := 0
	for m, sh := range before {
		for _, q := range sh {
			if !slices.Contains(after[m], q) {
				moved++
				if !slices.Contains(after[newcomer], q) {
					t.Fatalf("%v moved between old members", q)
				}
			}
		}
	}
	t.Logf("consistent hash: %d of %d queues moved when a fifth member joined", moved, len(qs))
	if moved > len(qs)/3 {
		t.Fatalf("%d of %d queues moved", moved, len(qs))
	}
}

func TestAllocateByConfig(t *testing.T) {
	qs := testQueues("t", 1, 4)
	s := AllocateByConfig{Queues: []MessageQueue{qs[1], {Topic: "other", BrokerName: "x", QueueID: 0}}}
	if got := s.Allocate("me", members(3), qs); !slices.Equal(got, []MessageQueue{qs[1]}) {
		t.Fatalf("got %v", got)
	}
}
