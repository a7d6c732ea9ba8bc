package consumequeue

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// dirSyncRecorder is a file system that calls before(dir) ahead of every
// SyncDir and records the directories synced.
type dirSyncRecorder struct {
	vfs.FS
	mu     sync.Mutex
	before func(dir string)
	synced []string
}

func (r *dirSyncRecorder) SyncDir(dir string) error {
	r.mu.Lock()
	if r.before != nil {
		r.before(dir)
	}
	r.synced = append(r.synced, dir)
	r.mu.Unlock()
	return r.FS.SyncDir(dir)
}

// TestMarkUnsyncedSyncsAdoptedNames: a process dies after creating a
// queue's next file and before syncing the queue's directory (the crash
// image is taken at that SyncDir). The table reopened on the image finds
// the file, and re-dispatch appends into it with no Create, so no
// directory sync; MarkUnsynced then Flush must make the entries durable
// names included: a power loss after the Flush keeps every entry. It also
// syncs the topic directory and the root, whose names a dead process may
// have left unsynced the same way (MemFS keeps MkdirAll durable at once,
// so only the syncs themselves are checked for those).
func TestMarkUnsyncedSyncsAdoptedNames(t *testing.T) {
	mem := vfs.NewMem()
	qdir := filepath.Join(crashDir, "T", "0")
	var img *vfs.MemFS
	rec := &dirSyncRecorder{FS: mem}
	rec.before = func(dir string) {
		// The second sync of the queue's directory follows the Create of
		// its second file.
		if dir == qdir && img == nil && slices.Contains(rec.synced, qdir) {
			img = mem.ProcessCrashClone()
		}
	}
	tb := openTable(t, rec, crashDir, 10)
	q := tb.Queue("T", 0)
	appendN(t, q, 0, 11)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if img == nil {
		t.Fatal("no crash image: the second file's directory sync never came")
	}

	rec = &dirSyncRecorder{FS: img}
	tb = openTable(t, rec, crashDir, 10)
	q = tb.Queue("T", 0)
	if got := q.MaxOffset(); got != 10 {
		t.Fatalf("after the process crash: max %d, want 10 (the second file is there, empty)", got)
	}
	appendN(t, q, 10, 13) // re-dispatch into the adopted file
	rec.mu.Lock()
	rec.synced = nil
	rec.mu.Unlock()
	tb.MarkUnsynced()
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{qdir, filepath.Join(crashDir, "T"), crashDir} {
		if !slices.Contains(rec.synced, d) {
			t.Errorf("Flush after MarkUnsynced synced %v, not %s", rec.synced, d)
		}
	}
	before := len(rec.synced)
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if again := rec.synced[before:]; len(again) > 0 {
		t.Errorf("a second Flush synced directories again: %v", again)
	}
	power := img.CrashClone(nil) // only what was synced
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}

	tb = openTable(t, power, crashDir, 10)
	defer tb.Close()
	q = tb.Queue("T", 0)
	if got := q.MaxOffset(); got != 13 {
		t.Fatalf("after a power loss: max %d, want 13 (every entry flushed)", got)
	}
	checkRange(t, q, 0, 13)
}
