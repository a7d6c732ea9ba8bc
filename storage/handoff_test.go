package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// kernelView reads the log's bytes at [phys, phys+n) as the file system
// holds them (what a process crash leaves: MemFS keeps every write, synced
// or not), not through the store's segments and their buffers.
func kernelView(t *testing.T, fs vfs.FS, s *Store, phys int64, n int) ([]byte, error) {
	t.Helper()
	base := phys - phys%s.segSize
	f, err := fs.Open(s.segmentPath(base), vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if k, err := f.ReadAt(b, phys-base); k < n {
		return nil, fmt.Errorf("file holds %d of %d bytes at %d: %v", k, n, phys, err)
	}
	return b, nil
}

// TestAckedAppendsAreInTheKernel: at the default (process-crash) level an
// async or none append returns only once its record is in the file as the
// file system holds it, on every backend, across segment rolls and with
// concurrent writers; and every record the dispatcher indexed is too.
// pwrite runs without its stage here, whose bytes are in the kernel but
// reach the segment file later (TestStageSurvivesProcessCrash and the
// conformance suite check those).
func TestAckedAppendsAreInTheKernel(t *testing.T) {
	for _, be := range memBackends(t) {
		for _, policy := range []FlushPolicy{FlushAsync, FlushNone} {
			t.Run(be+"/"+policy.String(), func(t *testing.T) {
				mem := vfs.NewMem()
				opts := testOptions(mem, be, policy)
				opts.SegmentBackend = testBackend(t, be)
				opts.Flush.Interval = 10 * 60e9 // no flush helps
				opts.NoStage = true
				s := mustOpen(t, opts)
				defer s.Close()
				if got := s.Options().Durability(); got != DurabilityProcessCrash {
					t.Fatalf("durability %s", got)
				}
				var wg sync.WaitGroup
				errs := make(chan error, 4)
				for w := 0; w < 4; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < 60; i++ {
							r, err := s.Append(context.Background(), testMessage("K", int32(w), 300+97*((i+w)%9)))
							if err != nil {
								errs <- err
								return
							}
							// Right now, before any other call: the bytes are the file's.
							b, err := kernelView(t, mem, s, r.PhysicalOffset, int(r.Size))
							if err == nil {
								_, err = record.Validate(b, r.PhysicalOffset)
							}
							if err != nil {
								errs <- fmt.Errorf("writer %d append %d at %d: %w", w, i, r.PhysicalOffset, err)
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
				if s.Metrics().Rolls < 3 {
					t.Fatalf("only %d rolls: the test wants segment rolls", s.Metrics().Rolls)
				}
				waitDispatched(t, s)
				for q := int32(0); q < 4; q++ {
					res, err := s.GetMessages("K", q, 0, 1000, 0, nil)
					if err != nil || len(res.Records) != 60 {
						t.Fatalf("queue %d: %d records, %v", q, len(res.Records), err)
					}
				}
			})
		}
	}
}

// TestRollWritesOutTheOldSegmentFirst: with AckBuffered (appends wait in
// the buffer), the first byte of a new segment reaches the file only after
// every byte of the old one, its blank included: the log on file is a
// prefix, so a process crash after a roll never leaves a hole that cuts
// off the segments after it.
func TestRollWritesOutTheOldSegmentFirst(t *testing.T) {
	for _, be := range memBackends(t) {
		t.Run(be, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := testOptions(mem, be, FlushAsync)
			opts.SegmentBackend = testBackend(t, be)
			opts.AckBuffered = true
			opts.Flush.Interval = 10 * 60e9
			s := mustOpen(t, opts)
			defer s.Close()
			var last AppendResult
			for s.Metrics().Rolls < 4 {
				r, err := s.Append(context.Background(), testMessage("R", 0, 700))
				if err != nil {
					t.Fatal(err)
				}
				if r.PhysicalOffset/s.segSize != last.PhysicalOffset/s.segSize && r.PhysicalOffset > 0 {
					// A roll: the old segment is whole on file.
					oldBase := last.PhysicalOffset - last.PhysicalOffset%s.segSize
					b, err := kernelView(t, mem, s, oldBase, int(s.segSize))
					if err != nil {
						t.Fatalf("old segment %d after the roll: %v", oldBase, err)
					}
					end := last.PhysicalOffset + int64(last.Size) - oldBase
					if _, err := record.Validate(b[last.PhysicalOffset-oldBase:end], last.PhysicalOffset); err != nil {
						t.Fatalf("old segment's last record: %v", err)
					}
					if size, magic, err := record.Header(b[end:]); err != nil || magic != record.MagicBlank || int64(size) != s.segSize-end {
						t.Fatalf("old segment's blank at %d: size %d magic %#x %v", end, size, uint32(magic), err)
					}
				}
				last = r
			}
		})
	}
}

// syncBuffer is a log sink tests read while the store writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestPowerLossCutReportsAcknowledgedRecords: async flush promises
// nothing against a power loss; when one takes acknowledged (indexed)
// records, recovery says how many, and which queue offsets.
func TestPowerLossCutReportsAcknowledgedRecords(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushAsync)
	opts.Flush.Interval = 10 * 60e9 // nothing flushed but by hand
	s := mustOpen(t, opts)
	for i := 0; i < 5; i++ {
		if _, err := s.Append(context.Background(), testMessage("P", 0, 200)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flushTo(s.WrittenOffset()); err != nil { // five durable
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ { // seven acknowledged, in the page cache only
		if _, err := s.Append(context.Background(), testMessage("P", 0, 200)); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s)
	if err := s.Checkpoint(); err != nil { // the consume queue's 12 entries are synced
		t.Fatal(err)
	}
	crashed := mem.CrashClone(nil) // every unsynced byte of the log lost
	s.Close()

	s2, logs := reopenLogged(t, opts, crashed)
	defer s2.Close()
	if got := s2.MaxQueueOffset("P", 0); got != 5 {
		t.Fatalf("queue ends at %d after the power loss, want 5", got)
	}
	out := logs.String()
	for _, want := range []string{"recovery cut acknowledged records", "records=7", "fromOffset=5", "toOffset=12"} {
		if !strings.Contains(out, want) {
			t.Fatalf("recovery log lacks %q:\n%s", want, out)
		}
	}
}

// TestGetMessagesWhole: Whole is the records back to back, one slice, so
// the broker hands the kernel one iovec per pull answer.
func TestGetMessagesWhole(t *testing.T) {
	s := mustOpen(t, testOptions(vfs.NewMem(), "pwrite", FlushAsync))
	defer s.Close()
	for i := 0; i < 20; i++ {
		if _, err := s.Append(context.Background(), testMessage("W", 0, 100+i)); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s)
	res, err := s.GetMessages("W", 0, 3, 12, 0, nil)
	if err != nil || len(res.Records) != 12 {
		t.Fatalf("%d records, %v", len(res.Records), err)
	}
	if !bytes.Equal(res.Whole, bytes.Join(res.Records, nil)) || len(res.Whole) != res.Bytes {
		t.Fatalf("Whole (%d bytes) is not the %d records (%d bytes) back to back", len(res.Whole), len(res.Records), res.Bytes)
	}
}

// TestCloseDuringHandOff: Close while appenders hand over never breaks
// the store, and an append that fails says the store closed, not that it
// broke.
func TestCloseDuringHandOff(t *testing.T) {
	for round := 0; round < 5; round++ {
		s := mustOpen(t, testOptions(vfs.NewMem(), "pwrite", FlushAsync))
		var wg sync.WaitGroup
		var started sync.WaitGroup
		errs := make(chan error, 8)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			started.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					if i == 20 {
						started.Done()
					}
					if _, err := s.Append(context.Background(), testMessage("C", int32(w), 500)); err != nil {
						if i < 20 {
							started.Done()
						}
						errs <- err
						return
					}
				}
			}()
		}
		started.Wait()
		if err := s.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if errors.Is(err, ErrBroken) || !errors.Is(err, ErrClosed) {
				t.Fatalf("round %d: an append during Close failed with %v", round, err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("round %d: store broken by Close: %v", round, err)
		}
	}
}
