package metalog

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

func collect(t *testing.T, fs vfs.FS) (*Log, []string) {
	t.Helper()
	var got []string
	l, err := Open(fs, "meta", "t.log", func(p []byte) error {
		got = append(got, string(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, got
}

func TestAppendReplayRotate(t *testing.T) {
	fs := vfs.NewMem()
	l, got := collect(t, fs)
	if len(got) != 0 {
		t.Fatalf("a new log replayed %q", got)
	}
	var want []string
	for i := range 10 {
		p := fmt.Sprintf("rec-%d", i)
		tk, err := l.Write([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(tk); err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
		if i == 4 {
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if l.Records() != 5 {
		t.Fatalf("newest file holds %d records, want 5", l.Records())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, got = collect(t, fs)
	if !slices.Equal(got, want) {
		t.Fatalf("replayed %q, want %q", got, want)
	}
	gen, err := l.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.DropBefore(gen); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if _, got = collect(t, fs); len(got) != 0 {
		t.Fatalf("after DropBefore the newest: replayed %q", got)
	}
}

// A torn tail and a flipped byte end the replay there; the log appends
// after the last whole record.
func TestTornTail(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := collect(t, fs)
	for i := range 3 {
		tk, _ := l.Write([]byte(fmt.Sprintf("rec-%d", i)))
		if err := l.Sync(tk); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()
	name := "meta/t.log.00000000000000000001"
	f, err := fs.Open(name, vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	// A half-written fourth record, then a flipped byte in the third.
	if _, err := f.WriteAt([]byte{0, 0, 0, 1, 0, 0, 0, 9, 'x'}, size); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	l, got := collect(t, fs)
	if !slices.Equal(got, []string{"rec-0", "rec-1", "rec-2"}) {
		t.Fatalf("torn tail: replayed %q", got)
	}
	tk, _ := l.Write([]byte("rec-3"))
	if err := l.Sync(tk); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	f, _ = fs.Open(name, vfs.OpenOptions{})
	var b [1]byte
	_, _ = f.ReadAt(b[:], size-1)
	b[0] ^= 0xff
	_, _ = f.WriteAt(b[:], size-1)
	_ = f.Close()
	if _, got = collect(t, fs); !slices.Equal(got, []string{"rec-0", "rec-1"}) {
		t.Fatalf("flipped byte: replayed %q", got)
	}
}

// Crashes at both levels at random points: every synced record survives,
// in order, and what survives is a prefix of what was written.
func TestCrashKeepsSynced(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for round := range 40 {
		fs := vfs.NewMem()
		l, _ := collect(t, fs)
		var written []string
		synced := 0
		n := 1 + rng.Intn(60)
		for i := range n {
			p := fmt.Sprintf("r%d-%d", round, i)
			tk, err := l.Write([]byte(p))
			if err != nil {
				t.Fatal(err)
			}
			written = append(written, p)
			if rng.Intn(3) == 0 {
				if err := l.Sync(tk); err != nil {
					t.Fatal(err)
				}
				synced = len(written)
			}
			if rng.Intn(10) == 0 {
				if _, err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
				synced = len(written)
			}
		}
		for _, power := range []bool{false, true} {
			var img *vfs.MemFS
			if power {
				img = fs.CrashClone(rng)
			} else {
				img = fs.ProcessCrashClone()
			}
			l2, got := collect(t, img)
			if len(got) < synced || (!power && len(got) != len(written)) {
				t.Fatalf("seed %d round %d power=%v: %d records back, %d synced, %d written", seed, round, power, len(got), synced, len(written))
			}
			if !slices.Equal(got, written[:len(got)]) {
				t.Fatalf("seed %d round %d power=%v: replayed %q, not a prefix of %q", seed, round, power, got, written)
			}
			tk, err := l2.Write([]byte("after"))
			if err == nil {
				err = l2.Sync(tk)
			}
			if err != nil {
				t.Fatal(err)
			}
			_ = l2.Close()
			if _, again := collect(t, img); len(again) != len(got)+1 || again[len(got)] != "after" {
				t.Fatalf("seed %d round %d: append after recovery lost: %q", seed, round, again)
			}
		}
		_ = l.Close()
	}
}
