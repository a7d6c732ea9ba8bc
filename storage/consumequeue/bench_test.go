package consumequeue

import (
	"fmt"
	"testing"
)

func BenchmarkAppend(b *testing.B) {
	fs, dir := osDir(b)
	tb := openTable(b, fs, dir, DefaultEntriesPerFile)
	defer tb.Close()
	q := tb.Queue("T", 0)
	b.SetBytes(EntrySize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range int64(b.N) {
		if err := q.Append(i, 1000+i*100, 100, i); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := q.Flush(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkEntries(b *testing.B) {
	fs, dir := osDir(b)
	tb := openTable(b, fs, dir, 10_000)
	defer tb.Close()
	q := tb.Queue("T", 0)
	const n = 100_000
	appendN(b, q, 0, n)
	if err := q.Flush(); err != nil {
		b.Fatal(err)
	}
	for _, batch := range []int{1, 32, 1024} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			dst := make([]Entry, 0, batch)
			b.SetBytes(int64(batch) * EntrySize)
			b.ReportAllocs()
			b.ResetTimer()
			var from int64
			for range b.N {
				var err error
				if dst, err = q.Entries(from, batch, dst); err != nil || len(dst) == 0 {
					b.Fatal(err, len(dst))
				}
				from = (from + 7919) % (n - int64(batch))
			}
		})
	}
	b.Run("tail-buffered", func(b *testing.B) {
		// Reads of entries still in the append buffer: no syscall.
		dst := make([]Entry, 0, 32)
		m := q.MaxOffset()
		appendN(b, q, m, m+100)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			var err error
			if dst, err = q.Entries(m+50, 32, dst); err != nil || len(dst) != 32 {
				b.Fatal(err, len(dst))
			}
		}
	})
}
