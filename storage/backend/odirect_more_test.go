package backend

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestDirectConcurrent: appends of every size (many larger than the ring),
// a flusher and readers at once, on a small ring so that spills, wraps and
// reads across the memory/disk boundary all happen. Run under -race.
func TestDirectConcurrent(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		t.Run(fsName, func(t *testing.T) {
			var fsys vfs.FS = vfs.NewMem()
			if fsName == "os" {
				fsys = vfs.Default
			}
			s, _ := newDirectTest(t, fsys, ODirectOptions{BufferSize: 16 << 10, StageSize: 8 << 10, ZeroAhead: 32 << 10}, 4<<20)
			runDirectConcurrent(t, s, 11)
		})
	}
}

func runDirectConcurrent(t *testing.T, s Segment, seed int64) {
	done := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		var last int64
		for {
			select {
			case <-done:
				return
			default:
			}
			d, err := s.Flush()
			if err != nil || d < last {
				errs <- fmt.Errorf("flush: %d after %d: %v", d, last, err)
				return
			}
			last = d
		}
	}()
	for r := 0; r < 2; r++ {
		go func(r int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + r))
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
				off := max(0, w-1-rng.Int63n(64<<10))
				p := make([]byte, 1+rng.Int63n(min(w-off, 40<<10)))
				if _, err := s.ReadAt(p, off); err != nil {
					errs <- err
					return
				}
				for i, c := range p {
					if c != dpat(off+int64(i)) {
						errs <- fmt.Errorf("read at %d: byte %d wrong", off, off+int64(i))
						return
					}
				}
			}
		}(int64(r))
	}
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 1500; i++ {
		n := 1 + rng.Intn(5000)
		if rng.Intn(20) == 0 {
			n = 20000 + rng.Intn(30000)
		}
		if s.Written()+int64(n) > s.Capacity() {
			break
		}
		appendD(t, s, n)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	flushD(t, s)
	readD(t, s, 0, int(s.Written()))
}

// TestDirectReleaseWhenFull: once a segment is full and flushed it drops
// its buffers (and a full segment opens without any), and still reads.
func TestDirectReleaseWhenFull(t *testing.T) {
	for _, name := range []string{"odirect", "uring"} {
		t.Run(name, func(t *testing.T) {
			for _, fsys := range []vfs.FS{vfs.NewMem(), vfs.Default} {
				var s *directSegment
				var cfg Config
				var b Backend
				if name == "odirect" {
					b = odirectWith(t, ODirectOptions{ZeroAhead: 8192})
					s, cfg = newDirectTest(t, fsys, ODirectOptions{ZeroAhead: 8192}, 64<<10)
				} else {
					b = uringWith(t, UringOptions{})
					s, cfg = newUringTest(t, fsys, UringOptions{}, 64<<10)
				}
				appendD(t, s, 30000)
				flushD(t, s)
				appendD(t, s, int(s.Capacity()-s.Written()))
				readD(t, s, 0, int(s.Capacity()))
				if s.ring.buf == nil {
					t.Fatal("buffers dropped before the flush")
				}
				flushD(t, s)
				if s.ring.buf != nil || s.io.bounce != nil || s.zeros != nil {
					t.Fatal("a full, flushed segment keeps its buffers")
				}
				if x, ok := s.io.exec.(*uringIO); ok && (x.fixed || x.bufs != nil) {
					t.Fatal("buffers still registered")
				}
				readD(t, s, 0, int(s.Capacity()))
				if err := s.Append([]byte{1}); !errors.Is(err, ErrSegmentFull) {
					t.Fatalf("append to a full segment: %v", err)
				}
				if err := s.Append(nil); err != nil {
					t.Fatal(err)
				}
				flushD(t, s)
				s.Close()
				cfg.Written = cfg.Capacity
				s2, err := b.Open(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ds := s2.(*directSegment)
				if ds.ring.buf != nil {
					t.Fatal("a full segment opened with buffers")
				}
				readD(t, s2, 0, int(cfg.Capacity))
				flushD(t, s2)
				if st := s2.Stats(); st.Fsyncs != 1 || st.WriteCalls > 2 {
					t.Fatalf("first flush of a reopened full segment: %+v", st)
				}
				s2.Close()
			}
		})
	}
}
