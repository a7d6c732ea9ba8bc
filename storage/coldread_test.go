package storage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestDirectColdReads: with Options.DirectColdReads, pulls over
// interleaved queues whose log is no longer in the page cache read it
// with O_DIRECT through the block cache (and its read-ahead), concurrently,
// and get exactly what a plain store returns: sealed segments whose files
// end inside a block, and a tail still dirty in the page cache, included.
func TestDirectColdReads(t *testing.T) {
	opts := testOptions(vfs.Default, "pwrite", FlushAsync)
	opts.Dir = t.TempDir()
	opts.SegmentSize = 4 << 20
	const queues, per = 8, 1200
	writeInterleaved(t, opts, queues, per, func(i int, q int32) int { return 600 + (i*41+int(q)*13)%800 })
	plainOpts := opts
	plainOpts.ReadCacheSize = -1
	plain := mustOpen(t, plainOpts)
	var want [queues][]byte
	for q := int32(0); q < queues; q++ {
		for o := int64(0); o < per; {
			g, err := plain.GetMessages("T", q, o, 64, 0, nil)
			if err != nil || g.Status != Found {
				t.Fatalf("plain read: %v %v", err, g.Status)
			}
			want[q] = append(want[q], g.Whole...)
			o = g.NextOffset
		}
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	// Every segment dropped from the page cache.
	segs, err := filepath.Glob(filepath.Join(opts.Dir, "commitlog", "*"))
	if err != nil || len(segs) < 2 {
		t.Fatalf("segments %v %v", segs, err)
	}
	for _, p := range segs {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		_ = f.Close()
	}
	opts.DirectColdReads = true
	s := mustOpen(t, opts)
	defer s.Close()
	ctx := context.Background()
	// A tail written after the open: dirty in the page cache, read from it.
	for q := int32(0); q < queues; q++ {
		for i := 0; i < 40; i++ {
			m := testMessage("T", q, 900)
			if _, err := s.Append(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, queues)
	for q := int32(0); q < queues; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []byte
			o := int64(0)
			for o < per {
				g, err := s.GetMessages("T", q, o, 64, 0, nil)
				if err != nil || g.Status != Found {
					errs <- fmt.Errorf("queue %d at %d: %v %v", q, o, err, g.Status)
					return
				}
				got = append(got, g.Whole...)
				o = g.NextOffset
			}
			if !bytes.Equal(got[:len(want[q])], want[q]) {
				errs <- fmt.Errorf("queue %d: the direct reads differ from the plain ones", q)
				return
			}
			for o < per+40 { // the tail
				g, err := s.GetMessages("T", q, o, 64, 0, nil)
				if err != nil || g.Status != Found {
					errs <- fmt.Errorf("queue %d tail at %d: %v %v", q, o, err, g.Status)
					return
				}
				o = g.NextOffset
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := s.Metrics()
	t.Logf("read cache: %d hits, %d block reads, %d of them direct", m.ReadCacheHits, m.ReadCacheMisses, m.ReadCacheDirect)
	if m.ReadCacheDirect == 0 {
		t.Log("no direct read (the kernel kept the dropped pages, or refused cachestat or O_DIRECT): the reads went through the page cache")
	}
}
