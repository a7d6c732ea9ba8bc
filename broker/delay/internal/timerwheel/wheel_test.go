package timerwheel

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

func opts(fs vfs.FS) Options {
	return Options{Dir: "/tw", FS: fs, PrecisionMs: 100, Slots: 1000, SegmentEntries: 8}
}

func add(t *testing.T, w *Wheel, slot, phys int64) {
	t.Helper()
	if _, err := w.Add(Entry{DeliverMs: slot, Phys: phys, Size: 10, QueueOffset: phys}); err != nil {
		t.Fatal(err)
	}
}

// phys returns the slot's entries' Phys, oldest first.
func phys(t *testing.T, w *Wheel, slot int64) []int64 {
	t.Helper()
	es, err := w.Slot(slot)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range es {
		out = append(out, e.Phys)
	}
	return out
}

// TestChainsAndTurns: entries of a slot come back oldest first across
// segments; a slot of an earlier turn of the wheel reads as empty.
func TestChainsAndTurns(t *testing.T) {
	w, _, err := Open(opts(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := int64(0); i < 30; i++ {
		add(t, w, 1000+100*(i%3), i)
	}
	if got := phys(t, w, 1100); !slices.Equal(got, []int64{1, 4, 7, 10, 13, 16, 19, 22, 25, 28}) {
		t.Fatalf("slot 1100: %v", got)
	}
	if got := phys(t, w, 1000+100*1000); len(got) != 0 { // same index, next turn
		t.Fatalf("a later turn sees %v", got)
	}
	if w.Segments() != 4 {
		t.Fatalf("%d segments for 30 entries of 8", w.Segments())
	}
}

// TestCleanReopen: after Close with a checkpoint, Open gives the same
// slots and the checkpoint.
func TestCleanReopen(t *testing.T) {
	fs := vfs.NewMem()
	w, _, _ := Open(opts(fs))
	for i := int64(0); i < 20; i++ {
		add(t, w, 500+100*(i%4), i)
	}
	if err := w.Close(Checkpoint{ReadMs: 400, QueueOffset: 20}); err != nil {
		t.Fatal(err)
	}
	w, cp, err := Open(opts(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if cp.ReadMs != 400 || cp.QueueOffset != 20 || !cp.Clean || w.LastQueueOffset != 19 {
		t.Fatalf("checkpoint %+v last %d", cp, w.LastQueueOffset)
	}
	if got := phys(t, w, 800); !slices.Equal(got, []int64{3, 7, 11, 15, 19}) {
		t.Fatalf("slot 800: %v", got)
	}
}

// TestPowerLossRebuild: after a power loss at random, Open rebuilds the
// wheel from what survived of the log: every entry added before the last
// checkpoint is in its slot, in order, and later ones form a prefix.
func TestPowerLossRebuild(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		fs := vfs.NewMem()
		w, _, _ := Open(opts(fs))
		for i := int64(0); i < 25; i++ {
			add(t, w, 100*(i%5+1), i)
		}
		if err := w.Checkpoint(Checkpoint{ReadMs: 100, QueueOffset: 25}); err != nil {
			t.Fatal(err)
		}
		for i := int64(25); i < 40; i++ {
			add(t, w, 100*(i%5+1), i)
		}
		crashed := fs.CrashClone(rand.New(rand.NewSource(int64(seed))))
		w.Close()
		w2, cp, err := Open(opts(crashed))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if cp.QueueOffset != 25 || w2.LastQueueOffset < 24 {
			t.Fatalf("seed %d: checkpoint %+v last %d", seed, cp, w2.LastQueueOffset)
		}
		for s := int64(1); s <= 5; s++ {
			got := phys(t, w2, 100*s)
			for j, p := range got {
				if want := s - 1 + 5*int64(j); p != want {
					t.Fatalf("seed %d slot %d: %v", seed, s, got)
				}
			}
			if len(got) < 5 {
				t.Fatalf("seed %d slot %d lost checkpointed entries: %v", seed, s, got)
			}
		}
		w2.Close()
	}
}

// TestTrim: segments whose every entry is due before the read time go;
// the one being written stays.
func TestTrim(t *testing.T) {
	w, _, _ := Open(opts(vfs.NewMem()))
	defer w.Close()
	for i := int64(0); i < 20; i++ {
		add(t, w, 100*(i+1), i) // segment k holds slots 100*(8k+1)..100*(8k+8)
	}
	if n, err := w.Trim(900); err != nil || n != 1 {
		t.Fatalf("trim at 900: %d %v", n, err)
	}
	if n, _ := w.Trim(5000); n != 1 || w.Segments() != 1 {
		t.Fatalf("trim at 5000: %d, %d left", n, w.Segments())
	}
	if got := phys(t, w, 2000); !slices.Equal(got, []int64{19}) {
		t.Fatalf("slot 2000: %v", got)
	}
}
