package storage

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/vfs"
)

var benchDir = flag.String("storage.benchdir", "", "directory for BenchmarkAppend's stores (default: a temp dir)")

// BenchmarkAppend measures Append on the OS file system:
// backend × flush policy × record body size × concurrent writers, e.g.
// BenchmarkAppend/backend=pwrite/flush=sync/size=1KiB/writers=64. It
// reports bytes/s (body bytes), allocations, fsyncs per append and the
// average batch (appends per fsync).
func BenchmarkAppend(b *testing.B) {
	for _, be := range backend.Names() {
		for _, policy := range []FlushPolicy{FlushSync, FlushAsync, FlushNone} {
			for _, size := range []int{128, 1 << 10, 16 << 10} {
				for _, writers := range []int{1, 16, 64} {
					name := fmt.Sprintf("backend=%s/flush=%s/size=%s/writers=%d", be, policy, sizeName(size), writers)
					b.Run(name, func(b *testing.B) { benchAppend(b, be, policy, size, writers) })
				}
			}
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func benchAppend(b *testing.B, be string, policy FlushPolicy, size, writers int) {
	dir := *benchDir
	if dir == "" {
		dir = b.TempDir()
	} else {
		d, err := os.MkdirTemp(dir, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	s, err := Open(Options{
		Dir:         dir,
		FS:          vfs.Default,
		Backend:     be,
		SegmentSize: 64 << 20,
		Flush:       FlushOptions{Policy: policy},
		Retention:   RetentionOptions{MaxAge: -1, DiskRatio: -1},
		Logger:      quietLogger(),
	})
	if err != nil {
		if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, vfs.ErrDirectUnsupported) {
			b.Skipf("backend %s unavailable here: %v", be, err)
		}
		b.Fatal(err)
	}
	defer s.Close()
	msgs := make([]*Message, writers)
	for i := range msgs {
		msgs[i] = testMessage("BenchTopic", int32(i%8), size)
	}
	ctx := context.Background()
	// Warm up: the first segment, pools, queues.
	for i := 0; i < 200; i++ {
		if _, err := s.Append(ctx, msgs[0]); err != nil {
			b.Fatal(err)
		}
	}
	before := s.Metrics()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Add(1)
		go func(m *Message, n int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if _, err := s.Append(ctx, m); err != nil {
					b.Error(err)
					return
				}
			}
		}(msgs[w], n)
	}
	wg.Wait()
	b.StopTimer()
	m := s.Metrics()
	fsyncs := m.Fsyncs - before.Fsyncs
	b.ReportMetric(float64(fsyncs)/float64(b.N), "fsyncs/op")
	if fsyncs > 0 {
		b.ReportMetric(float64(m.Appends-before.Appends)/float64(fsyncs), "avg_batch")
	}
}
