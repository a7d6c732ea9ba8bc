package storage

import (
	"slices"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// BenchmarkGetMessages measures the consume path's store read: pulls of 32
// records with 1 KiB bodies (and 256 B, client.BenchmarkConsume's) from a
// log of 1024 records on the OS file system, the page cache warm. One op
// is one pull; bytes/s counts record bytes.
//
// The per-record checks (get_verify.go) cost a few µs per pull, less than
// the swing of a shared machine between two runs, so the pulls alternate
// between checks on and off (skipReadVerify) within the run and each pull
// is timed: on-ns/pull and off-ns/pull are the medians of each half (a
// pull the scheduler preempted moves a mean, not a median), and
// verify-% = on/off - 1 compares them under the same load.
func BenchmarkGetMessages(b *testing.B) {
	for _, c := range []struct {
		be   string
		size int
	}{{"pwrite", 1 << 10}, {"mmap", 1 << 10}, {"pwrite", 256}} {
		b.Run("backend="+c.be+"/size="+sizeName(c.size)+"/batch=32", func(b *testing.B) { benchGet(b, c.be, c.size) })
	}
}

func benchGet(b *testing.B, be string, size int) {
	const n, batch = 1024, 32
	opts := testOptions(vfs.Default, be, FlushAsync)
	opts.Dir = b.TempDir()
	opts.SegmentSize = 64 << 20
	s, err := Open(opts)
	if err != nil {
		b.Skipf("backend %s: %v", be, err)
	}
	defer s.Close()
	appendN(b, s, "T", 0, n, size)
	waitDispatched(b, s)
	get := func(off int64) GetResult {
		g, err := s.GetMessages("T", 0, off, batch, 0, nil)
		if err != nil || len(g.Records) != batch {
			b.Fatalf("pull at %d: %v, %d records", off, err, len(g.Records))
		}
		return g
	}
	for off := int64(0); off+batch <= n; off += batch { // warm the page cache
		get(off)
	}
	defer func() { skipReadVerify = false }()
	took := [2][]time.Duration{make([]time.Duration, 0, b.N/2+1), make([]time.Duration, 0, b.N/2+1)} // on, off
	b.SetBytes(int64(get(0).Bytes))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := i & 1
		skipReadVerify = off == 1
		t0 := time.Now()
		get(int64((i/2)%(n/batch)) * batch)
		took[off] = append(took[off], time.Since(t0))
	}
	b.StopTimer()
	if len(took[1]) > 0 {
		on, offNs := median(took[0]), median(took[1])
		b.ReportMetric(on, "on-ns/pull")
		b.ReportMetric(offNs, "off-ns/pull")
		b.ReportMetric(100*(on/offNs-1), "verify-%")
	}
}

func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Nanoseconds())
}
