package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/vfs"
)

// TestFullExt4 is the full disk as an operator meets it, on a real 96 MiB
// ext4 file system (a loop mount: it needs root, mkfs.ext4 and a loop
// device, and skips saying so without them). For each backend: fill the
// disk with appends until they are refused, read every acknowledged
// message back while the disk stays full, close (a SIGTERM) and open again
// on the full disk, read them all again, free space and append again.
func TestFullExt4(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	mnt := mountExt4(t, 96<<20)
	for _, be := range backend.Names() {
		t.Run(be, func(t *testing.T) {
			dir := filepath.Join(mnt, be)
			filler := filepath.Join(mnt, be+".filler")
			t.Cleanup(func() { os.Remove(filler); os.RemoveAll(dir) })
			opts := Options{
				Dir:                 dir,
				Backend:             be,
				SegmentSize:         8 << 20,
				ConsumeQueueEntries: 64, // files roll: new ones need space
				Flush:               FlushOptions{Policy: FlushAsync},
				Retention:           RetentionOptions{MaxAge: -1, DiskRatio: -1, CheckInterval: time.Hour},
				CheckpointInterval:  time.Hour,
				Logger:              quietLogger(),
			}
			s, err := Open(opts)
			if errors.Is(err, vfs.ErrDirectUnsupported) || errors.Is(err, errors.ErrUnsupported) {
				t.Skipf("backend %s does not run here: %v", be, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			// The first segment is made (allocated whole, but with pwrite),
			// then the disk is filled but for 32 KiB: it fills inside the
			// segment, where the queues' entries meet it first.
			e := &faultEnv{t: t, opts: opts, s: s}
			const queues = 16
			for q := 0; q < queues; q++ {
				e.mustAppendTo("T", int32(q), 1000)
			}
			fill(t, filler, 32<<10)
			n := 0
			for ; n < 100_000; n++ {
				if _, err = e.appendTo("T", int32(n%queues), 1000); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrDiskFull) {
				t.Fatalf("after %d appends: %v, want ErrDiskFull", n, err)
			}
			waitFor(t, "every acknowledged record indexed", func() bool { return e.s.dispatchOK.Load() >= e.s.WrittenOffset() })
			for q := 0; q < queues; q++ {
				e.checkQueue("T", int32(q))
			}
			t.Logf("%d appends acknowledged, every one readable with the disk full (reserve spent %d times)",
				len(e.acked), e.s.Metrics().ReserveSpent)

			if err := e.s.Close(); err != nil && !errors.Is(err, ErrDiskFullAtClose) {
				t.Fatalf("close on the full disk: %v", err)
			}
			if e.s, err = Open(opts); err != nil {
				t.Fatalf("open on the full disk: %v", err)
			}
			for q := 0; q < queues; q++ {
				e.checkQueue("T", int32(q))
			}
			if _, err := e.s.Append(context.Background(), testMessage("T", 0, 1000)); err == nil {
				// Room enough may be left for a few more; the disk fills again.
				t.Log("the reopened store took an append")
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the store to leave read-only", func() bool { return !e.s.ReadOnly() })
			e.acked = nil
			for i := 0; i < 100; i++ {
				e.mustAppendTo("T", int32(i%queues), 1000)
			}
			if err := e.s.Close(); err != nil {
				t.Fatalf("close after space returned: %v", err)
			}
		})
	}
}

// mountExt4 makes an ext4 file system of size bytes in a file and mounts
// it on a temporary directory until the test ends; it skips the test when
// it cannot.
func mountExt4(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a loop device")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("no mkfs.ext4")
	}
	tmp := t.TempDir()
	img, mnt := filepath.Join(tmp, "fs.img"), filepath.Join(tmp, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a loop device here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// fill writes a file at path until the file system is full (for this
// user: root may use ext4's reserved blocks too), then gives room bytes
// back.
func fill(t *testing.T, path string, room int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var size int64
	for {
		n, err := f.Write(buf)
		size += int64(n)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatalf("filling %s: %v", path, err)
		}
	}
	if err := f.Truncate(max(0, size-room)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(fmt.Errorf("sync %s: %w", path, err))
	}
}
