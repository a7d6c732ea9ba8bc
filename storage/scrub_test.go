package storage

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// scrubClock is the rate limiter's clock: sleeping moves it on at once.
type scrubClock struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

func (c *scrubClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *scrubClock) sleep(d time.Duration, stop <-chan struct{}) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept += d
	return true
}

// scrubFixture opens a store of 4 KiB segments (the scrubber's goroutine
// off unless scrub says otherwise) and appends n records durably.
func scrubFixture(t *testing.T, n int, scrub ScrubOptions, tweak func(*Options)) (*vfs.MemFS, Options, *Store, []AppendResult) {
	t.Helper()
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	opts.SegmentSize = 4 << 10
	opts.Scrub = scrub
	if tweak != nil {
		tweak(&opts)
	}
	s := mustOpen(t, opts)
	var res []AppendResult
	for i := 0; i < n; i++ {
		r, err := s.Append(context.Background(), testMessage("T", int32(i%2), 150+i))
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	return mem, opts, s, res
}

// A byte flipped in a sealed segment under an open store is found, named,
// counted once however many passes see it, and the reads are paced at the
// configured rate (on an injected clock: no sleeping).
func TestScrubFindsFlippedByte(t *testing.T) {
	log, logs := newLogCapture()
	mem, opts, s, res := scrubFixture(t, 40, ScrubOptions{BytesPerSecond: -1}, func(o *Options) { o.Logger = log })
	defer s.Close()
	victim := res[3]
	flipByte(t, mem, opts, victim.PhysicalOffset+90)

	clk := &scrubClock{t: time.Unix(1e9, 0)}
	lim := newRateLimiter(ScrubOptions{BytesPerSecond: 4096, now: clk.now, sleep: clk.sleep})
	stop := make(chan struct{})
	if err := s.scrubPass(lim, stop); err != nil {
		t.Fatal(err)
	}
	st := s.ScrubStatus()
	segs := s.segmentsSnapshot()
	sealed := int64(len(segs) - 1)
	good := int64(-1) // the victim
	for _, r := range res {
		if r.PhysicalOffset < segs[len(segs)-1].base {
			good++
		}
	}
	if st.Enabled || st.Running || st.Passes != 1 || st.Segments != sealed || sealed < 2 || st.Records != good {
		t.Fatalf("status %+v, want one pass over %d sealed segments, %d good records", st, sealed, good)
	}
	if st.CorruptRecords != 1 || st.Corrupt[0].Offset != victim.PhysicalOffset || st.Corrupt[0].Resume != res[4].PhysicalOffset {
		t.Fatalf("findings %+v, want the record at %d", st.Corrupt, victim.PhysicalOffset)
	}
	want := time.Duration(float64(st.Bytes) / 4096 * float64(time.Second))
	if d := clk.slept - want; d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("slept %v for %d bytes at 4096 B/s, want %v", clk.slept, st.Bytes, want)
	}
	if w, ok := logs.find("scrub found a bad record"); !ok || w.level != slog.LevelWarn {
		t.Fatalf("no Warn for the bad record: %v", logs.atLeast(slog.LevelWarn))
	}
	if err := s.scrubPass(lim, stop); err != nil {
		t.Fatal(err)
	}
	m := s.Metrics()
	if st := s.ScrubStatus(); st.Passes != 2 || st.CorruptRecords != 1 || m.ScrubCorrupt != 1 || m.ScrubBytes != st.Bytes || m.ScrubSegments != 2*sealed {
		t.Fatalf("second pass: status %+v, metrics %d/%d/%d", st, m.ScrubCorrupt, m.ScrubBytes, m.ScrubSegments)
	}
}

// The scrubber holds no lock while it waits for its rate: retention
// deletes the segment it is walking, and the walk moves on.
func TestScrubDoesNotBlockRetention(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Unix(1e9, 0).UnixNano())
	_, _, s, _ := scrubFixture(t, 40, ScrubOptions{BytesPerSecond: -1}, func(o *Options) {
		o.Clock = func() time.Time { return time.Unix(0, now.Load()) }
		o.Retention.MaxAge = time.Hour
	})
	defer s.Close()
	waitDispatched(t, s)
	paused := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	lim := newRateLimiter(ScrubOptions{BytesPerSecond: 1, now: time.Now, sleep: func(time.Duration, <-chan struct{}) bool {
		once.Do(func() { close(paused); <-release })
		return true
	}})
	done := make(chan error, 1)
	go func() { done <- s.scrubPass(lim, make(chan struct{})) }()
	<-paused // about to read the oldest segment's first chunk
	now.Add(int64(100 * time.Hour))
	n, err := s.ApplyRetention()
	if err != nil || n < 1 {
		t.Fatalf("retention during a scrub: %d deleted, %v", n, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := s.ScrubStatus(); st.CorruptRecords != 0 || st.Passes != 1 {
		t.Fatalf("status %+v", st)
	}
}

// The background scrubber finds damage on its own, and Close stops it
// promptly even in the middle of a slow pass.
func TestScrubBackground(t *testing.T) {
	t.Run("finds", func(t *testing.T) {
		mem, opts, s, res := scrubFixture(t, 40, ScrubOptions{Interval: time.Millisecond, BytesPerSecond: 1 << 40}, nil)
		defer s.Close()
		flipByte(t, mem, opts, res[2].PhysicalOffset+90)
		deadline := time.Now().Add(10 * time.Second)
		for s.ScrubStatus().CorruptRecords == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the scrubber found nothing: %+v", s.ScrubStatus())
			}
			time.Sleep(time.Millisecond)
		}
		if st := s.ScrubStatus(); !st.Enabled || st.Corrupt[0].Offset != res[2].PhysicalOffset {
			t.Fatalf("status %+v", st)
		}
	})
	t.Run("stops at Close", func(t *testing.T) {
		_, _, s, _ := scrubFixture(t, 40, ScrubOptions{Interval: time.Millisecond, BytesPerSecond: 1}, nil)
		deadline := time.Now().Add(10 * time.Second)
		for !s.ScrubStatus().Running {
			if time.Now().After(deadline) {
				t.Fatal("no scrub pass started")
			}
			time.Sleep(time.Millisecond)
		}
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close waits for a scrub pass paced at 1 byte/s")
		}
	})
}
