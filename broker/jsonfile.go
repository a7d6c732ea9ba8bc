package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/samsamq/samsa/storage/vfs"
)

// jsonFile is one JSON file written atomically: the bytes go to name.tmp,
// which is synced, renamed over name, and the directory synced, so a crash
// leaves either the old file or the new one, never a torn mix. A save that
// fails before the rename (a full disk) leaves the old file as it was and
// removes the temp file.
type jsonFile struct {
	fs   vfs.FS
	path string
	rep  *fileReport // where loadTolerant reports (jsonfile_load.go); nil: slog.Default, uncounted
}

// save writes v as indented JSON.
func (f jsonFile) save(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("broker: encode %s: %w", f.path, err)
	}
	dir := filepath.Dir(f.path)
	if err := f.fs.MkdirAll(dir); err != nil {
		return fmt.Errorf("broker: mkdir %s: %w", dir, err)
	}
	tmp := f.path + ".tmp"
	if err := f.writeTemp(tmp, b); err != nil {
		if rerr := f.fs.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("broker: remove %s: %w", tmp, rerr))
		}
		return err
	}
	if err := f.fs.Rename(tmp, f.path); err != nil {
		return fmt.Errorf("broker: rename %s: %w", tmp, err)
	}
	if err := f.fs.SyncDir(dir); err != nil {
		return fmt.Errorf("broker: sync dir %s: %w", dir, err)
	}
	return nil
}

// writeTemp writes b to the file tmp (created or truncated) and syncs it.
func (f jsonFile) writeTemp(tmp string, b []byte) error {
	w, err := f.fs.Create(tmp, vfs.OpenOptions{})
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

// read returns the file's bytes; found is false when there is no file.
func (f jsonFile) read() (b []byte, found bool, err error) {
	r, err := f.fs.Open(f.path, vfs.OpenOptions{ReadOnly: true})
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
			return nil, false, fmt.Errorf("broker: read %s: %w", f.path, err)
		}
		return nil, true, nil
	}
	b = make([]byte, n)
	if m, err := r.ReadAt(b, 0); m < len(b) {
		return nil, false, fmt.Errorf("broker: read %s: %w", f.path, err)
	}
	return b, true, nil
}
