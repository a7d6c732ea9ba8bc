package consumequeue

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentAppendRead runs one appender, a flusher, retention and
// readers on one queue; readers check every entry they get.
func TestConcurrentAppendRead(t *testing.T) {
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 100)
	defer tb.Close()
	q := tb.Queue("T", 0)
	const n = 20_000
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	wg.Add(1)
	go func() { // appender
		defer wg.Done()
		defer done.Store(true)
		for i := int64(0); i < n; i++ {
			e := entryFor(i)
			if err := q.Append(i, e.PhysOffset, e.Size, e.TagsCode); err != nil {
				fail(fmt.Errorf("append %d: %w", i, err))
				return
			}
		}
	}()
	wg.Add(1)
	go func() { // flusher and retention
		defer wg.Done()
		for k := 0; !done.Load(); k++ {
			if err := q.Flush(); err != nil {
				fail(err)
				return
			}
			if k%10 == 9 {
				if m := q.MaxOffset(); m > 3000 {
					if err := q.DeleteBelowPhys(entryFor(m - 3000).PhysOffset); err != nil {
						fail(err)
						return
					}
				}
			}
		}
	}()
	for r := range 3 {
		wg.Add(1)
		go func() { // reader
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			var dst []Entry
			for !done.Load() {
				lo, hi := q.MinOffset(), q.MaxOffset()
				if hi <= lo {
					continue
				}
				from := lo + rng.Int64N(hi-lo)
				var err error
				dst, err = q.Entries(from, 1+rng.IntN(300), dst)
				if errors.Is(err, ErrOffsetTooSmall) {
					continue // retention overtook us
				}
				if err != nil {
					fail(err)
					return
				}
				for j, e := range dst {
					if e != entryFor(from+int64(j)) {
						fail(fmt.Errorf("Entries(%d)[%d] = %v, want %v", from, j, e, entryFor(from+int64(j))))
						return
					}
				}
				if e, ok := q.LastEntry(); ok && e.PhysOffset < entryFor(hi-1).PhysOffset {
					fail(fmt.Errorf("LastEntry %v behind max %d", e, hi))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if q.MaxOffset() != n {
		t.Fatalf("max %d", q.MaxOffset())
	}
	checkRange(t, q, q.MinOffset(), n)
}

// TestTableManyQueues creates queues concurrently, then reopens them all.
func TestTableManyQueues(t *testing.T) {
	fs, dir := osDir(t)
	tb := openTable(t, fs, dir, 8)
	const topics, queues = 12, 8
	var wg sync.WaitGroup
	errc := make(chan error, topics*queues)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range topics * queues {
				topic, qid := fmt.Sprintf("topic-%02d", i/queues), int32(i%queues)
				q := tb.Queue(topic, qid)
				if i%4 != g {
					continue // every goroutine asks for every queue; one appends
				}
				for off := range int64(i) {
					e := entryFor(off)
					if err := q.Append(off, e.PhysOffset, e.Size, e.TagsCode); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb = openTable(t, fs, dir, 8)
	defer tb.Close()
	var n int
	tb.Each(func(topic string, qid int32, q *Queue) {
		var ti int
		fmt.Sscanf(topic, "topic-%d", &ti)
		want := int64(ti*queues + int(qid))
		if q.MaxOffset() != want {
			t.Errorf("%s: max %d, want %d", q, q.MaxOffset(), want)
		}
		checkRange(t, q, 0, want)
		n++
	})
	// Queue 0 of topic 0 never got an entry, so it has no directory.
	if n != topics*queues-1 {
		t.Fatalf("%d queues reopened", n)
	}
}
