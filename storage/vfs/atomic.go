package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// WriteFileAtomic replaces name with b durably: a temp file beside it
// (name+".tmp"), written and fsynced, renamed over name, then the
// directory fsynced. A failure before the rename leaves name as it was and
// removes the temp file (on a full disk it holds space). Errors name the
// step and wrap the cause (a full disk stays errors.Is(err, ENOSPC)).
func WriteFileAtomic(fsys FS, name string, b []byte) error {
	tmp := name + ".tmp"
	if err := writeSynced(fsys, tmp, b); err != nil {
		if rerr := fsys.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return err
	}
	if err := fsys.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
		return fmt.Errorf("sync dir %s: %w", filepath.Dir(name), err)
	}
	return nil
}

// writeSynced writes b to the file name (created or truncated) and syncs it.
func writeSynced(fsys FS, name string, b []byte) error {
	f, err := fsys.Create(name, OpenOptions{})
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	return nil
}
