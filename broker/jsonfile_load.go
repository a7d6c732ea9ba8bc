package broker

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// A persisted JSON file never keeps the broker from starting (one
// UPDATE_CONSUMER_OFFSET with an empty group name once made
// consumerOffset.json unloadable, and the broker refused to start):
//
//   - A file that cannot be read or decoded as a whole (bad JSON, truncated,
//     binary, a directory in its place) is set aside: renamed to
//     <name>.bad-<UTC stamp>, logged and counted (stats
//     config_files_set_aside); its table starts empty. There is no .bak to
//     fall back on: save replaces the file atomically, so the file on disk
//     is always a whole save, and a bad one was not written by the broker.
//   - A file holding bad entries loads the good ones; each bad one is
//     logged, a copy of the original is kept as <name>.bad-<UTC stamp>
//     (counted too), and the table is marked changed so the next save
//     writes only the good entries.
//   - An empty file (a crash of some other writer, or touch) is no file.
//   - Integer keys written bare, as RocketMQ's fastjson writes them
//     ({"offsetTable":{"t@g":{0:5}}}), are read too.

// fileReport is where tolerant loads report: a logger, the clock for the
// set-aside names, and the broker's counter of files set aside.
type fileReport struct {
	log      *slog.Logger
	now      func() time.Time
	setAside *atomic.Int64 // nil: not counted
}

func (r *fileReport) logger() *slog.Logger {
	if r == nil || r.log == nil {
		return slog.Default()
	}
	return r.log
}

func (r *fileReport) stamp() string {
	now := time.Now
	if r != nil && r.now != nil {
		now = r.now
	}
	return now().UTC().Format("20060102T150405.000Z")
}

func (r *fileReport) count() {
	if r != nil && r.setAside != nil {
		r.setAside.Add(1)
	}
}

// newFileReport reports to cfg's logger and clock.
func newFileReport(cfg *Config) *fileReport {
	return &fileReport{log: cfg.Logger, now: cfg.Clock}
}

// loadTolerant reads the file and hands its bytes to decode. It never
// fails: a file that cannot be read, or that decode refuses as a whole, is
// set aside and found is false (start empty). raw is the file's bytes, for
// dropBad when decode found bad entries.
func (f jsonFile) loadTolerant(decode func([]byte) error) (raw []byte, found bool) {
	b, found, err := f.read()
	if err == nil && found && len(bytes.TrimSpace(b)) == 0 {
		f.rep.logger().Warn("broker: config file is empty; starting with an empty table", "file", f.path)
		return nil, false
	}
	if err == nil && found {
		if err = decode(b); err != nil && unquotedKey.Match(b) {
			// RocketMQ's fastjson writes integer keys bare ({0:5}); a
			// syntax error leaves nothing decoded, so decode again.
			if err2 := decode(unquotedKey.ReplaceAll(b, []byte(`$1"$2"$3`))); err2 == nil {
				err = nil
			}
		}
		if err == nil {
			return b, true
		}
	}
	if err == nil {
		return nil, false // no file
	}
	f.setAside(err)
	return nil, false
}

// setAside renames the file out of the way after a failed load.
func (f jsonFile) setAside(cause error) {
	bad := f.path + ".bad-" + f.rep.stamp()
	f.rep.count()
	if err := f.fs.Rename(f.path, bad); err != nil {
		f.rep.logger().Error("broker: config file unreadable and could not be set aside; starting with an empty table, the next save will fail until it is moved",
			"file", f.path, "err", cause, "renameErr", err)
		return
	}
	if err := f.fs.SyncDir(filepath.Dir(f.path)); err != nil {
		f.rep.logger().Warn("broker: sync dir after setting a config file aside", "file", f.path, "err", err)
	}
	f.rep.logger().Error("broker: config file unreadable; set aside, starting with an empty table",
		"file", f.path, "setAsideAs", bad, "err", cause)
}

// dropBad keeps the original bytes of a file that held bad entries (each
// named in bad) as <name>.bad-<stamp>, then writes the table the caller
// loaded without them with save; a failed save is logged (the caller's
// table stays changed, so its next save retries).
func (f jsonFile) dropBad(raw []byte, bad []string, save func() error) {
	f.keepBadCopy(raw, bad)
	if err := save(); err != nil {
		f.rep.logger().Warn("broker: config file without its bad entries not saved yet", "file", f.path, "err", err)
	}
}

// keepBadCopy keeps the original bytes of a file that held bad entries
// (each named in bad) as <name>.bad-<stamp>.
func (f jsonFile) keepBadCopy(raw []byte, bad []string) {
	copyPath := f.path + ".bad-" + f.rep.stamp()
	f.rep.count()
	for _, e := range bad {
		f.rep.logger().Error("broker: config file entry dropped", "file", f.path, "entry", e)
	}
	if err := vfs.WriteFileAtomic(f.fs, copyPath, raw); err != nil {
		f.rep.logger().Error("broker: could not keep a copy of a config file with bad entries", "file", f.path, "copy", copyPath, "err", err)
		return
	}
	f.rep.logger().Warn("broker: config file held bad entries; the rest loaded, the original kept",
		"file", f.path, "bad", len(bad), "copy", copyPath)
}

// fileReport is where the broker's config files report: its logger,
// clock and stats.
func (b *Broker) fileReport() *fileReport {
	return &fileReport{log: b.log, now: b.cfg.Clock, setAside: &b.stats.configSetAside}
}
