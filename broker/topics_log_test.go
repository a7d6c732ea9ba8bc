package broker

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// openTopics opens a topic manager on fs as a broker start does.
func openTopics(t *testing.T, fs vfs.FS) *topicManager {
	t.Helper()
	m := newTopicManager(fs, testConfig(t, fs))
	m.compactAt = 8
	if err := m.load(); err != nil {
		t.Fatal(err)
	}
	return m
}

// Creates, updates and deletes, each acknowledged, with compactions among
// them; a crash at either level after any of them (and in the middle of
// a compaction) loses none, and topics.json after a compaction is the
// table in RocketMQ's form.
func TestTopicLogCrash(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	fs := vfs.NewMem()
	m := openTopics(t, fs)
	model := maps.Clone(m.mu.table)
	check := func(step int, img *vfs.MemFS, level string) {
		t.Helper()
		got := openTopics(t, img)
		defer func() { _ = got.closeLog() }()
		if !maps.Equal(got.mu.table, model) {
			t.Fatalf("seed %d step %d, %s: %d topics back, want %d", seed, step, level, len(got.mu.table), len(model))
		}
	}
	for step := range 120 {
		name := fmt.Sprintf("t%d", rng.Intn(40))
		switch rng.Intn(4) {
		case 0:
			if _, err := m.remove(name); err != nil {
				t.Fatal(err)
			}
			delete(model, name)
		default:
			tc := newTopicConfig(name, 1+rng.Intn(8), PermRead|PermWrite)
			if _, err := m.update(tc); err != nil {
				t.Fatal(err)
			}
			model[name] = tc
		}
		if rng.Intn(6) == 0 {
			check(step, fs.ProcessCrashClone(), "process crash")
			check(step, fs.CrashClone(rng), "power loss")
		}
		if rng.Intn(15) == 0 {
			// A compaction cut short: after the new log file, and after
			// the snapshot but before the old files go.
			if _, err := m.log.Rotate(); err != nil {
				t.Fatal(err)
			}
			check(step, fs.CrashClone(rng), "power loss after rotate")
			m.mu.RLock()
			f := topicsFile{TopicConfigTable: maps.Clone(m.mu.table), DataVersion: m.mu.version}
			m.mu.RUnlock()
			if err := m.file.save(f); err != nil {
				t.Fatal(err)
			}
			check(step, fs.CrashClone(rng), "power loss after snapshot")
		}
	}
	if err := m.save(); err != nil {
		t.Fatal(err)
	}
	b, found, err := m.file.read()
	if err != nil || !found {
		t.Fatal(found, err)
	}
	var f topicsFile
	if err := json.Unmarshal(b, &f); err != nil || !maps.Equal(f.TopicConfigTable, model) {
		t.Fatalf("topics.json after a save: %v, %d topics, want %d", err, len(f.TopicConfigTable), len(model))
	}
	if err := m.closeLog(); err != nil {
		t.Fatal(err)
	}
	logs, _ := fs.List(filepath.Dir(m.file.path))
	n := 0
	for _, l := range logs {
		if len(l) > len(topicLogBase) && l[:len(topicLogBase)] == topicLogBase {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d topic log files after a save, want 1: %v", n, logs)
	}
}

// Creates alone compact too: the log never holds more records than the
// last snapshot's topics (at least compactAt), so a restart reads at most
// about twice the table.
func TestTopicLogCompactsUnderCreates(t *testing.T) {
	fs := vfs.NewMem()
	m := openTopics(t, fs)
	for i := range 500 {
		if _, err := m.update(newTopicConfig(fmt.Sprintf("c%d", i), 1, PermRead|PermWrite)); err != nil {
			t.Fatal(err)
		}
		if r, snap := m.log.Records(), int(m.snapshotTopics.Load()); r > max(m.compactAt, snap) {
			t.Fatalf("after %d creates the log holds %d records, the snapshot %d topics", i+1, r, snap)
		}
	}
	if snap := m.snapshotTopics.Load(); snap < 250 {
		t.Fatalf("topics.json holds %d of %d topics after 500 creates", snap, m.count())
	}
	_ = m.closeLog()
	if got := openTopics(t, fs); got.count() != m.count() {
		t.Fatalf("reopened: %d topics, want %d", got.count(), m.count())
	}
}
