package storage

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// reopenLogged opens a store with opts on fsys (a crash's image), its log
// kept for the test.
func reopenLogged(t *testing.T, opts Options, fsys vfs.FS) (*Store, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	opts.FS = fsys
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	return mustOpen(t, opts), logs
}

// stagingBackends are the backends that stage appends by default under
// async and none flush.
var stagingBackends = []string{"pwrite", "odirect", "uring"}

// forStaging runs fn as a subtest for each staging backend.
func forStaging(t *testing.T, fn func(t *testing.T, be string)) {
	for _, be := range stagingBackends {
		t.Run("backend="+be, func(t *testing.T) { fn(t, be) })
	}
}

// stageOptions: be, async flush with no flush but by hand (staged by
// default).
func stageOptions(t testing.TB, mem *vfs.MemFS, be string) Options {
	opts := testOptions(mem, be, FlushAsync)
	opts.SegmentBackend = testBackend(t, be)
	opts.Flush.Interval = time.Hour
	return opts
}

// TestStageSurvivesProcessCrash: a staged store acknowledges appends
// whose bytes are only in its stage (the segment file lacks them); after a
// process crash Open replays the stage and every acknowledged record is
// there, across segment rolls.
func TestStageSurvivesProcessCrash(t *testing.T) {
	forStaging(t, func(t *testing.T, be string) {
		mem := vfs.NewMem()
		opts := stageOptions(t, mem, be)
		s := mustOpen(t, opts)
		if !s.staged || !s.ho.inAppend {
			t.Fatal("the store does not stage")
		}
		appendN(t, s, "S", 0, 60, 200) // 8 KiB segments: a few rolls
		waitDispatched(t, s)
		if s.HandedOffset() != s.WrittenOffset() {
			t.Fatalf("handed %d, written %d: a staged append is in the kernel once written", s.HandedOffset(), s.WrittenOffset())
		}
		names, err := mem.List(filepath.Join(opts.Dir, stageDirName))
		if err != nil || len(names) != 1 {
			t.Fatalf("stages %v (%v), want the active segment's", names, err)
		}
		img := mem.ProcessCrashClone() // nothing appends meanwhile
		s.Close()

		s2, logs := reopenLogged(t, opts, img)
		defer s2.Close()
		if got := s2.MaxQueueOffset("S", 0); got != 60 {
			t.Fatalf("queue ends at %d after the crash, want 60\n%s", got, logs.String())
		}
		res, err := s2.GetMessages("S", 0, 0, 60, 0, nil)
		if err != nil || len(res.Records) != 60 {
			t.Fatalf("%d records readable, %v", len(res.Records), err)
		}
		if !strings.Contains(logs.String(), "replayed a stage") {
			t.Fatalf("no replay logged:\n%s", logs.String())
		}
		appendN(t, s2, "S", 0, 5, 200) // and it goes on
		waitDispatched(t, s2)
		if got := s2.MaxQueueOffset("S", 0); got != 65 {
			t.Fatalf("queue ends at %d, want 65", got)
		}
	})
}

