package client

import (
	"math/rand/v2"
	"sync"
	"testing"
)

func TestTrackerCommitsLowestUnhandled(t *testing.T) {
	tr := newTracker(100, flowLimits{})
	if got := tr.commitOffset(); got != 100 {
		t.Fatalf("fresh tracker commits %d", got)
	}
	seq := tr.add([]int64{100, 101, 103}, []int64{1, 1, 1}, 104) // 102 filtered by tag
	tr.done(seq + 1)
	if got := tr.commitOffset(); got != 100 {
		t.Fatalf("with 100 unhandled, commit %d", got)
	}
	tr.done(seq)
	if got := tr.commitOffset(); got != 103 {
		t.Fatalf("with 103 unhandled, commit %d", got)
	}
	tr.done(seq + 2)
	if got := tr.commitOffset(); got != 104 {
		t.Fatalf("all handled: commit %d, want the next offset 104", got)
	}
	tr.done(seq + 2) // a second finish is ignored
	if m, b := tr.inFlight(); m != 0 || b != 0 {
		t.Fatalf("in flight %d msgs %d bytes", m, b)
	}
	tr.advance(110)
	if got := tr.commitOffset(); got != 110 {
		t.Fatalf("after an empty pull: %d", got)
	}
}

func TestTrackerFlowControl(t *testing.T) {
	tr := newTracker(0, flowLimits{msgs: 3, bytes: 1000, span: 50})
	seq := tr.add([]int64{0, 1}, []int64{10, 10}, 2)
	if tr.over() {
		t.Fatal("over with 2 of 3")
	}
	tr.add([]int64{2}, []int64{10}, 3)
	if !tr.over() {
		t.Fatal("not over with 3 of 3")
	}
	tr.done(seq)
	select {
	case <-tr.resume:
	default:
		t.Fatal("no resume token after dropping under the bound")
	}
	// Bytes.
	tr2 := newTracker(0, flowLimits{bytes: 100})
	s2 := tr2.add([]int64{0}, []int64{100}, 1)
	if !tr2.over() {
		t.Fatal("not over at the byte bound")
	}
	tr2.done(s2)
	if tr2.over() {
		t.Fatal("still over")
	}
	// Span: one slow message holds the window.
	tr3 := newTracker(0, flowLimits{span: 10})
	s3 := tr3.add([]int64{0}, []int64{1}, 1)
	for off := int64(1); off < 10; off++ {
		tr3.done(tr3.add([]int64{off}, []int64{1}, off+1))
	}
	if tr3.over() {
		t.Fatal("over at span 9")
	}
	tr3.done(tr3.add([]int64{10}, []int64{1}, 11))
	if !tr3.over() {
		t.Fatal("not over at span 10")
	}
	tr3.done(s3)
	if tr3.over() || tr3.commitOffset() != 11 {
		t.Fatalf("after the slow one: over=%v commit=%d", tr3.over(), tr3.commitOffset())
	}
}

func TestTrackerResetDropsInFlight(t *testing.T) {
	tr := newTracker(0, flowLimits{msgs: 1})
	seq := tr.add([]int64{0}, []int64{5}, 1)
	tr.reset(500)
	tr.done(seq) // stale
	if got := tr.commitOffset(); got != 500 {
		t.Fatalf("commit %d after reset to 500", got)
	}
	if tr.over() {
		t.Fatal("over after reset")
	}
}

// TestTrackerRandomOrder finishes messages in random order from several
// goroutines and checks the commit offset never passes an unhandled one.
func TestTrackerRandomOrder(t *testing.T) {
	tr := newTracker(0, flowLimits{})
	const n = 5000
	offs := make([]int64, n)
	sizes := make([]int64, n)
	for i := range offs {
		offs[i], sizes[i] = int64(i), 1
	}
	seq := tr.add(offs, sizes, n)
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	var mu sync.Mutex
	handled := make([]bool, n)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				k := perm[i]
				mu.Lock()
				handled[k] = true
				mu.Unlock()
				tr.done(seq + uint64(k))
				c := tr.commitOffset()
				mu.Lock()
				for j := int64(0); j < c && j < n; j++ {
					if !handled[j] {
						mu.Unlock()
						t.Errorf("commit offset %d passes unhandled %d", c, j)
						return
					}
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if got := tr.commitOffset(); got != n {
		t.Fatalf("final commit %d", got)
	}
}
