package freeport

import "testing"

func TestGetDistinct(t *testing.T) {
	ps, err := Get(32)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 32 {
		t.Fatalf("got %d ports, want 32", len(ps))
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if seen[p] {
			t.Fatalf("port %d given twice: %v", p, ps)
		}
		seen[p] = true
		if p >= ephemeralLow() && ephemeralLow() > floor {
			t.Logf("port %d from the kernel's range (random picks all taken)", p)
		}
	}
}
