package storage

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// readCountFS counts ReadAt calls on commit-log files.
type readCountFS struct {
	vfs.FS
	reads atomic.Int64
}

func (r *readCountFS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := r.FS.Open(name, o)
	if err != nil || !strings.Contains(name, "commitlog") {
		return f, err
	}
	return &readCountFile{File: f, r: r}, nil
}

type readCountFile struct {
	vfs.File
	r *readCountFS
}

func (f *readCountFile) ReadAt(p []byte, off int64) (int, error) {
	f.r.reads.Add(1)
	return f.File.ReadAt(p, off)
}

// TestGetMessagesSpanReads: a pull over a queue interleaved with others
// reads a span around its records (one read, not one per record), serves
// exactly its own records, and reads record by record where another
// queue's records leave a gap wider than spanGap.
func TestGetMessagesSpanReads(t *testing.T) {
	for _, tc := range []struct {
		name      string
		otherBody int   // body size of the other queues' records
		maxReads  int64 // reads for 32 records of queue 0
		minReads  int64
	}{
		{"small gaps", 100, 1, 1},
		{"wide gaps", spanGap, 32, 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &readCountFS{FS: vfs.NewMem()}
			opts := testOptions(rc, "pwrite", FlushAsync)
			opts.SegmentSize = 4 << 20
			opts.VerifyOnOpen = VerifyOff // its reads at the reopen below would count too
			s := mustOpen(t, opts)
			ctx := context.Background()
			var want [][]byte
			for i := range 40 {
				m := testMessage("T", 0, 50+i)
				want = append(want, m.Body)
				if _, err := s.Append(ctx, m); err != nil {
					t.Fatal(err)
				}
				for q := int32(1); q < 4; q++ {
					if _, err := s.Append(ctx, testMessage("T", q, tc.otherBody)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// Reopened, the log is read from the file, not a write buffer.
			s = mustOpen(t, opts)
			defer s.Close()
			before := rc.reads.Load()
			g, err := s.GetMessages("T", 0, 0, 32, 0, nil)
			if err != nil || g.Status != Found || len(g.Records) != 32 {
				t.Fatalf("get: %v %v, %d records", err, g.Status, len(g.Records))
			}
			if n := rc.reads.Load() - before; n < tc.minReads || n > tc.maxReads {
				t.Fatalf("%d reads for 32 records, want %d-%d", n, tc.minReads, tc.maxReads)
			}
			var rec record.Record
			for i, b := range g.Records {
				if err := record.Decode(b, record.PhysOffsetOf(b), &rec); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if rec.QueueID != 0 || rec.QueueOffset != int64(i) || !bytes.Equal(rec.Body, want[i]) {
					t.Fatalf("record %d: queue %d offset %d body %d bytes, want queue 0 offset %d body %d bytes",
						i, rec.QueueID, rec.QueueOffset, len(rec.Body), i, len(want[i]))
				}
			}
			if !bytes.Equal(g.Whole, bytes.Join(g.Records, nil)) {
				t.Fatal("Whole is not the records in order")
			}
		})
	}
}

// TestGetMessagesSpanBound: a span read never outgrows its 1 MiB scratch
// buffer, even when adjacent records follow a gap (a queue written alone
// after others interleaved with it): the pull returns every record whole.
func TestGetMessagesSpanBound(t *testing.T) {
	opts := testOptions(vfs.NewMem(), "pwrite", FlushAsync)
	opts.SegmentSize = 8 << 20
	opts.MaxMessageSize = 1 << 20
	s := mustOpen(t, opts)
	defer s.Close()
	ctx := context.Background()
	var want [][]byte
	add := func(q int32, n int) {
		m := testMessage("T", q, n)
		if q == 0 {
			want = append(want, m.Body)
		}
		if _, err := s.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	add(0, 100)
	add(1, 100) // a gap in queue 0
	for range 12 {
		add(0, 100<<10) // adjacent records, 1.2 MB in all
	}
	waitFor(t, "queue 0 indexed", func() bool { return s.MaxQueueOffset("T", 0) == int64(len(want)) })
	g, err := s.GetMessages("T", 0, 0, 32, 4<<20, nil)
	if err != nil || g.Status != Found {
		t.Fatalf("get: %v %v", err, g.Status)
	}
	if len(g.Records) != len(want) {
		t.Fatalf("%d records, want %d", len(g.Records), len(want))
	}
	var rec record.Record
	for i, b := range g.Records {
		if err := record.Decode(b, record.PhysOffsetOf(b), &rec); err != nil || !bytes.Equal(rec.Body, want[i]) {
			t.Fatalf("record %d: %v, body %d bytes, want %d", i, err, len(rec.Body), len(want[i]))
		}
	}
}
