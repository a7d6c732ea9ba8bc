package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/samsamq/samsa/storage/vfs"
)

var vfsOpts = vfs.OpenOptions{}

// readFile returns the whole named file.
func readFile(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, err
	}
	return b[:n], nil
}

// exists reports whether the named file exists.
func exists(fsys vfs.FS, name string) (bool, error) {
	_, err := fsys.Stat(name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

func (s *Store) abortPath() string { return filepath.Join(s.dir, "abort") }

// createAbortMarker makes Dir/abort durable: while it exists the store is
// open or stopped uncleanly, and Open scans.
func (s *Store) createAbortMarker() error {
	p := s.abortPath()
	f, err := s.fs.Create(p, vfsOpts)
	if err != nil {
		return writeError("create "+p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: close %s: %w", p, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", s.dir, err)
	}
	return nil
}

// removeAbortMarker removes Dir/abort durably (clean Close, after the
// clean checkpoint).
func (s *Store) removeAbortMarker() error {
	p := s.abortPath()
	if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: remove %s: %w", p, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", s.dir, err)
	}
	return nil
}
