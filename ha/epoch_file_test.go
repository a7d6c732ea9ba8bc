package ha

import (
	"errors"
	"io/fs"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

const epochPath = "/ha/epoch"

func openEpochs(t *testing.T, fsys vfs.FS) *EpochFile {
	t.Helper()
	must(t, fsys.MkdirAll("/ha"))
	f, err := OpenEpochFile(fsys, epochPath, quietLogger())
	must(t, err)
	return f
}

func TestEpochFilePersists(t *testing.T) {
	mem := vfs.NewMem()
	f := openEpochs(t, mem)
	f.now = func() time.Time { return time.Unix(epochClockBase+1000, 0) }
	e, err := f.BeginMasterEpoch(0, 0)
	must(t, err)
	if e != (Epoch{1000e9, 0}) {
		t.Fatalf("first epoch without history: %+v, want the clock epoch 1000 s at 0", e)
	}
	e, err = f.BeginMasterEpoch(500, 0)
	must(t, err)
	if e != (Epoch{1000e9 + 1, 500}) {
		t.Fatalf("second start: %+v", e)
	}
	// A restart with nothing written since replaces the empty epoch.
	e, err = f.BeginMasterEpoch(500, 0)
	must(t, err)
	want := []Epoch{{1000e9, 0}, {1000e9 + 2, 500}}
	if got := f.Entries(); e != (Epoch{1000e9 + 2, 500}) || !slices.Equal(got, want) {
		t.Fatalf("restart without writes: %+v, list %v, want %v", e, got, want)
	}
	// Every change is durable: a power loss keeps it.
	g := openEpochs(t, mem.CrashClone(rand.New(rand.NewSource(12))))
	if got := g.Entries(); !slices.Equal(got, want) {
		t.Fatalf("after a crash: %v, want %v", got, want)
	}
}

// A master that lost its tail past an epoch's start never reuses that
// epoch's number: a slave may hold the lost bytes under it.
func TestEpochFileNeverReusesAnEpoch(t *testing.T) {
	f := openEpochs(t, vfs.NewMem())
	must(t, f.storeLocked([]Epoch{{1, 0}, {2, 100}, {3, 300}}))
	e, err := f.BeginMasterEpoch(200, 0) // the log lost [200, ...): epoch 3 is gone
	must(t, err)
	if want := []Epoch{{1, 0}, {2, 100}, {4, 200}}; e != (Epoch{4, 200}) || !slices.Equal(f.Entries(), want) {
		t.Fatalf("got %+v, list %v; want %v", e, f.Entries(), want)
	}
	e, err = f.BeginMasterEpoch(100, 0) // and now everything from 100
	must(t, err)
	if want := []Epoch{{1, 0}, {5, 100}}; e != (Epoch{5, 100}) || !slices.Equal(f.Entries(), want) {
		t.Fatalf("got %+v, list %v; want %v", e, f.Entries(), want)
	}
}

func TestEpochFileSlaveOps(t *testing.T) {
	mem := vfs.NewMem()
	f := openEpochs(t, mem)
	must(t, f.Record(Epoch{3, 0}, 4096))
	must(t, f.Record(Epoch{3, 0}, 8000))
	must(t, f.Record(Epoch{5, 9000}, 9000))
	if err := f.Record(Epoch{4, 9500}, 9500); !errors.Is(err, ErrEpochMismatch) {
		t.Fatalf("older epoch recorded: %v", err)
	}
	must(t, f.TruncateFrom(9000))
	if got := f.Entries(); !slices.Equal(got, []Epoch{{3, 0}}) {
		t.Fatalf("after truncation: %v", got)
	}
	must(t, f.Reset())
	if _, ok := openEpochs(t, mem).Last(); ok {
		t.Fatal("reset list came back")
	}
}

// A corrupt file does not stop the broker: it is moved aside and the list
// starts empty.
func TestEpochFileCorrupt(t *testing.T) {
	mem := vfs.NewMem()
	f := openEpochs(t, mem)
	must(t, f.Record(Epoch{1, 0}, 0))
	b := encodeEpochFile([]Epoch{{1, 0}, {2, 50}})
	b[14] ^= 0xff
	must(t, vfs.WriteFileAtomic(mem, epochPath, b))
	g := openEpochs(t, mem)
	if got := g.Entries(); len(got) != 0 {
		t.Fatalf("corrupt file gave %v", got)
	}
	if _, err := mem.Stat(epochPath + ".corrupt"); err != nil {
		t.Fatalf("corrupt file not moved aside: %v", err)
	}
	if _, err := mem.Stat(epochPath); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("corrupt file still in place: %v", err)
	}
	// A master with no history opens the fresh clock epoch over its whole log.
	g.now = func() time.Time { return time.Unix(epochClockBase+7, 0) }
	e, err := g.BeginMasterEpoch(9000, 4096)
	must(t, err)
	if e != (Epoch{7e9, 4096}) {
		t.Fatalf("fresh epoch %+v", e)
	}
}

// Crash at every point of a sequence of changes: the file reopens as one
// of the lists that were durable, never as garbage.
func TestEpochFileCrashClones(t *testing.T) {
	mem := vfs.NewMem()
	f := openEpochs(t, mem)
	var states [][]Epoch
	states = append(states, nil)
	rng := rand.New(rand.NewSource(77))
	for i := 1; i <= 20; i++ {
		must(t, f.Record(Epoch{uint64(i), int64(i * 100)}, int64(i*100)))
		states = append(states, f.Entries())
		clone := mem.CrashClone(rng)
		got := openEpochs(t, clone).Entries()
		if !slices.Equal(got, states[i]) {
			t.Fatalf("crash after change %d: %v, want %v", i, got, states[i])
		}
	}
}

// An unreadable file is treated as a corrupt one: moved aside, no history.
func TestEpochFileUnreadable(t *testing.T) {
	mem := vfs.NewMem()
	f := openEpochs(t, mem)
	must(t, f.Record(Epoch{1, 0}, 0))
	efs := errorfs.Wrap(mem, errorfs.Rule{Op: errorfs.OpRead, Path: "epoch"})
	if got := openEpochs(t, efs).Entries(); len(got) != 0 {
		t.Fatalf("unreadable file gave %v", got)
	}
	if _, err := mem.Stat(epochPath + ".corrupt"); err != nil {
		t.Fatalf("unreadable file not moved aside: %v", err)
	}
}

// A failed write changes nothing: the old list stays, in memory and on
// disk.
func TestEpochFileWriteFailure(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem)
	f := openEpochs(t, efs)
	must(t, f.Record(Epoch{1, 0}, 0))
	efs.AddRule(errorfs.Rule{Op: errorfs.OpSync, Path: "epoch"})
	if err := f.Record(Epoch{2, 100}, 100); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("record with a failing sync: %v", err)
	}
	want := []Epoch{{1, 0}}
	if got := f.Entries(); !slices.Equal(got, want) {
		t.Fatalf("in memory: %v", got)
	}
	if got := openEpochs(t, mem.CrashClone(rand.New(rand.NewSource(3)))).Entries(); !slices.Equal(got, want) {
		t.Fatalf("on disk: %v", got)
	}
	must(t, f.Record(Epoch{2, 100}, 100)) // the rule fired once
}
