package backend

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// appendBench appends rec b.N times to segments of capacity bytes on the
// OS file system (a fresh preallocated segment when one fills), flushing
// every flushEvery appends (0: only at the end; a full segment is flushed
// before it is closed when flushEvery > 0), and returns the segments'
// summed Stats. With skip, a segment the backend cannot create skips the
// benchmark (io_uring refused here) instead of failing it.
func appendBench(b *testing.B, be Backend, capacity int64, rec []byte, flushEvery int, skip bool) Stats {
	b.Helper()
	dir := b.TempDir()
	var total Stats
	segs := 0
	newSeg := func() Segment {
		segs++
		s, err := be.Create(Config{FS: vfs.Default, Path: filepath.Join(dir, fmt.Sprint(segs)), Capacity: capacity, Preallocate: true})
		if err != nil && skip {
			b.Skipf("%s: %v", be.Name(), err)
		}
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	flush := func(s Segment) {
		if _, err := s.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	s := newSeg()
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if s.Written()+int64(len(rec)) > capacity {
			b.StopTimer()
			if flushEvery > 0 {
				flush(s)
			}
			total = total.Add(s.Stats())
			s.Close()
			s = newSeg()
			b.StartTimer()
		}
		if err := s.Append(rec); err != nil {
			b.Fatal(err)
		}
		if flushEvery > 0 && (i+1)%flushEvery == 0 {
			flush(s)
		}
	}
	b.StopTimer()
	flush(s)
	total = total.Add(s.Stats())
	s.Close()
	return total
}

// syscallsOf is the system calls a segment's Stats stand for: write calls
// plus fsync calls, except for uring, whose fsyncs ride in the same
// io_uring_enter as the writes.
func syscallsOf(backend string, st Stats) int64 {
	if backend == "uring" {
		return st.WriteCalls
	}
	return st.WriteCalls + st.Fsyncs
}

// BenchmarkAppendFlush: 1 KiB appends on the OS file system (in the test's
// temp dir), a Flush every flushEvery appends, reporting system calls and
// fsyncs per 1,000 appends. It shows the batching: pwrite one write per
// filled 256 KiB buffer or flush and one fdatasync per flush, odirect one
// write and one fdatasync per flush, uring one io_uring_enter per flush.
func BenchmarkAppendFlush(b *testing.B) {
	variants := []struct {
		name, backend string
		make          func() (Backend, error)
	}{
		{"pwrite", "pwrite", func() (Backend, error) { return Get("pwrite") }},
		{"mmap", "mmap", func() (Backend, error) { return Get("mmap") }},
		{"odirect", "odirect", func() (Backend, error) { return NewODirect(ODirectOptions{}) }},
		{"uring", "uring", func() (Backend, error) { return NewUring(UringOptions{}) }},
		{"uring-buffered", "uring", func() (Backend, error) { return NewUring(UringOptions{Buffered: true}) }},
		{"odirect-zeroahead", "odirect", func() (Backend, error) { return NewODirect(ODirectOptions{ZeroAhead: 4 << 20}) }},
		{"uring-zeroahead", "uring", func() (Backend, error) {
			return NewUring(UringOptions{ODirectOptions: ODirectOptions{ZeroAhead: 4 << 20}})
		}},
	}
	const capacity = 64 << 20
	rec := make([]byte, 1024)
	for i := range rec {
		rec[i] = byte(i)
	}
	for _, v := range variants {
		for _, every := range []int{1, 16, 128} {
			b.Run(fmt.Sprintf("backend=%s/size=1KiB/flushEvery=%d", v.name, every), func(b *testing.B) {
				be, err := v.make()
				if err != nil {
					b.Fatal(err)
				}
				total := appendBench(b, be, capacity, rec, every, true)
				per := 1000 / float64(b.N)
				b.ReportMetric(float64(syscallsOf(v.backend, total))*per, "syscalls/1000appends")
				b.ReportMetric(float64(total.Fsyncs)*per, "fsyncs/1000appends")
				b.ReportMetric(float64(total.BytesWritten)/float64(b.N)/float64(len(rec)), "writeamp")
			})
		}
	}
}
