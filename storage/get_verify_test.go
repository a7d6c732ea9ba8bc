package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// sealedFixture appends n records to T/0 across several 4 KiB segments and
// closes the store cleanly: the next Open scans nothing, so damage done to
// the files now is first met by a read.
func sealedFixture(t *testing.T, n int) (*vfs.MemFS, Options, []AppendResult) {
	t.Helper()
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	opts.SegmentSize = 4 << 10
	s := mustOpen(t, opts)
	res := appendN(t, s, "T", 0, n, 300)
	waitDispatched(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if res[3].PhysicalOffset/opts.SegmentSize == res[n-1].PhysicalOffset/opts.SegmentSize {
		t.Fatal("fixture: record 3 is not in an older segment")
	}
	return mem, opts, res
}

// getAll pulls (topic T, queue 0) from offset, up to 32 records.
func getAll(t *testing.T, s *Store, offset int64) (GetResult, error) {
	t.Helper()
	return s.GetMessages("T", 0, offset, 32, 0, nil)
}

func TestReadsDoNotServeCorruptRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   int64 // byte of record 3 to flip
		want error
	}{
		{"body byte", 100, record.ErrRecordCRC},
		{"size field", record.OffTotalSize + 2, record.ErrBadSize},
		{"magic", record.OffMagic, record.ErrBadMagic},
		{"physical offset", record.OffPhysOffset + 7, record.ErrPhysOffset},
		{"crc property", -5, record.ErrNoCRC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, opts, res := sealedFixture(t, 30)
			const victim = 3
			v := res[victim]
			at := v.PhysicalOffset + tc.at
			if tc.at < 0 {
				at = v.PhysicalOffset + int64(v.Size) + tc.at
			}
			flipByte(t, mem, opts, at)
			s := mustOpen(t, opts)
			defer s.Close()

			// The records before it are served, and the read stops there.
			g, err := getAll(t, s, 0)
			if err != nil || g.Status != Found || len(g.Records) != victim || g.NextOffset != victim {
				t.Fatalf("pull from 0: %v, %v, %d records, next %d; want %d records, next %d",
					err, g.Status, len(g.Records), g.NextOffset, victim, victim)
			}
			for i, b := range g.Records {
				if err := record.Verify(b, res[i].PhysicalOffset); err != nil {
					t.Fatalf("record %d served: %v", i, err)
				}
			}
			// A pull starting at it names it and moves past it.
			g, err = getAll(t, s, victim)
			var ce *CorruptRecordError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || !errors.Is(err, tc.want) {
				t.Fatalf("pull at the corrupt record: %v, want a *CorruptRecordError wrapping %v", err, tc.want)
			}
			if ce.Topic != "T" || ce.QueueID != 0 || ce.QueueOffset != victim || ce.PhysOffset != v.PhysicalOffset || ce.Size != v.Size {
				t.Fatalf("error names %+v, want queue offset %d phys %d", ce, victim, v.PhysicalOffset)
			}
			if len(g.Records) != 0 || g.NextOffset != victim+1 {
				t.Fatalf("pull at the corrupt record: %d records, next %d; want none, next %d", len(g.Records), g.NextOffset, victim+1)
			}
			// The offset after it is reachable.
			g, err = getAll(t, s, victim+1)
			if err != nil || g.Status != Found || len(g.Records) == 0 || g.QueueOffsets[0] != victim+1 {
				t.Fatalf("pull after it: %v %v %d records", err, g.Status, len(g.Records))
			}
			m := s.Metrics()
			if m.CorruptRecords != 1 || m.Quarantined != 1 {
				t.Fatalf("metrics: %d corrupt, %d quarantined; want 1, 1", m.CorruptRecords, m.Quarantined)
			}
			q := s.Quarantined()
			if len(q) != 1 || q[0].PhysOffset != v.PhysicalOffset || q[0].QueueOffset != victim || q[0].Topic != "T" || q[0].Reason == "" {
				t.Fatalf("quarantine %+v", q)
			}

			// Quarantined: repairing the bytes under the open store changes
			// nothing, so later pulls do not read it again.
			flipByte(t, mem, opts, at)
			for _, off := range []int64{0, victim} {
				g, err = getAll(t, s, off)
				if off == 0 && (err != nil || len(g.Records) != victim || g.NextOffset != victim) {
					t.Fatalf("pull from 0 after quarantine: %v, %d records, next %d", err, len(g.Records), g.NextOffset)
				}
				if off == victim && (!errors.As(err, &ce) || !ce.Quarantined || g.NextOffset != victim+1) {
					t.Fatalf("pull at the quarantined record: %v, next %d", err, g.NextOffset)
				}
			}
			if m := s.Metrics(); m.CorruptRecords != 1 {
				t.Fatalf("counted %d times, want once", m.CorruptRecords)
			}

			// The quarantine survives a restart.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, opts)
			defer s.Close()
			if q := s.Quarantined(); len(q) != 1 || q[0].PhysOffset != v.PhysicalOffset {
				t.Fatalf("quarantine after restart: %+v", q)
			}
			if _, err := getAll(t, s, victim); !errors.As(err, &ce) || !ce.Quarantined {
				t.Fatalf("pull at the quarantined record after restart: %v", err)
			}
		})
	}
}

