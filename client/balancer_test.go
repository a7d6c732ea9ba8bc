package client

import (
	"fmt"
	"math"
	"sync"
	"testing"
)

func testQueues(topic string, brokers, perBroker int) []MessageQueue {
	var qs []MessageQueue
	for b := 0; b < brokers; b++ {
		for q := 0; q < perBroker; q++ {
			qs = append(qs, MessageQueue{Topic: topic, BrokerName: fmt.Sprintf("broker-%c", 'a'+b), QueueID: q})
		}
	}
	SortQueues(qs)
	return qs
}

// spread sends keys through b and returns the count per queue and each
// key's queue.
func spread(b Balancer, keys int, queues []MessageQueue) (counts []int, owner []MessageQueue) {
	counts = make([]int, len(queues))
	owner = make([]MessageQueue, keys)
	for k := 0; k < keys; k++ {
		i := b.Select(fmt.Sprintf("order-%d", k), queues)
		counts[i]++
		owner[k] = queues[i]
	}
	return counts, owner
}

func maxDeviation(counts []int, total int) float64 {
	mean := float64(total) / float64(len(counts))
	worst := 0.0
	for _, c := range counts {
		worst = math.Max(worst, math.Abs(float64(c)-mean)/mean)
	}
	return worst
}

func TestRoundRobinCycles(t *testing.T) {
	var b RoundRobin
	qs := testQueues("t", 2, 3)
	for i := 0; i < 12; i++ {
		if got := b.Select("k", qs); got != i%6 {
			t.Fatalf("select %d = %d, want %d", i, got, i%6)
		}
	}
	if b.Keyed() {
		t.Fatal("round robin claims to be keyed")
	}
}

func TestRandomSpreads(t *testing.T) {
	qs := testQueues("t", 2, 4)
	counts := make([]int, len(qs))
	for i := 0; i < 80000; i++ {
		counts[Random{}.Select("", qs)]++
	}
	if d := maxDeviation(counts, 80000); d > 0.05 {
		t.Fatalf("random spread deviates %.3f: %v", d, counts)
	}
}

// keyedBalancers are the key-affine strategies with the share of keys each
// may move when a ninth queue joins eight (the ideal is 1/9).
var keyedBalancers = []struct {
	name     string
	make     func() Balancer
	maxMoved float64 // fraction of keys allowed to move 8 → 9 queues
	minMoved float64
	maxDev   float64 // allowed deviation from an even spread
}{
	{"HashModulo", func() Balancer { return &HashModulo{} }, 1, 0.7, 0.05},
	{"ConsistentHash", func() Balancer { return &ConsistentHash{} }, 1.5 / 9, 0.5 / 9, 0.25},
	{"HashSlots", func() Balancer { return &HashSlots{} }, 1.5 / 9, 0.5 / 9, 0.05},
}

func TestKeyedBalancersAreStableAndEven(t *testing.T) {
	const keys = 100000
	for _, tc := range keyedBalancers {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.make()
			if !b.Keyed() {
				t.Fatal("not keyed")
			}
			qs := testQueues("t", 2, 4)
			counts, first := spread(b, keys, qs)
			if d := maxDeviation(counts, keys); d > tc.maxDev {
				t.Errorf("spread deviates %.3f > %.3f: %v", d, tc.maxDev, counts)
			}
			// Same key, same queue; a fresh balancer (another producer) agrees.
			_, again := spread(tc.make(), keys, append([]MessageQueue(nil), qs...))
			for k := range first {
				if first[k] != again[k] {
					t.Fatalf("key %d: %v then %v", k, first[k], again[k])
				}
			}
		})
	}
}

func TestKeyedBalancersMoveFewKeysOnQueueAdd(t *testing.T) {
	const keys = 100000
	for _, tc := range keyedBalancers {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.make()
			before := testQueues("t", 2, 4) // 8 queues
			_, own1 := spread(b, keys, before)
			after := append(append([]MessageQueue(nil), before...), MessageQueue{Topic: "t", BrokerName: "broker-c", QueueID: 0})
			SortQueues(after)
			_, own2 := spread(b, keys, after)
			moved, toNew := 0, 0
			for k := range own1 {
				if own1[k] != own2[k] {
					moved++
					if own2[k].BrokerName == "broker-c" {
						toNew++
					}
				}
			}
			frac := float64(moved) / keys
			t.Logf("%s: %d of %d keys moved (%.1f%%; ideal %.1f%%), %d to the new queue", tc.name, moved, keys, 100*frac, 100.0/9, toNew)
			if frac > tc.maxMoved || frac < tc.minMoved {
				t.Fatalf("moved %.3f of keys, want in [%.3f, %.3f]", frac, tc.minMoved, tc.maxMoved)
			}
			if tc.name == "ConsistentHash" && toNew != moved {
				t.Fatalf("consistent hash moved %d keys but only %d to the new queue", moved, toNew)
			}
			// Removing the queue again restores the old mapping exactly.
			_, own3 := spread(b, keys, before)
			for k := range own1 {
				if own1[k] != own3[k] {
					t.Fatalf("key %d did not return to %v (got %v)", k, own1[k], own3[k])
				}
			}
		})
	}
}

func TestKeyedBalancersWithoutKeyRoundRobin(t *testing.T) {
	for _, tc := range keyedBalancers {
		b := tc.make()
		qs := testQueues("t", 1, 4)
		seen := map[int]bool{}
		for i := 0; i < 4; i++ {
			seen[b.Select("", qs)] = true
		}
		if len(seen) != 4 {
			t.Errorf("%s: keyless messages visited %d of 4 queues", tc.name, len(seen))
		}
	}
}

func TestBalancersConcurrentTopics(t *testing.T) {
	for _, tc := range keyedBalancers {
		b := tc.make()
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				qs := testQueues(fmt.Sprintf("topic-%d", g%2), 1+g%2, 4)
				want := b.Select("fixed-key", qs)
				for i := 0; i < 200; i++ {
					if got := b.Select("fixed-key", qs); got != want {
						t.Errorf("%s: key moved from %d to %d with no route change", tc.name, want, got)
						return
					}
				}
			}(g)
		}
		wg.Wait()
	}
}

func TestHashSlotsTableEven(t *testing.T) {
	b := &HashSlots{Slots: 1000} // raised to the prime 1009
	qs := testQueues("t", 1, 7)
	table := b.buildTable(qs)
	if len(table) != 1009 {
		t.Fatalf("table of %d slots, want 1009", len(table))
	}
	counts := make([]int, len(qs))
	for _, q := range table {
		counts[q]++
	}
	for i, c := range counts {
		if c < 1009/7 || c > 1009/7+1 {
			t.Fatalf("queue %d owns %d slots, want %d or %d: %v", i, c, 1009/7, 1009/7+1, counts)
		}
	}
}

func BenchmarkBalancers(b *testing.B) {
	qs := testQueues("t", 4, 8)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("order-%d", i)
	}
	for _, bb := range []struct {
		name string
		b    Balancer
	}{{"RoundRobin", &RoundRobin{}}, {"Random", Random{}}, {"HashModulo", &HashModulo{}}, {"ConsistentHash", &ConsistentHash{}}, {"HashSlots", &HashSlots{}}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				bb.b.Select(keys[i%len(keys)], qs)
			}
		})
	}
}
