package offsets

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

func TestOpenNeedsFSAndDir(t *testing.T) {
	if _, err := Open(Config{ConfigDir: configDir}); err == nil {
		t.Fatal("opened without an FS")
	}
	if _, err := Open(Config{FS: vfs.NewMem()}); err == nil {
		t.Fatal("opened without a config dir")
	}
}

// A commit made on the slave while a round runs (after it read the local
// commits) is neither overwritten by the master's table nor forgotten
// when the master takes the older one.
func TestSyncKeepsACommitMadeDuringTheRound(t *testing.T) {
	r := newRig(t)
	r.slave = true
	r.open()
	if err := r.tbl.Commit("g", "t", 0, 5); err != nil {
		t.Fatal(err)
	}
	err := r.tbl.Sync("m", map[string]map[int32]int64{"t@g": {0: 1, 1: 3}}, func(k Key, off int64) error {
		if err := r.tbl.Commit("g", "t", 0, 6); err != nil { // a consumer commits meanwhile
			t.Fatal(err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := r.tbl.Query("g", "t", 0); off != 6 {
		t.Fatalf("the master's table overwrote a commit made during the round: %d", off)
	}
	if local := r.tbl.Local(); len(local) != 1 || local[Key{"t", "g", 0}] != 6 {
		t.Fatalf("local after the round: %v", local)
	}
	if off, _ := r.tbl.Query("g", "t", 1); off != 3 {
		t.Fatalf("the master's offset not adopted: %d", off)
	}
}

// A group whose run began within a millisecond counts a message stored in
// that millisecond as younger: store times are whole milliseconds.
func TestStartBornWithinAMillisecond(t *testing.T) {
	r := newRig(t)
	r.st.set("t", 0, fakeQueue{times: []int64{1500}})
	r.born["g"] = time.UnixMilli(1500).Add(300 * time.Microsecond)
	if off, ok := r.tbl.Start("g", "t", 0, true); !ok || off != 0 {
		t.Fatalf("Start = %d %v, want 0", off, ok)
	}
	r.born["g"] = time.UnixMilli(1501)
	if _, ok := r.tbl.Start("g", "t", 0, true); ok {
		t.Fatal("a message older than the group answered 0")
	}
}

// Without a Store, Start answers committed offsets only.
func TestStartWithoutStore(t *testing.T) {
	tbl, err := Open(Config{FS: vfs.NewMem(), ConfigDir: configDir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.Start("g", "t", 0, true); ok {
		t.Fatal("found without a store")
	}
	if err := tbl.Commit("g", "t", 0, 3); err != nil {
		t.Fatal(err)
	}
	if off, ok := tbl.Start("g", "t", 0, true); !ok || off != 3 {
		t.Fatalf("Start = %d %v", off, ok)
	}
}

// The periodic save says a full disk once, and once more when a save
// succeeds again; other errors every time.
func TestSaveLogsAFullDiskOnce(t *testing.T) {
	r := newRig(t)
	full := fmt.Errorf("broker: write x: %w", syscall.ENOSPC)
	other := fmt.Errorf("broker: write x: %w", syscall.EIO)
	var got []string
	state := false
	for _, err := range []error{nil, full, full, other, full, nil, nil, other, other} {
		state = r.tbl.logSave(err, state)
		for _, l := range r.logs.take() {
			_, msg, _ := strings.Cut(l, `msg="`)
			msg, _, _ = strings.Cut(msg, `"`)
			got = append(got, msg)
		}
	}
	want := []string{
		"broker: persist consumer offsets: disk full; consumerOffset.json keeps its last saved version (not logged again until a save succeeds)",
		"broker: persist consumer offsets",
		"broker: consumer offsets saved again after a full disk",
		"broker: persist consumer offsets",
		"broker: persist consumer offsets",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Run saves what changed every SaveInterval, until stop.
func TestRunSaves(t *testing.T) {
	fs := vfs.NewMem()
	tbl, err := Open(Config{FS: fs, ConfigDir: configDir, SaveInterval: time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { tbl.Run(stop); close(done) }()
	if err := tbl.Commit("g", "t", 0, 9); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// What a power loss keeps: only a save puts it there.
		again, err := Open(Config{FS: fs.CrashClone(nil), ConfigDir: configDir, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if off, ok := again.Query("g", "t", 0); ok && off == 9 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not save the commit within 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after stop")
	}
}

// Commits, queries, removals, saves and a slave's rounds run together
// (for the race detector), and what was committed last is what is there.
func TestConcurrentUse(t *testing.T) {
	r := newRig(t)
	r.slave = true
	r.open()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			group := fmt.Sprint("g", w)
			for i := range 200 {
				if err := r.tbl.Commit(group, "t", int32(i%4), int64(i)); err != nil {
					t.Error(err)
					return
				}
				r.tbl.Query(group, "t", int32(i%4))
				if i%50 == 0 {
					r.tbl.RemoveTopic("other")
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if err := r.tbl.Save(false); err != nil {
				t.Error(err)
			}
			_ = r.tbl.All()
			_ = r.tbl.Groups()
			_ = r.tbl.TopicsOf("g1")
		}
	})
	wg.Go(func() {
		for range 20 {
			err := r.tbl.Sync("m", map[string]map[int32]int64{}, func(Key, int64) error { return errors.New("down") })
			if err != nil && err.Error() != "down" {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	for w := range 4 {
		for q := range int32(4) {
			want := int64(196 + q)
			if off, _ := r.tbl.Query(fmt.Sprint("g", w), "t", q); off != want {
				t.Fatalf("g%d/%d = %d, want %d", w, q, off, want)
			}
		}
	}
	if err := r.tbl.Save(false); err != nil {
		t.Fatal(err)
	}
	r.open()
	if n := len(r.tbl.Local()); n != 16 {
		t.Fatalf("local commits after a restart: %d, want 16", n)
	}
}
