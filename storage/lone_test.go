package storage

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/testutil"
	"github.com/samsamq/samsa/storage/vfs"
)

// appendUntilOwnRound appends to T/0 one at a time until a lone writer's
// own round has run (bounded: the first round is always the flusher's,
// and a later append may find the flusher still unlocking), then n more;
// it returns how many it appended.
func appendUntilOwnRound(t *testing.T, s *Store, n int) int64 {
	t.Helper()
	ctx := context.Background()
	var sent int64
	for ; s.Metrics().OwnRounds == 0; sent++ {
		if sent == 10000 {
			t.Fatal("10,000 lone appends and no own round")
		}
		if _, err := s.Append(ctx, testMessage("T", 0, 100)); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		r, err := s.Append(ctx, testMessage("T", 0, 100))
		if err != nil {
			t.Fatal(err)
		}
		if d := s.DurableOffset(); d < r.PhysicalOffset+int64(r.Size) {
			t.Fatalf("acknowledged at %d, durable %d", r.PhysicalOffset+int64(r.Size), d)
		}
		sent++
	}
	return sent
}

// TestLoneWriterOwnRound: a lone sync writer flushes and indexes on its
// own goroutine once the flusher saw it alone; every acknowledgement is
// durable and every record indexed. With callbacks registered the
// dispatcher indexes (and calls them); a linger turns own rounds off.
func TestLoneWriterOwnRound(t *testing.T) {
	for _, be := range []string{"pwrite", "mmap"} {
		t.Run(be, func(t *testing.T) {
			s := mustOpen(t, testOptions(vfs.NewMem(), be, FlushSync))
			defer s.Close()
			own0 := s.Metrics().OwnRounds
			sent := appendUntilOwnRound(t, s, 50)
			if own := s.Metrics().OwnRounds - own0; own < 50 {
				t.Fatalf("%d own rounds for the last 50 lone appends", own)
			}
			// Own rounds index what they made durable themselves, unless
			// the dispatcher's round (kicked by an earlier flusher round)
			// holds dispatchMu then: that round or the next indexes it.
			// Either way every record is indexed, soon.
			waitFor(t, "every record indexed", func() bool { return s.MaxQueueOffset("T", 0) == sent })
		})
	}

	t.Run("callbacks", func(t *testing.T) {
		s := mustOpen(t, testOptions(vfs.NewMem(), "pwrite", FlushSync))
		defer s.Close()
		var mu sync.Mutex
		seen := 0
		s.OnDispatch(func(string, int32, int64) { mu.Lock(); seen++; mu.Unlock() })
		sent := appendUntilOwnRound(t, s, 20)
		waitFor(t, "the dispatcher to index and call back", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return int64(seen) == sent && s.MaxQueueOffset("T", 0) == sent
		})
	})

	t.Run("linger", func(t *testing.T) {
		opts := testOptions(vfs.NewMem(), "pwrite", FlushSync)
		opts.Flush.MinInterval = time.Microsecond
		s := mustOpen(t, opts)
		defer s.Close()
		for range 50 {
			if _, err := s.Append(context.Background(), testMessage("T", 0, 100)); err != nil {
				t.Fatal(err)
			}
		}
		if own := s.Metrics().OwnRounds; own != 0 {
			t.Fatalf("%d own rounds with a linger", own)
		}
	})
}

// TestLoneWriterJoined: writers joining a lone one end its own rounds
// without losing or misplacing anything: every append is acknowledged
// durable and indexed once.
func TestLoneWriterJoined(t *testing.T) {
	s := mustOpen(t, testOptions(vfs.NewMem(), "pwrite", FlushSync))
	defer s.Close()
	sent := appendUntilOwnRound(t, s, 5)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for range each {
				r, err := s.Append(context.Background(), testMessage("T", 0, 100))
				if err == nil && s.DurableOffset() < r.PhysicalOffset+int64(r.Size) {
					t.Errorf("acknowledged at %d, durable %d", r.PhysicalOffset+int64(r.Size), s.DurableOffset())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sent += writers * each
	waitFor(t, "every record indexed", func() bool { return s.MaxQueueOffset("T", 0) == sent })
	if m := s.Metrics(); m.SyncGroups <= m.OwnRounds {
		t.Fatalf("%d rounds, all of them own rounds", m.SyncGroups)
	}
}

// holdFS holds the fsyncs of commit-log files while held is set, until
// release closes.
type holdFS struct {
	vfs.FS
	held    atomic.Bool
	release chan struct{}
}

func (h *holdFS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := h.FS.Create(name, o)
	if err != nil || !strings.Contains(name, "commitlog") {
		return f, err
	}
	return &holdFile{File: f, h: h}, nil
}

type holdFile struct {
	vfs.File
	h *holdFS
}

func (f *holdFile) Sync() error {
	if f.h.held.Load() {
		<-f.h.release
	}
	return f.File.Sync()
}

// TestNoOwnRoundTimesOut: with NoOwnRound a lone writer's append gives up
// after Flush.Timeout while its fsync hangs, as every queued append does.
func TestNoOwnRoundTimesOut(t *testing.T) {
	h := &holdFS{FS: vfs.NewMem(), release: make(chan struct{})}
	opts := testOptions(h, "pwrite", FlushSync)
	opts.Flush.NoOwnRound = true
	opts.Flush.Timeout = 50 * time.Millisecond
	s := mustOpen(t, opts)
	testutil.CleanupClose(t, "store", s.Close)
	// Registered after Close's cleanup, so it runs before it.
	t.Cleanup(func() { close(h.release) })
	// A lone writer, seen as one by the flusher.
	for range 20 {
		if _, err := s.Append(context.Background(), testMessage("T", 0, 10)); err != nil {
			t.Fatal(err)
		}
	}
	h.held.Store(true)
	if _, err := s.Append(context.Background(), testMessage("T", 0, 10)); !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("held fsync: %v, want ErrFlushTimeout", err)
	}
	if own := s.Metrics().OwnRounds; own != 0 {
		t.Fatalf("%d own rounds with NoOwnRound", own)
	}
}
