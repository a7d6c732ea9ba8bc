package consumequeue

import (
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// dirSyncRecorder is a file system that records the directories synced.
type dirSyncRecorder struct {
	vfs.FS
	mu     sync.Mutex
	synced []string
}

func (r *dirSyncRecorder) SyncDir(dir string) error {
	r.mu.Lock()
	r.synced = append(r.synced, dir)
	r.mu.Unlock()
	return r.FS.SyncDir(dir)
}

// TestMarkUnsyncedSyncsAdoptedNames: a process dies after creating a
// queue's next file and before syncing the queue's directory (a Flush's
// job: the crash image is taken before any). The table reopened on the image finds
// the file, and re-dispatch appends into it with no Create, so no
// directory sync; MarkUnsynced then Flush must make the entries durable
// names included: a power loss after the Flush keeps every entry. It also
// syncs the topic directory and the root, whose names a dead process may
// have left unsynced the same way (MemFS keeps MkdirAll durable at once,
// so only the syncs themselves are checked for those).
func TestMarkUnsyncedSyncsAdoptedNames(t *testing.T) {
	mem := vfs.NewMem()
	qdir := filepath.Join(crashDir, "T", "0")
	rec := &dirSyncRecorder{FS: mem}
	tb := openTable(t, rec, crashDir, 10)
	q := tb.Queue("T", 0)
	appendN(t, q, 0, 11)
	// The second file is created; its name is synced by the next Flush
	// (none yet): the process dies here.
	rec.mu.Lock()
	early := slices.Clone(rec.synced)
	rec.mu.Unlock()
	if slices.Contains(early, qdir) {
		t.Fatalf("the queue's directory was synced on the append path: %v", early)
	}
	img := mem.ProcessCrashClone()
	if err := tb.Close(); err != nil {
		t.Fatal(err)
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

// TestNewQueuesSyncDirectoriesAtFlush: creating queues syncs no directory
// on the append path (the dispatcher's); the next Flush syncs each new
// queue's directory, each topic's and the root once, deepest first, and a
// power loss after it keeps every entry.
func TestNewQueuesSyncDirectoriesAtFlush(t *testing.T) {
	mem := vfs.NewMem()
	rec := &dirSyncRecorder{FS: mem}
	tb := openTable(t, rec, crashDir, 10)
	rec.mu.Lock()
	rec.synced = nil // the table's own directory, at open
	rec.mu.Unlock()
	var want []string
	for _, topic := range []string{"A", "B"} {
		for qid := int32(0); qid < 3; qid++ {
			appendN(t, tb.Queue(topic, qid), 0, 12) // two files each
			want = append(want, filepath.Join(crashDir, topic, strconv.Itoa(int(qid))))
		}
		want = append(want, filepath.Join(crashDir, topic))
	}
	want = append(want, crashDir)
	rec.mu.Lock()
	early := slices.Clone(rec.synced)
	rec.mu.Unlock()
	if len(early) != 0 {
		t.Fatalf("appends synced directories: %v", early)
	}
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	got := slices.Clone(rec.synced)
	rec.mu.Unlock()
	if len(got) != len(want) || got[len(got)-1] != crashDir {
		t.Fatalf("Flush synced %v, want each of %v once, the root last", got, want)
	}
	for _, d := range want {
		if !slices.Contains(got, d) {
			t.Errorf("Flush did not sync %s (synced %v)", d, got)
		}
	}
	power := mem.CrashClone(nil)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb = openTable(t, power, crashDir, 10)
	defer tb.Close()
	for _, topic := range []string{"A", "B"} {
		for qid := int32(0); qid < 3; qid++ {
			q := tb.Queue(topic, qid)
			if got := q.MaxOffset(); got != 12 {
				t.Fatalf("%s/%d after a power loss: max %d, want 12", topic, qid, got)
			}
			checkRange(t, q, 0, 12)
		}
	}
}
