package storage

import (
	"bytes"
	"context"
	"flag"
	"math/rand"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

var fileSeed = flag.Int64("file.seed", 0, "TestGetMessagesFileMatchesRead: the seed (0: from the clock)")

// readPieces reads f's pieces back, in order, with pread on their
// descriptors: the bytes a sendfile of them would send.
func readPieces(t *testing.T, f *FileRecords) []byte {
	t.Helper()
	out := make([]byte, 0, f.Len())
	for _, p := range f.Pieces {
		b := make([]byte, p.N)
		if n, err := unix.Pread(p.Fd, b, p.Off); err != nil || n != p.N {
			t.Fatalf("pread %d bytes at %d: %d, %v", p.N, p.Off, n, err)
		}
		out = append(out, b...)
	}
	return out
}

// TestGetMessagesFileMatchesRead: over every backend, on the OS's file
// system and on MemFS, a read for a file sender (GetMessagesFile) gives
// exactly what GetMessages gives: the same status, offsets and records,
// byte for byte (read back from its file pieces where it has them), for
// seeded random queues, offsets, limits and tag filters, while appends
// go on (records still in a write buffer: it falls back to reading) and
// after a reopen (all in the files: every backend sends from the file).
func TestGetMessagesFileMatchesRead(t *testing.T) {
	seed := *fileSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (-file.seed to replay)", seed)
	for _, be := range backend.Names() {
		for _, osfs := range []bool{true, false} {
			name := be + "/memfs"
			if osfs {
				name = be + "/os"
			}
			t.Run(name, func(t *testing.T) {
				rng := rand.New(rand.NewSource(seed))
				var opts Options
				if osfs {
					opts = testOptions(vfs.Default, be, FlushAsync)
					opts.Dir = t.TempDir()
				} else {
					opts = testOptions(vfs.NewMem(), be, FlushAsync)
				}
				opts.SegmentSize = 256 << 10
				s, err := Open(opts)
				if err != nil {
					t.Skipf("backend %s here: %v", be, err)
				}
				const queues = 4
				ctx := context.Background()
				write := func(n int) {
					for range n {
						// Bursts of one queue (runs long enough to go from
						// the file) and single records (short runs: read).
						q, burst := int32(rng.Intn(queues)), 1
						if rng.Intn(2) == 0 {
							burst = 1 + rng.Intn(40)
						}
						for range burst {
							topic := "T"
							if rng.Intn(8) == 0 {
								topic = "U" // another tag (and topic): the filter skips it
							}
							if _, err := s.Append(ctx, testMessage(topic, q, 1+rng.Intn(3000))); err != nil {
								t.Fatal(err)
							}
						}
					}
					waitDispatched(t, s)
				}
				fromFile := 0
				check := func(rounds int) {
					for range rounds {
						q := int32(rng.Intn(queues))
						max := s.MaxQueueOffset("T", q)
						off := rng.Int63n(max + 2)
						maxMsgs, maxBytes := 1+rng.Intn(40), rng.Intn(64<<10)
						var filter func(int64) bool
						if rng.Intn(2) == 0 {
							code := record.TagsCode("tagT")
							filter = func(c int64) bool { return c == code }
						}
						want, werr := s.GetMessages("T", q, off, maxMsgs, maxBytes, filter)
						got, gerr := s.GetMessagesFile("T", q, off, maxMsgs, maxBytes, filter)
						if (werr == nil) != (gerr == nil) || want.Status != got.Status || want.NextOffset != got.NextOffset ||
							want.Bytes != got.Bytes || len(want.QueueOffsets) != len(got.QueueOffsets) {
							t.Fatalf("queue %d at %d (%d msgs, %d bytes): read %v %v next %d bytes %d, file %v %v next %d bytes %d",
								q, off, maxMsgs, maxBytes, want.Status, werr, want.NextOffset, want.Bytes, got.Status, gerr, got.NextOffset, got.Bytes)
						}
						body := got.Whole
						if len(got.Files.Pieces) > 0 {
							if got.Whole != nil || got.Records != nil {
								t.Fatal("a file read holds records too")
							}
							body = readPieces(t, &got.Files)
							fromFile++
						}
						if !bytes.Equal(body, want.Whole) {
							t.Fatalf("queue %d at %d: %d bytes differ from the read's %d", q, off, len(body), len(want.Whole))
						}
						for i := range want.QueueOffsets {
							if want.QueueOffsets[i] != got.QueueOffsets[i] {
								t.Fatalf("queue offset %d: %d, read %d", i, got.QueueOffsets[i], want.QueueOffsets[i])
							}
						}
						got.Release()
						if got.Files.Pieces != nil {
							t.Fatal("Release left the pieces")
						}
					}
				}
				for range 4 {
					write(30)
					check(40)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = mustOpen(t, opts)
				defer s.Close()
				check(150)
				if osfs && fromFile == 0 {
					t.Fatalf("%s on the OS's file system: no read was sent from the file", be)
				}
				if !osfs && fromFile != 0 {
					t.Fatalf("MemFS has no descriptors, yet %d reads came from files", fromFile)
				}
				t.Logf("%d reads from the file", fromFile)
			})
		}
	}
}
