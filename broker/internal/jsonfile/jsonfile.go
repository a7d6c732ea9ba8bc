// Package jsonfile is how the broker keeps its config files (topics.json,
// consumerOffset.json, delayOffset.json, ...): one JSON document a file,
// written atomically through storage/vfs, and loaded so that no file ever
// keeps the broker from starting.
//
// Save writes the bytes to name.tmp, syncs it, renames it over name and
// syncs the directory, so a crash leaves either the old file or the new
// one, never a torn mix. A save that fails before the rename (a full disk)
// leaves the old file as it was and removes the temp file.
//
// LoadTolerant never fails:
//
//   - A file that cannot be read or decoded as a whole (bad JSON, truncated,
//     binary, a directory in its place) is set aside: renamed to
//     <name>.bad-<UTC stamp>, logged and counted (stats
//     config_files_set_aside); its table starts empty. There is no .bak to
//     fall back on: Save replaces the file atomically, so the file on disk
//     is always a whole save, and a bad one was not written by the broker.
//     (One UPDATE_CONSUMER_OFFSET with an empty group name once made
//     consumerOffset.json unloadable, and the broker refused to start.)
//   - A file holding bad entries loads the good ones (the caller's decode
//     tells them apart); DropBad logs each bad one, keeps a copy of the
//     original as <name>.bad-<UTC stamp> (counted too) and saves the good
//     ones in the file's place.
//   - An empty file (a crash of some other writer, or touch) is no file.
//   - Integer keys written bare, as RocketMQ's fastjson writes them
//     ({"offsetTable":{"t@g":{0:5}}}), are read too (QuoteKeys).
//
// A File is a value: safe to copy, and as safe for concurrent use as the
// callers' saves are serialised (two saves of one file must not overlap).
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// File is one JSON file.
type File struct {
	FS   vfs.FS
	Path string
	// Report is where LoadTolerant and DropBad report; nil: slog.Default,
	// uncounted.
	Report *Report
}

// Report is where tolerant loads report: a logger, the clock for the
// set-aside names, and the broker's counter of files set aside.
type Report struct {
	Log      *slog.Logger
	Now      func() time.Time
	SetAside *atomic.Int64 // nil: not counted
}

func (r *Report) logger() *slog.Logger {
	if r == nil || r.Log == nil {
		return slog.Default()
	}
	return r.Log
}

func (r *Report) stamp() string {
	now := time.Now
	if r != nil && r.Now != nil {
		now = r.Now
	}
	return now().UTC().Format("20060102T150405.000Z")
}

func (r *Report) count() {
	if r != nil && r.SetAside != nil {
		r.SetAside.Add(1)
	}
}

// unquotedKey matches an integer object key written without quotes.
var unquotedKey = regexp.MustCompile(`([{,]\s*)(-?\d+)(\s*:)`)

// HasBareKeys reports whether b holds an integer object key written
// without quotes.
func HasBareKeys(b []byte) bool { return unquotedKey.Match(b) }

// QuoteKeys returns b with its bare integer object keys quoted ({0:5}
// becomes {"0":5}), as encoding/json wants them.
func QuoteKeys(b []byte) []byte { return unquotedKey.ReplaceAll(b, []byte(`$1"$2"$3`)) }

// Save writes v as indented JSON.
func (f File) Save(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("broker: encode %s: %w", f.Path, err)
	}
	return f.SaveBytes(b)
}

// SaveBytes is Save of JSON the caller encoded.
func (f File) SaveBytes(b []byte) error {
	dir := filepath.Dir(f.Path)
	if err := f.FS.MkdirAll(dir); err != nil {
		return fmt.Errorf("broker: mkdir %s: %w", dir, err)
	}
	tmp := f.Path + ".tmp"
	if err := f.writeTemp(tmp, b); err != nil {
		if rerr := f.FS.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("broker: remove %s: %w", tmp, rerr))
		}
		return err
	}
	if err := f.FS.Rename(tmp, f.Path); err != nil {
		return fmt.Errorf("broker: rename %s: %w", tmp, err)
	}
	if err := f.FS.SyncDir(dir); err != nil {
		return fmt.Errorf("broker: sync dir %s: %w", dir, err)
	}
	return nil
}

