package broker

import (
	"math/rand"
	"testing"
	"time"
)

func TestHolderArrivedAndExpired(t *testing.T) {
	h := newHolder()
	t0 := time.Unix(1000, 0)
	a := QueueKey{"t", 0}
	b := QueueKey{"t", 1}
	p1 := &heldPull{key: a, offset: 5, deadline: t0.Add(20 * time.Second)}
	p2 := &heldPull{key: a, offset: 7, deadline: t0.Add(10 * time.Second)}
	p3 := &heldPull{key: b, offset: 0, deadline: t0.Add(15 * time.Second)}
	if !h.hold(p1) {
		t.Fatal("first hold is the earliest")
	}
	if !h.hold(p2) {
		t.Fatal("p2 is earlier")
	}
	if h.hold(p3) {
		t.Fatal("p3 is not the earliest")
	}
	if got := h.arrived(a, 5); len(got) != 0 {
		t.Fatalf("offset 5 not yet written: %v", got)
	}
	if got := h.arrived(a, 6); len(got) != 1 || got[0] != p1 {
		t.Fatalf("arrived(a,6) = %v", got)
	}
	if d, _ := h.next(); !d.Equal(p2.deadline) {
		t.Fatalf("next = %v", d)
	}
	if got := h.expired(t0.Add(12 * time.Second)); len(got) != 1 || got[0] != p2 {
		t.Fatalf("expired = %v", got)
	}
	if h.len() != 1 || !h.remove(p3) || h.remove(p3) || h.len() != 0 {
		t.Fatal("remove")
	}
	if _, ok := h.next(); ok {
		t.Fatal("empty holder has a deadline")
	}
}

// TestHolderRandom checks the holder against a plain list model.
func TestHolderRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	h := newHolder()
	var model []*heldPull
	now := time.Unix(0, 0)
	for i := 0; i < 5000; i++ {
		switch rng.Intn(4) {
		case 0, 1:
			p := &heldPull{key: QueueKey{"t", int32(rng.Intn(3))}, offset: int64(rng.Intn(10)),
				deadline: now.Add(time.Duration(rng.Intn(100)) * time.Millisecond)}
			h.hold(p)
			model = append(model, p)
		case 2:
			k := QueueKey{"t", int32(rng.Intn(3))}
			max := int64(rng.Intn(12))
			got := h.arrived(k, max)
			var want, keep []*heldPull
			for _, p := range model {
				if p.key == k && p.offset < max {
					want = append(want, p)
				} else {
					keep = append(keep, p)
				}
			}
			model = keep
			if !sameSet(got, want) {
				t.Fatalf("seed %d step %d: arrived %d want %d", seed, i, len(got), len(want))
			}
		case 3:
			now = now.Add(time.Duration(rng.Intn(30)) * time.Millisecond)
			got := h.expired(now)
			var want, keep []*heldPull
			for _, p := range model {
				if !p.deadline.After(now) {
					want = append(want, p)
				} else {
					keep = append(keep, p)
				}
			}
			model = keep
			if !sameSet(got, want) {
				t.Fatalf("seed %d step %d: expired %d want %d", seed, i, len(got), len(want))
			}
		}
		if h.len() != len(model) {
			t.Fatalf("seed %d step %d: len %d want %d", seed, i, h.len(), len(model))
		}
	}
}

func sameSet(a, b []*heldPull) bool {
	if len(a) != len(b) {
		return false
	}
	m := make(map[*heldPull]bool)
	for _, p := range a {
		m[p] = true
	}
	for _, p := range b {
		if !m[p] {
			return false
		}
	}
	return true
}
