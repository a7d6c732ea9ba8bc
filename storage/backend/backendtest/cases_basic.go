package backendtest

import (
	"errors"
	"math/rand"
	"sync"

	"github.com/samsamq/samsa/storage/backend"
)

func testRegistry(e *env) {
	got, err := backend.Get(e.b.Name())
	if err != nil {
		e.Fatalf("backend %q is not registered: %v", e.b.Name(), err)
	}
	if got.Name() != e.b.Name() {
		e.Fatalf("registry returns %q for %q", got.Name(), e.b.Name())
	}
}

// testAppendReadBack appends chunks of many sizes, aligned and not, and
// reads back every chunk, random ranges, and the whole.
func testAppendReadBack(e *env) {
	const capacity = 1 << 20
	s := e.create(e.cfg("seg", capacity))
	if s.Capacity() != capacity || s.Written() != 0 {
		e.Fatalf("new segment: capacity %d written %d", s.Capacity(), s.Written())
	}
	sizes := []int{0, 1, 7, 100, 511, 512, 513, 4095, 4096, 4097, 8191, 8192, 12289, 65536 + 3, 1}
	const seed = 0x5a
	type chunk struct {
		off int64
		n   int
	}
	var chunks []chunk
	for _, n := range sizes {
		chunks = append(chunks, chunk{s.Written(), n})
		e.appendPattern(s, n, seed)
		e.readCheck(s, chunks[len(chunks)-1].off, n, seed)
	}
	rng := rand.New(rand.NewSource(1))
	for s.Written()+20000 < capacity {
		n := 1 + rng.Intn(20000)
		chunks = append(chunks, chunk{s.Written(), n})
		e.appendPattern(s, n, seed)
	}
	for _, c := range chunks {
		e.readCheck(s, c.off, c.n, seed)
	}
	w := s.Written()
	for i := 0; i < 200; i++ {
		off := rng.Int63n(w)
		e.readCheck(s, off, 1+rng.Intn(int(min(w-off, 10000))), seed)
	}
	e.readCheck(s, 0, int(w), seed)
	// Reads do not run past Written.
	p := make([]byte, 10)
	if n, err := s.ReadAt(p, w-5); err == nil || n > 5 {
		e.Fatalf("read across Written: %d, %v", n, err)
	}
	if _, err := s.ReadAt(p, w); err == nil {
		e.Fatalf("read at Written succeeded")
	}
}

// testSegmentFull: an append that does not fit fails with ErrSegmentFull
// and changes nothing; one that fits exactly succeeds.
func testSegmentFull(e *env) {
	const capacity = 16 << 10
	const seed = 3
	s := e.create(e.cfg("seg", capacity))
	e.appendPattern(s, capacity-100, seed)
	for _, n := range []int{101, 4096, capacity} {
		if err := s.Append(pattern(s.Written(), n, 0xff)); !errors.Is(err, backend.ErrSegmentFull) {
			e.Fatalf("append %d with 100 free: %v", n, err)
		}
		if s.Written() != capacity-100 {
			e.Fatalf("failed append moved Written to %d", s.Written())
		}
	}
	e.appendPattern(s, 100, seed)
	if err := s.Append([]byte{1}); !errors.Is(err, backend.ErrSegmentFull) {
		e.Fatalf("append to a full segment: %v", err)
	}
	if d, err := s.Flush(); err != nil || d != capacity {
		e.Fatalf("flush full segment: %d, %v", d, err)
	}
	e.readCheck(s, 0, capacity, seed)
}

// testFlushDurable: with no append in flight, Flush returns Written.
func testFlushDurable(e *env) {
	s := e.create(e.cfg("seg", 256<<10))
	if d, err := s.Flush(); err != nil || d != 0 {
		e.Fatalf("flush of empty segment: %d, %v", d, err)
	}
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 30; i++ {
		for j := rng.Intn(4); j >= 0; j-- {
			e.appendPattern(s, 1+rng.Intn(3000), 9)
		}
		d, err := s.Flush()
		if err != nil || d != s.Written() {
			e.Fatalf("flush %d: durable %d, written %d, %v", i, d, s.Written(), err)
		}
		if d2, err := s.Flush(); err != nil || d2 != d {
			e.Fatalf("idle flush %d: %d, %v (was %d)", i, d2, err, d)
		}
	}
	e.readCheck(s, 0, int(s.Written()), 9)
}

