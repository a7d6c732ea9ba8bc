package broker

import (
	"github.com/samsamq/samsa/broker/internal/jsonfile"
	"github.com/samsamq/samsa/storage/vfs"
)

// jsonFile is one of the broker's config files, written atomically and
// loaded tolerantly (package internal/jsonfile says how).
type jsonFile struct {
	fs   vfs.FS
	path string
	rep  *fileReport // where loadTolerant reports (jsonfile_load.go); nil: slog.Default, uncounted
}

func (f jsonFile) file() jsonfile.File {
	return jsonfile.File{FS: f.fs, Path: f.path, Report: f.rep.report()}
}

// save writes v as indented JSON: temp file, fsync, rename, fsync the
// directory.
func (f jsonFile) save(v any) error { return f.file().Save(v) }

// saveBytes writes JSON the caller encoded, as save does.
func (f jsonFile) saveBytes(b []byte) error { return f.file().SaveBytes(b) }

// read returns the file's bytes; found is false when there is no file.
func (f jsonFile) read() (b []byte, found bool, err error) { return f.file().Read() }