// TestFilteredCorruptRecordIsSkipped: a corrupt record the consumer's tag
// filter rejects is neither read nor reported.
func TestFilteredCorruptRecordIsSkipped(t *testing.T) {
	mem, opts, res := sealedFixture(t, 30)
	flipByte(t, mem, opts, res[3].PhysicalOffset+100)
	s := mustOpen(t, opts)
	defer s.Close()
	g, err := s.GetMessages("T", 0, 0, 32, 0, func(int64) bool { return false })
	if err != nil || g.Status != NoMatchedMessage || g.NextOffset != 30 {
		t.Fatalf("filtered pull: %v %v next %d", err, g.Status, g.NextOffset)
	}
	if m := s.Metrics(); m.CorruptRecords != 0 {
		t.Fatalf("%d corrupt records reported", m.CorruptRecords)
	}
}

func TestBadQuarantineFileDoesNotStopOpen(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":     "{not json",
		"wrong shape": `{"version": 1, "records": 7}`,
		"version":     `{"version": 99, "records": []}`,
		"empty":       "",
	} {
		t.Run(name, func(t *testing.T) {
			mem, opts, res := sealedFixture(t, 30)
			flipByte(t, mem, opts, res[3].PhysicalOffset+100)
			f, err := mem.Create(filepath.Join(opts.Dir, "quarantine.json"), vfs.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte(content), 0)
			f.Sync()
			f.Close()
			s := mustOpen(t, opts)
			defer s.Close()
			if q := s.Quarantined(); len(q) != 0 {
				t.Fatalf("quarantine from a bad file: %+v", q)
			}
			// Reads still check: the record is found, and the file rewritten.
			if _, err := getAll(t, s, 3); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("pull at the corrupt record: %v", err)
			}
			s.Close()
			s = mustOpen(t, opts)
			defer s.Close()
			if q := s.Quarantined(); len(q) != 1 || q[0].QueueOffset != 3 {
				t.Fatalf("quarantine after the rewrite: %+v", q)
			}
		})
	}
}

// TestBadConsumeQueueEntrySize: a ConsumeQueue entry whose size no record
// can have (its SIZE field damaged at rest) is reported like a corrupt
// record, without reading the log.
func TestBadConsumeQueueEntrySize(t *testing.T) {
	mem, opts, _ := sealedFixture(t, 30)
	// Entry 3 of T/0 lies in the queue's first file (16 entries a file),
	// at byte 3*20; its SIZE field at +8.
	f, err := mem.Open(filepath.Join(opts.Dir, "consumequeue", "T", "0", fmt.Sprintf("%020d", 0)), vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0, 0, 0, 5}, 3*20+8); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	s := mustOpen(t, opts)
	defer s.Close()
	if g, err := getAll(t, s, 0); err != nil || len(g.Records) != 3 || g.NextOffset != 3 {
		t.Fatalf("pull from 0: %v, %d records, next %d", err, len(g.Records), g.NextOffset)
	}
	g, err := getAll(t, s, 3)
	var ce *CorruptRecordError
	if !errors.As(err, &ce) || !errors.Is(err, record.ErrBadSize) || !strings.Contains(err.Error(), "consume queue entry") ||
		ce.Size != 5 || g.NextOffset != 4 {
		t.Fatalf("pull at the bad entry: %v, next %d", err, g.NextOffset)
	}
	if g, err := getAll(t, s, 4); err != nil || g.Status != Found {
		t.Fatalf("pull after it: %v %v", err, g.Status)
	}
}

// TestConcurrentReadsCountCorruptOnce: reads racing to the same corrupt
// record each stop there; it is quarantined and counted once.
func TestConcurrentReadsCountCorruptOnce(t *testing.T) {
	mem, opts, res := sealedFixture(t, 30)
	flipByte(t, mem, opts, res[5].PhysicalOffset+100)
	s := mustOpen(t, opts)
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(start int64) {
			defer wg.Done()
			g, err := s.GetMessages("T", 0, start, 32, 0, nil)
			switch {
			case start == 5 && !errors.Is(err, ErrCorrupt):
				errs <- fmt.Errorf("pull at 5: %v", err)
			case start < 5 && (err != nil || g.NextOffset != 5 || len(g.Records) != int(5-start)):
				errs <- fmt.Errorf("pull at %d: %v, %d records, next %d", start, err, len(g.Records), g.NextOffset)
			}
		}(int64(i % 6))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := s.Metrics(); m.CorruptRecords != 1 || len(s.Quarantined()) != 1 {
		t.Fatalf("counted %d, quarantined %d; want 1, 1", m.CorruptRecords, len(s.Quarantined()))
	}
}
