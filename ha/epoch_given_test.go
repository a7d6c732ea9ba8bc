package ha

import (
	"errors"
	"slices"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// Controller mode: the master epoch comes from outside and must rise.
func TestBeginMasterEpochAt(t *testing.T) {
	mem := vfs.NewMem()
	f := openEpochs(t, mem)
	// No history: the epoch covers the whole retained log.
	e, err := f.BeginMasterEpochAt(1, 300, 100)
	must(t, err)
	if e != (Epoch{1, 100}) {
		t.Fatalf("first given epoch: %+v, want {1 100}", e)
	}
	e, err = f.BeginMasterEpochAt(3, 500, 100)
	must(t, err)
	if want := []Epoch{{1, 100}, {3, 500}}; e != (Epoch{3, 500}) || !slices.Equal(f.Entries(), want) {
		t.Fatalf("second: %+v, list %v, want %v", e, f.Entries(), want)
	}
	// Not above the history: refused, nothing changes.
	for _, bad := range []uint64{0, 2, 3} {
		if _, err := f.BeginMasterEpochAt(bad, 600, 100); !errors.Is(err, ErrEpochNotAbove) {
			t.Fatalf("epoch %d: %v, want ErrEpochNotAbove", bad, err)
		}
	}
	// Nothing written under 3: epoch 4 replaces it.
	e, err = f.BeginMasterEpochAt(4, 500, 100)
	must(t, err)
	if want := []Epoch{{1, 100}, {4, 500}}; e != (Epoch{4, 500}) || !slices.Equal(f.Entries(), want) {
		t.Fatalf("restart without writes: list %v, want %v", f.Entries(), want)
	}
	// A log that lost its tail drops the epochs starting past its end,
	// and still never reuses a number.
	if _, err := f.BeginMasterEpochAt(4, 400, 100); !errors.Is(err, ErrEpochNotAbove) {
		t.Fatalf("epoch 4 again: %v", err)
	}
	e, err = f.BeginMasterEpochAt(5, 400, 100)
	must(t, err)
	if want := []Epoch{{1, 100}, {5, 400}}; e != (Epoch{5, 400}) || !slices.Equal(f.Entries(), want) {
		t.Fatalf("after a lost tail: list %v, want %v", f.Entries(), want)
	}
	if f.MaxEpoch() != 5 {
		t.Fatalf("MaxEpoch %d", f.MaxEpoch())
	}
	g := openEpochs(t, mem)
	if !slices.Equal(g.Entries(), f.Entries()) || g.MaxEpoch() != 5 {
		t.Fatalf("reopened: %v max %d", g.Entries(), g.MaxEpoch())
	}
	if _, err := g.BeginMasterEpochAt(6, 50, 100); err == nil {
		t.Fatal("a log ending below its oldest byte was taken")
	}
}

// A demoted master holds a tail its successor never got, under the old
// epoch; the successor opened the next epoch where its copy ended. The
// consistent point is there: the demoted master cuts its tail to it.
func TestConsistentPointOfADemotedMaster(t *testing.T) {
	oldMaster := []Epoch{{1, 0}, {2, 1000}}            // wrote epoch 2 up to 1800
	newMaster := []Epoch{{1, 0}, {2, 1000}, {3, 1500}} // copied epoch 2 up to 1500
	if p := ConsistentPoint(oldMaster, 1800, newMaster, 2600); p != 1500 {
		t.Fatalf("consistent point %d, want 1500", p)
	}
}

// A slave that was master for a moment, wrote nothing and was deposed
// keeps an empty epoch at its log's end, above the epoch of the data its
// new master sends from there (that master's log carries an older
// lineage past this point, which the election preferred). The empty
// epoch holds nothing: the slave drops it at the handshake and follows.
// It used to keep it and refuse every frame as an epoch mismatch,
// reconnecting for ever.
func TestSlaveDropsItsEmptyEpoch(t *testing.T) {
	rng := seeded(t)
	mn, sn := newNode(t, testSeg), newNode(t, testSeg)
	m := startMaster(t, mn, "", func(c *MasterConfig) { c.Epoch = 16 << 16 })
	s := startSlave(t, sn, 1, masterAddr(m), nil)
	fill(mn.log, rng, 50, 1)
	caughtUp(t, mn.log, sn.log)
	must(t, s.Close())
	// The slave is made master at 17, writes nothing, and is deposed;
	// the old master, unaware, kept writing under 16.
	if _, err := sn.epochs.BeginMasterEpochAt(17<<16, sn.log.WrittenOffset(), sn.log.CommitLogMinOffset()); err != nil {
		t.Fatal(err)
	}
	fill(mn.log, rng, 50, 2)
	startSlave(t, sn, 1, masterAddr(m), nil)
	caughtUp(t, mn.log, sn.log)
	if got, want := sn.epochs.Entries(), mn.epochs.Entries(); !slices.Equal(got, want) {
		t.Fatalf("slave epochs %v, master %v", got, want)
	}
}