// testStats: the counters move with the work done, and an idle Flush is
// no batch.
func testStats(e *env) {
	s := e.create(e.cfg("seg", 256<<10))
	before := s.Stats()
	total := 0
	for i := 0; i < 10; i++ {
		e.appendPattern(s, 1000+i, 1)
		total += 1000 + i
	}
	if _, err := s.Flush(); err != nil {
		e.Fatal(err)
	}
	st := s.Stats()
	if st.BytesWritten-before.BytesWritten < int64(total) {
		e.Errorf("BytesWritten grew %d for %d appended", st.BytesWritten-before.BytesWritten, total)
	}
	if st.Fsyncs-before.Fsyncs < 1 || st.FlushBatches-before.FlushBatches != 1 {
		e.Errorf("after one flush: %+v (before %+v)", st, before)
	}
	if st.WriteCalls < before.WriteCalls {
		e.Errorf("WriteCalls went back from %d to %d", before.WriteCalls, st.WriteCalls)
	}
	if _, err := s.Flush(); err != nil {
		e.Fatalf("idle flush: %v", err)
	}
	if got := s.Stats(); got.FlushBatches != st.FlushBatches {
		e.Errorf("idle flush counted as a batch: %+v then %+v", st, got)
	}
	if sum := st.Add(st); sum.BytesWritten != 2*st.BytesWritten || sum.Fsyncs != 2*st.Fsyncs {
		e.Errorf("Stats.Add: %+v", sum)
	}
}

// testReopen: Open continues from cfg.Written, also when recovery cut the
// segment below what was once written.
func testReopen(e *env) {
	cfg := e.cfg("seg", 64<<10)
	s := e.create(cfg)
	e.appendPattern(s, 10000, 1)
	if _, err := s.Flush(); err != nil {
		e.Fatal(err)
	}
	if err := s.Close(); err != nil {
		e.Fatal(err)
	}
	cfg.Written = 10000
	s = e.open(cfg)
	if s.Written() != 10000 || s.Capacity() != cfg.Capacity {
		e.Fatalf("reopened: written %d capacity %d", s.Written(), s.Capacity())
	}
	e.readCheck(s, 0, 10000, 1)
	e.appendPattern(s, 5000, 1)
	if d, err := s.Flush(); err != nil || d != 15000 {
		e.Fatalf("flush after reopen: %d, %v", d, err)
	}
	e.readCheck(s, 0, 15000, 1)
	if err := s.Close(); err != nil {
		e.Fatal(err)
	}

	// Recovery found a torn record at 7000: appends overwrite from there.
	cfg.Written = 7000
	s = e.open(cfg)
	e.readCheck(s, 0, 7000, 1)
	neu := pattern(7000, 3000, 0x77)
	if err := s.Append(neu); err != nil {
		e.Fatal(err)
	}
	if d, err := s.Flush(); err != nil || d != 10000 {
		e.Fatalf("flush after cut: %d, %v", d, err)
	}
	got := make([]byte, 3000)
	if _, err := s.ReadAt(got, 7000); err != nil || checkPattern(got, 7000, 0x77) != nil {
		e.Fatalf("bytes after the cut are not the new ones: %v", err)
	}
	e.readCheck(s, 0, 7000, 1)
}

// testConcurrent: one appender (under a lock, as the CommitLog), one
// flusher and two readers at once; run it under -race.
func testConcurrent(e *env) {
	const capacity = 2 << 20
	const seed = 0x33
	s := e.create(e.cfg("seg", capacity))
	var appendMu sync.Mutex
	done := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup

	wg.Add(1)
	go func() { // flusher
		defer wg.Done()
		var last int64
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			d, err := s.Flush()
			if err != nil {
				errs <- err
				return
			}
			if d < last || d > s.Written() {
				errs <- errors.New("durable went backwards or past Written")
				return
			}
			last = d
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(r int) { // reader
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(r)))
			for {
				select {
				case <-done:
					return
				default:
				}
				w := s.Written()
				if w == 0 {
					continue
				}
				off := rng.Int63n(w)
				p := make([]byte, 1+rng.Int63n(min(w-off, 8192)))
				if _, err := s.ReadAt(p, off); err != nil {
					errs <- err
					return
				}
				if err := checkPattern(p, off, seed); err != nil {
					errs <- err
					return
				}
			}
		}(r)
	}
	rng := rand.New(rand.NewSource(42))
	for i := 0; i < 3000; i++ {
		appendMu.Lock()
		w := s.Written()
		n := 1 + rng.Intn(3000)
		if w+int64(n) > capacity {
			appendMu.Unlock()
			break
		}
		err := s.Append(pattern(w, n, seed))
		appendMu.Unlock()
		if err != nil {
			e.Fatalf("append %d at %d: %v", n, w, err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		e.Error(err)
	}
	if d, err := s.Flush(); err != nil || d != s.Written() {
		e.Fatalf("final flush: %d of %d, %v", d, s.Written(), err)
	}
	e.readCheck(s, 0, int(s.Written()), seed)
}
