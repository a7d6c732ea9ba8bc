package broker

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// configFileCase is one persisted JSON file: content with good entries and
// one bad one, how to load it, and what a loaded table holds.
type configFileCase struct {
	name string // file name under the config dir
	good string // a whole good file
	bad  string // good entries plus one bad one
	// load loads the file with a fresh manager and reports whether the
	// good entries (good=true) or none of them (good=false) are there.
	load func(t *testing.T, fs vfs.FS, rep *fileReport) (hasGood, hasBad bool)
}

func configFileCases() []configFileCase {
	return []configFileCase{
		{
			name: "topics.json",
			good: `{"topicConfigTable":{"orders":{"topicName":"orders","readQueueNums":4,"writeQueueNums":4,"perm":6}},"dataVersion":{"timestamp":1,"counter":3}}`,
			bad:  `{"topicConfigTable":{"orders":{"topicName":"orders","readQueueNums":4,"writeQueueNums":4,"perm":6},"bad topic":{"readQueueNums":1,"writeQueueNums":1,"perm":6}},"dataVersion":{"timestamp":1,"counter":3}}`,
			load: func(t *testing.T, fs vfs.FS, rep *fileReport) (bool, bool) {
				m := newTopicManager(fs, testConfig(t, fs))
				m.file.rep = rep
				if err := m.load(); err != nil {
					t.Fatal(err)
				}
				tc, ok := m.get("orders")
				_, bad := m.get("bad topic")
				return ok && tc.ReadQueueNums == 4, bad
			},
		},
		{
			name: "subscriptionGroup.json",
			good: `{"subscriptionGroupTable":{"g1":{"groupName":"g1","consumeEnable":true,"retryQueueNums":1,"retryMaxTimes":16}},"dataVersion":{"timestamp":1,"counter":1}}`,
			bad:  `{"subscriptionGroupTable":{"g1":{"groupName":"g1","consumeEnable":true,"retryQueueNums":1,"retryMaxTimes":16},"":{"groupName":""},"g2":{"retryQueueNums":"many"}},"dataVersion":{"timestamp":1,"counter":1}}`,
			load: func(t *testing.T, fs vfs.FS, rep *fileReport) (bool, bool) {
				m := newGroupManager(fs, testConfig(t, fs))
				m.file.rep = rep
				if err := m.load(); err != nil {
					t.Fatal(err)
				}
				tbl, _ := m.snapshot()
				_, ok := tbl["g1"]
				_, bad1 := tbl[""]
				_, bad2 := tbl["g2"]
				return ok && tbl["g1"].RetryMaxTimes == 16, bad1 || bad2
			},
		},
	}
}

// badCopies returns the set-aside files of name in the config dir.
func badCopies(t *testing.T, fs vfs.FS, dir, name string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, name+".bad-") {
			out = append(out, n)
		}
	}
	return out
}

// writeConfigFile writes a config file, making its directory.
func writeConfigFile(fs vfs.FS, path string, b []byte) error {
	if err := fs.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	return vfs.WriteFileAtomic(fs, path, b)
}

func readConfig(t *testing.T, fs vfs.FS, path string) string {
	t.Helper()
	b, found, err := jsonFile{fs: fs, path: path}.read()
	if err != nil || !found {
		t.Fatalf("read %s: found %v, %v", path, found, err)
	}
	return string(b)
}