// TestStageDroppedAfterPowerLoss: a stage is never synced, so after a
// power loss (a new boot) Open drops it and recovery finds what the
// segment files had synced.
func TestStageDroppedAfterPowerLoss(t *testing.T) {
	forStaging(t, func(t *testing.T, be string) {
		mem := vfs.NewMem()
		opts := stageOptions(t, mem, be)
		s := mustOpen(t, opts)
		appendN(t, s, "P", 0, 5, 200)
		if err := s.flushTo(s.WrittenOffset()); err != nil { // five durable
			t.Fatal(err)
		}
		appendN(t, s, "P", 0, 7, 200) // in the stage only
		waitDispatched(t, s)
		// The stage's name and bytes survive (as the kernel may have written
		// them back), so only its boot tells it from a process crash's.
		stage := filepath.Join(opts.Dir, stageDirName, "00000000000000000000")
		f, err := mem.Open(stage, vfs.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := mem.SyncDir(filepath.Dir(stage)); err != nil {
			t.Fatal(err)
		}
		img := mem.CrashClone(nil)
		s.Close()

		s2, logs := reopenLogged(t, opts, img)
		defer s2.Close()
		if got := s2.MaxQueueOffset("P", 0); got != 5 {
			t.Fatalf("queue ends at %d after the power loss, want 5", got)
		}
		if !strings.Contains(logs.String(), "dropped a stage") || !strings.Contains(logs.String(), "another boot") {
			t.Fatalf("the dropped stage is not logged:\n%s", logs.String())
		}
	})
}

// TestStageCleanClose: Close writes every stage out and removes it; the
// next Open finds a clean store.
func TestStageCleanClose(t *testing.T) {
	forStaging(t, func(t *testing.T, be string) {
		mem := vfs.NewMem()
		opts := stageOptions(t, mem, be)
		s := mustOpen(t, opts)
		appendN(t, s, "C", 0, 30, 200)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if names, _ := mem.List(filepath.Join(opts.Dir, stageDirName)); len(names) != 0 {
			t.Fatalf("Close left stages %v", names)
		}
		s2 := mustOpen(t, opts)
		defer s2.Close()
		if got := s2.MaxQueueOffset("C", 0); got != 30 {
			t.Fatalf("queue ends at %d, want 30", got)
		}
	})
}

// TestStageWhere: stages are the default of pwrite, odirect and uring with
// async and none flush; sync flush, AckBuffered, NoStage, mmap and a file
// system that names no boot do without (appends are then handed over by
// write calls), and the durability line says which.
func TestStageWhere(t *testing.T) {
	for _, c := range []struct {
		be      string
		policy  FlushPolicy
		ack, no bool
		fs      vfs.FS
		want    bool
	}{
		{"pwrite", FlushAsync, false, false, vfs.NewMem(), true},
		{"pwrite", FlushNone, false, false, vfs.NewMem(), true},
		{"pwrite", FlushSync, false, false, vfs.NewMem(), false},
		{"pwrite", FlushAsync, true, false, vfs.NewMem(), false},
		{"pwrite", FlushAsync, false, true, vfs.NewMem(), false},
		{"odirect", FlushAsync, false, false, vfs.NewMem(), true},
		{"uring", FlushNone, false, false, vfs.NewMem(), true},
		{"uring", FlushSync, false, false, vfs.NewMem(), false},
		{"odirect", FlushAsync, true, false, vfs.NewMem(), false},
		{"odirect", FlushAsync, false, true, vfs.NewMem(), false},
		{"mmap", FlushAsync, false, false, vfs.NewMem(), false},
		{"pwrite", FlushAsync, false, false, noBootFS{vfs.NewMem()}, false},
	} {
		opts := testOptions(c.fs, c.be, c.policy)
		opts.SegmentBackend = testBackend(t, c.be)
		opts.AckBuffered, opts.NoStage = c.ack, c.no
		s := mustOpen(t, opts)
		note := opts.DurabilityNote()
		if s.staged != c.want || opts.Stages() != c.want || strings.Contains(note, "via a stage") != c.want {
			t.Errorf("%s/%s ack-buffered %t no-stage %t %T: staged %t, want %t (%s)", c.be, c.policy, c.ack, c.no, c.fs, s.staged, c.want, note)
		}
		appendN(t, s, "N", 0, 3, 200)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// noBootFS hides its MemFS's BootID.
type noBootFS struct{ *vfs.MemFS }

func (noBootFS) BootID() {} // not a vfs.Booter

// TestStageVerifyAndRepair: store verify notes the stages a crash left;
// store repair replays them before it looks for a cut, so it cuts nothing
// the kernel held.
func TestStageVerifyAndRepair(t *testing.T) {
	forStaging(t, func(t *testing.T, be string) {
		mem := vfs.NewMem()
		opts := stageOptions(t, mem, be)
		s := mustOpen(t, opts)
		appendN(t, s, "R", 0, 10, 200)
		waitDispatched(t, s)
		img := mem.ProcessCrashClone()
		s.Close()

		vr, err := Verify(VerifyOptions{FS: img, Dir: opts.Dir, SegmentSize: opts.SegmentSize})
		if err != nil {
			t.Fatal(err)
		}
		noted := false
		for _, p := range vr.Problems {
			noted = noted || strings.Contains(p.What, "stage files a crash left")
		}
		if !noted {
			t.Fatalf("verify does not note the stage: %+v", vr.Problems)
		}
		rr, err := Repair(RepairOptions{FS: img, Dir: opts.Dir, SegmentSize: opts.SegmentSize, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(rr.Actions, "\n"), "replayed 1 stage") || len(rr.Lost.Files) != 0 {
			t.Fatalf("repair: %+v", rr)
		}
		opts.FS = img
		s2 := mustOpen(t, opts)
		defer s2.Close()
		if got := s2.MaxQueueOffset("R", 0); got != 10 {
			t.Fatalf("queue ends at %d after repair, want 10", got)
		}
	})
}