// writeTemp writes b to the file tmp (created or truncated) and syncs it.
func (f File) writeTemp(tmp string, b []byte) error {
	w, err := f.FS.Create(tmp, vfs.OpenOptions{})
	if err != nil {
		return fmt.Errorf("broker: create %s: %w", tmp, err)
	}
	if _, err := w.WriteAt(b, 0); err != nil {
		_ = w.Close() // the caller removes the temp file
		return fmt.Errorf("broker: write %s: %w", tmp, err)
	}
	if err := w.Sync(); err != nil {
		_ = w.Close() // the caller removes the temp file
		return fmt.Errorf("broker: sync %s: %w", tmp, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("broker: close %s: %w", tmp, err)
	}
	return nil
}

// Read returns the file's bytes; found is false when there is no file.
func (f File) Read() (b []byte, found bool, err error) {
	r, err := f.FS.Open(f.Path, vfs.OpenOptions{ReadOnly: true})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = r.Close() }() // read-only
	n, err := r.Size()
	if err != nil {
		return nil, false, err
	}
	if n == 0 {
		// Empty, or not a file: a directory may report size 0, and only
		// a read tells (EISDIR) where an empty file gives EOF.
		if _, err := r.ReadAt(make([]byte, 1), 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, fmt.Errorf("broker: read %s: %w", f.Path, err)
		}
		return nil, true, nil
	}
	b = make([]byte, n)
	if m, err := r.ReadAt(b, 0); m < len(b) {
		return nil, false, fmt.Errorf("broker: read %s: %w", f.Path, err)
	}
	return b, true, nil
}

// LoadTolerant reads the file and hands its bytes to decode. It never
// fails: a file that cannot be read, or that decode refuses as a whole, is
// set aside and found is false (start empty). raw is the file's bytes, for
// DropBad when decode found bad entries.
func (f File) LoadTolerant(decode func([]byte) error) (raw []byte, found bool) {
	b, found, err := f.Read()
	if err == nil && found && len(bytes.TrimSpace(b)) == 0 {
		f.Report.logger().Warn("broker: config file is empty; starting with an empty table", "file", f.Path)
		return nil, false
	}
	if err == nil && found {
		if err = decode(b); err != nil && HasBareKeys(b) {
			// RocketMQ's fastjson writes integer keys bare ({0:5}); a
			// syntax error leaves nothing decoded, so decode again.
			if err2 := decode(QuoteKeys(b)); err2 == nil {
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
func (f File) setAside(cause error) {
	bad := f.Path + ".bad-" + f.Report.stamp()
	f.Report.count()
	if err := f.FS.Rename(f.Path, bad); err != nil {
		f.Report.logger().Error("broker: config file unreadable and could not be set aside; starting with an empty table, the next save will fail until it is moved",
			"file", f.Path, "err", cause, "renameErr", err)
		return
	}
	if err := f.FS.SyncDir(filepath.Dir(f.Path)); err != nil {
		f.Report.logger().Warn("broker: sync dir after setting a config file aside", "file", f.Path, "err", err)
	}
	f.Report.logger().Error("broker: config file unreadable; set aside, starting with an empty table",
		"file", f.Path, "setAsideAs", bad, "err", cause)
}

// DropBad keeps the original bytes of a file that held bad entries (each
// named in bad) as <name>.bad-<stamp>, then writes the table the caller
// loaded without them with save; a failed save is logged (the caller's
// table stays changed, so its next save retries).
func (f File) DropBad(raw []byte, bad []string, save func() error) {
	f.keepBadCopy(raw, bad)
	if err := save(); err != nil {
		f.Report.logger().Warn("broker: config file without its bad entries not saved yet", "file", f.Path, "err", err)
	}
}

// keepBadCopy keeps the original bytes of a file that held bad entries
// (each named in bad) as <name>.bad-<stamp>.
func (f File) keepBadCopy(raw []byte, bad []string) {
	copyPath := f.Path + ".bad-" + f.Report.stamp()
	f.Report.count()
	for _, e := range bad {
		f.Report.logger().Error("broker: config file entry dropped", "file", f.Path, "entry", e)
	}
	if err := vfs.WriteFileAtomic(f.FS, copyPath, raw); err != nil {
		f.Report.logger().Error("broker: could not keep a copy of a config file with bad entries", "file", f.Path, "copy", copyPath, "err", err)
		return
	}
	f.Report.logger().Warn("broker: config file held bad entries; the rest loaded, the original kept",
		"file", f.Path, "bad", len(bad), "copy", copyPath)
}
