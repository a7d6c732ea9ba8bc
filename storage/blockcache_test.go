package storage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// TestReadCacheServesInterleavedQueues: pulls over queues that interleave
// in the CommitLog read their records through the block cache (one read
// of each block for all of them) and get exactly what a store without
// the cache returns, records that straddle two blocks included, and the
// last records of a segment whose file ends inside a block.
func TestReadCacheServesInterleavedQueues(t *testing.T) {
	// The OS's file system: a sealed segment's file there ends after its
	// last record, inside a block (the reserved space past it is not in
	// the file's size).
	opts := testOptions(vfs.Default, "pwrite", FlushAsync)
	opts.Dir = t.TempDir()
	opts.SegmentSize = 4 << 20
	const queues, per = 8, 1000
	writeInterleaved(t, opts, queues, per, func(i int, q int32) int { return 700 + (i*37+int(q)*11)%900 })
	off := opts
	off.ReadCacheSize = -1
	plain := mustOpen(t, off)
	var want [queues][][]byte
	var seg0End int64 // the end of the first segment's last record
	for q := int32(0); q < queues; q++ {
		for o := int64(0); o < per; o += 64 {
			g, err := plain.GetMessages("T", q, o, 64, 0, nil)
			if err != nil || g.Status != Found {
				t.Fatalf("plain read: %v %v", err, g.Status)
			}
			want[q] = append(want[q], g.Whole)
			for _, r := range g.Records {
				if end := record.PhysOffsetOf(r) + int64(len(r)); end <= opts.SegmentSize {
					seg0End = max(seg0End, end)
				}
			}
		}
	}
	if seg0End == 0 || seg0End+8 >= opts.SegmentSize {
		t.Fatalf("the first segment's records end at %d: want the file's end inside its last block", seg0End)
	}
	// The file ends after its last record and the blank record's header,
	// as a sealed segment's does whose reservation stopped short of its
	// end: the cache's block there is short.
	if err := os.Truncate(filepath.Join(opts.Dir, "commitlog", segmentName(0)), seg0End+8); err != nil {
		t.Fatal(err)
	}
	if m := plain.Metrics(); m.ReadCacheHits+m.ReadCacheMisses != 0 {
		t.Fatalf("cache off, yet %d hits and %d misses", m.ReadCacheHits, m.ReadCacheMisses)
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, opts)
	defer s.Close()
	for k := 0; k < per/64+1; k++ {
		for q := int32(0); q < queues; q++ {
			g, err := s.GetMessages("T", q, int64(k*64), 64, 0, nil)
			if err != nil || g.Status != Found {
				t.Fatalf("queue %d at %d: %v %v", q, k*64, err, g.Status)
			}
			if !bytes.Equal(g.Whole, want[q][k]) {
				t.Fatalf("queue %d at %d: the cached read differs from the plain one", q, k*64)
			}
		}
	}
	m := s.Metrics()
	if m.ReadCacheMisses == 0 || m.ReadCacheHits < m.ReadCacheMisses {
		t.Fatalf("read cache: %d hits, %d misses; want the queues to share blocks", m.ReadCacheHits, m.ReadCacheMisses)
	}
	t.Logf("read cache: %d hits, %d misses", m.ReadCacheHits, m.ReadCacheMisses)
}

// writeInterleaved writes per records to each of queues queues of topic
// T, one to each queue in turn (record i of queue q has a body of size(i,
// q) bytes), into a store opened with opts, and closes it.
func writeInterleaved(t *testing.T, opts Options, queues, per int, size func(i int, q int32) int) {
	t.Helper()
	s := mustOpen(t, opts)
	ctx := context.Background()
	for i := range per {
		for q := int32(0); q < int32(queues); q++ {
			if _, err := s.Append(ctx, testMessage("T", q, size(i, q))); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadCacheConcurrent: readers of eight interleaved queues at once,
// through a cache of three blocks (evictions, and blocks being read while
// others wait for them), each get exactly their records.
func TestReadCacheConcurrent(t *testing.T) {
	opts := testOptions(vfs.Default, "pwrite", FlushAsync)
	opts.Dir = t.TempDir()
	opts.SegmentSize = 4 << 20
	opts.ReadCacheSize = 3 * readBlockSize
	s := mustOpen(t, opts)
	defer s.Close()
	ctx := context.Background()
	const queues, per = 8, 600
	for i := range per {
		for q := int32(0); q < queues; q++ {
			if _, err := s.Append(ctx, testMessage("T", q, 500+(i*53+int(q)*7)%700)); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s)
	var want [queues][]byte
	for q := int32(0); q < queues; q++ {
		for o := int64(0); o < per; {
			g, err := s.GetMessages("T", q, o, 1, 0, nil) // one record: no span, no cache
			if err != nil || g.Status != Found {
				t.Fatalf("read: %v %v", err, g.Status)
			}
			want[q] = append(want[q], g.Whole...)
			o = g.NextOffset
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, queues)
	for q := int32(0); q < queues; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 3; round++ {
				var got []byte
				for o := int64(0); o < per; {
					g, err := s.GetMessages("T", q, o, 48, 0, nil)
					if err != nil || g.Status != Found {
						errs <- fmt.Errorf("queue %d at %d: %v %v", q, o, err, g.Status)
						return
					}
					got = append(got, g.Whole...)
					o = g.NextOffset
				}
				if !bytes.Equal(got, want[q]) {
					errs <- fmt.Errorf("queue %d round %d: the records read through the cache differ", q, round)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := s.Metrics(); m.ReadCacheMisses == 0 {
		t.Fatal("the cache was not used")
	}
}

// TestReadCacheAfterTruncate: blocks cached before a cut (a slave's
// TruncateTo) are never served after it: the records appended past the
// cut, at the same offsets, come back, not the old ones.
func TestReadCacheAfterTruncate(t *testing.T) {
	opts := testOptions(vfs.Default, "pwrite", FlushAsync)
	opts.Dir = t.TempDir()
	opts.SegmentSize = 4 << 20
	s := mustOpen(t, opts)
	defer s.Close()
	ctx := context.Background()
	const queues = 8
	var cut int64
	for i := range 300 {
		for q := int32(0); q < queues; q++ {
			r, err := s.Append(ctx, testMessage("T", q, 400+(i*31+int(q)*5)%500))
			if err != nil {
				t.Fatal(err)
			}
			if i == 120 && q == 0 {
				cut = r.PhysicalOffset
			}
		}
	}
	waitDispatched(t, s)
	read := func(batch int) [queues][]byte {
		var out [queues][]byte
		for q := int32(0); q < queues; q++ {
			for o := s.MinQueueOffset("T", q); o < s.MaxQueueOffset("T", q); {
				g, err := s.GetMessages("T", q, o, batch, 0, nil)
				if err != nil || g.Status != Found {
					t.Fatalf("queue %d at %d: %v %v", q, o, err, g.Status)
				}
				out[q] = append(out[q], g.Whole...)
				o = g.NextOffset
			}
		}
		return out
	}
	read(48) // fill the cache with the blocks past the cut
	if s.Metrics().ReadCacheMisses == 0 {
		t.Fatal("the cache was not used before the cut")
	}
	if err := s.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		for q := int32(0); q < queues; q++ {
			if _, err := s.Append(ctx, testMessage("T", q, 300+(i*17+int(q)*3)%700)); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s)
	want := read(1) // one record a read: no span, no cache
	got := read(48)
	for q := range queues {
		if !bytes.Equal(got[q], want[q]) {
			t.Fatalf("queue %d: the records read through the cache after the cut differ from the log's", q)
		}
	}
}