// Every persisted JSON file loads what it can and never keeps the broker
// from starting: a bad entry is dropped (the original kept), a wholly bad
// file is set aside, an empty file is no file.
func TestConfigFilesNeverLockOut(t *testing.T) {
	for _, c := range configFileCases() {
		t.Run(c.name, func(t *testing.T) {
			whole := []struct {
				name    string
				content string
				dir     bool
			}{
				{"garbage", "{nope", false},
				{"binary", "\x00\x01\x02\xff\xfe", false},
				{"truncated", c.good[:len(c.good)/2], false},
				{"directory", "", true},
			}
			for _, w := range whole {
				t.Run(w.name, func(t *testing.T) {
					fs := vfs.NewMem()
					cfg := testConfig(t, fs)
					path := cfg.ConfigDir() + "/" + c.name
					if w.dir {
						if err := fs.MkdirAll(path); err != nil {
							t.Fatal(err)
						}
					} else if err := writeConfigFile(fs, path, []byte(w.content)); err != nil {
						t.Fatal(err)
					}
					var n atomic.Int64
					rep := &fileReport{log: quietLogger(), setAside: &n}
					if good, bad := c.load(t, fs, rep); good || bad {
						t.Fatalf("loaded entries from a bad file: good %v bad %v", good, bad)
					}
					if n.Load() != 1 {
						t.Fatalf("set aside counted %d", n.Load())
					}
					copies := badCopies(t, fs, cfg.ConfigDir(), c.name)
					if len(copies) != 1 {
						t.Fatalf("set-aside files %v", copies)
					}
					if _, err := fs.Stat(path); err == nil && !w.dir {
						t.Fatal("bad file still in place")
					}
					if !w.dir && readConfig(t, fs, cfg.ConfigDir()+"/"+copies[0]) != w.content {
						t.Fatal("set-aside copy differs from the original")
					}
					// The table saves again in the file's place.
					if err := writeConfigFile(fs, path, []byte(c.good)); err != nil {
						t.Fatalf("writing the file again: %v", err)
					}
				})
			}
			t.Run("bad entry", func(t *testing.T) {
				fs := vfs.NewMem()
				cfg := testConfig(t, fs)
				path := cfg.ConfigDir() + "/" + c.name
				if err := writeConfigFile(fs, path, []byte(c.bad)); err != nil {
					t.Fatal(err)
				}
				var n atomic.Int64
				rep := &fileReport{log: quietLogger(), setAside: &n}
				if good, bad := c.load(t, fs, rep); !good || bad {
					t.Fatalf("file with a bad entry: good entries %v, bad entry %v", good, bad)
				}
				copies := badCopies(t, fs, cfg.ConfigDir(), c.name)
				if len(copies) != 1 || n.Load() != 1 {
					t.Fatalf("copies %v, counted %d", copies, n.Load())
				}
				if readConfig(t, fs, cfg.ConfigDir()+"/"+copies[0]) != c.bad {
					t.Fatal("kept copy differs from the original")
				}
				// The file was rewritten with the good entries only: a
				// second load finds no bad entry and keeps no new copy.
				if !json.Valid([]byte(readConfig(t, fs, path))) {
					t.Fatal("rewritten file is not JSON")
				}
				n.Store(0)
				if good, bad := c.load(t, fs, rep); !good || bad || n.Load() != 0 {
					t.Fatalf("reload: good %v bad %v set aside %d", good, bad, n.Load())
				}
			})
			t.Run("empty", func(t *testing.T) {
				fs := vfs.NewMem()
				cfg := testConfig(t, fs)
				if err := writeConfigFile(fs, cfg.ConfigDir()+"/"+c.name, nil); err != nil {
					t.Fatal(err)
				}
				var n atomic.Int64
				if good, bad := c.load(t, fs, &fileReport{log: quietLogger(), setAside: &n}); good || bad || n.Load() != 0 {
					t.Fatalf("empty file: good %v bad %v set aside %d", good, bad, n.Load())
				}
			})
			t.Run("good", func(t *testing.T) {
				fs := vfs.NewMem()
				cfg := testConfig(t, fs)
				if err := writeConfigFile(fs, cfg.ConfigDir()+"/"+c.name, []byte(c.good)); err != nil {
					t.Fatal(err)
				}
				var n atomic.Int64
				if good, _ := c.load(t, fs, &fileReport{log: quietLogger(), setAside: &n}); !good || n.Load() != 0 {
					t.Fatalf("good file: loaded %v, set aside %d", good, n.Load())
				}
			})
		})
	}
}
