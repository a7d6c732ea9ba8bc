package storage

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/storage/vfs"
)

// residentPages counts the pages of path in the page cache (mincore).
func residentPages(t *testing.T, path string, off, n int64) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (n+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	c := 0
	for _, v := range vec {
		c += int(v & 1)
	}
	return c
}

// TestBacklogReadAhead: a read far behind the tail of a segment no longer
// in the page cache makes the store ask for the window after it, which
// arrives in the page cache (a hint: waited for, with a deadline); a read
// near the tail asks for nothing. (pwrite: the mmap backend's own mapping
// keeps its pages from being dropped, so the test could not tell.)
func TestBacklogReadAhead(t *testing.T) {
	dir := t.TempDir()
	for _, be := range []string{"pwrite"} {
		t.Run(be, func(t *testing.T) {
			opts := testOptions(vfs.Default, be, FlushAsync)
			opts.Dir = filepath.Join(dir, be)
			opts.SegmentSize = 8 << 20
			s := mustOpen(t, opts)
			defer s.Close()
			s.ra.window, s.ra.lag = 1<<20, 2<<20
			res := appendN(t, s, "T", 0, 4000, 1000) // ~4 MB
			waitDispatched(t, s)
			if err := s.FlushTo(t.Context(), s.WrittenOffset()); err != nil {
				t.Fatal(err)
			}
			seg := filepath.Join(opts.Dir, "commitlog", "00000000000000000000")
			fd, err := os.Open(seg)
			if err != nil {
				t.Fatal(err)
			}
			_ = unix.Fadvise(int(fd.Fd()), 0, 0, unix.FADV_DONTNEED)
			fd.Close()
			window := int64(1 << 20)
			before := residentPages(t, seg, 0, window)

			// Near the tail (less than lag behind): no hint.
			tail := res[len(res)-10]
			if _, err := s.GetMessages("T", 0, tail.QueueOffset, 1, 0, nil); err != nil {
				t.Fatal(err)
			}
			s.ra.mu.Lock()
			for _, sl := range s.ra.slot {
				if sl.q.topic == "T" {
					t.Errorf("a read near the tail left a hint: %+v", sl)
				}
			}
			s.ra.mu.Unlock()
			// The first record: 4 MB behind, a backlog read.
			if _, err := s.GetMessages("T", 0, 0, 1, 0, nil); err != nil {
				t.Fatal(err)
			}
			want := int(window/4096) * 9 / 10
			deadline := time.Now().Add(10 * time.Second)
			for {
				got := residentPages(t, seg, 0, window)
				if got >= want {
					t.Logf("%s: %d of %d pages of the window resident (%d before)", be, got, window/4096, before)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %d of %d pages of the window resident after the backlog read (%d before): no read-ahead", be, got, window/4096, before)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
