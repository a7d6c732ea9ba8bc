package consumequeue

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/samsamq/samsa/storage/vfs"
)

// DefaultEntriesPerFile is RocketMQ's mapedFileSizeConsumeQueue in entries:
// 300,000 entries of 20 bytes, a 6,000,000-byte file.
const DefaultEntriesPerFile = 300_000

// MaxEntriesPerFile bounds EntriesPerFile so a file stays under 2 GiB.
const MaxEntriesPerFile = (1 << 31) / EntrySize

// Options configure a Table.
type Options struct {
	// FS is the file system every byte goes through. Default vfs.Default
	// (the OS).
	FS vfs.FS
	// Dir is the root of the table, e.g. <store>/consumequeue; a queue lives
	// in Dir/<topic>/<queueId>/. Required; created if missing.
	Dir string
	// EntriesPerFile is how many entries a file holds. Default 300,000
	// (6 MB files, RocketMQ's). Smaller files let retention free space in
	// finer steps and cost more files and more syncs at file changes; tests
	// use a handful to cross file boundaries. At most MaxEntriesPerFile.
	EntriesPerFile int
	// Logger receives recovery and retention notes. Default slog.Default().
	Logger *slog.Logger
	// MaxOpenFiles caps the queue files that keep a descriptor open: a
	// file is opened on first use and the least recently used idle one is
	// closed (synced first if written) when more would be open
	// (handles.go). Default DefaultMaxOpenFiles. Higher costs descriptors;
	// lower costs an open (and, for a written file, a sync) each time a
	// queue outside the hot set is touched. Files in use at the moment
	// may briefly exceed it.
	MaxOpenFiles int
}

// DefaultMaxOpenFiles is Options.MaxOpenFiles's default.
const DefaultMaxOpenFiles = 1024

// EnsureDefaults fills in zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.EntriesPerFile == 0 {
		o.EntriesPerFile = DefaultEntriesPerFile
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxOpenFiles == 0 {
		o.MaxOpenFiles = DefaultMaxOpenFiles
	}
}

// Validate reports every invalid field at once.
func (o *Options) Validate() error {
	var errs []error
	if o.FS == nil {
		errs = append(errs, errors.New("consumequeue: Options.FS is nil (call EnsureDefaults)"))
	}
	if o.Dir == "" {
		errs = append(errs, errors.New("consumequeue: Options.Dir is required"))
	}
	if o.EntriesPerFile < 1 || o.EntriesPerFile > MaxEntriesPerFile {
		errs = append(errs, fmt.Errorf("consumequeue: Options.EntriesPerFile %d out of [1, %d]", o.EntriesPerFile, MaxEntriesPerFile))
	}
	if o.Logger == nil {
		errs = append(errs, errors.New("consumequeue: Options.Logger is nil (call EnsureDefaults)"))
	}
	if o.MaxOpenFiles < 1 {
		errs = append(errs, fmt.Errorf("consumequeue: Options.MaxOpenFiles %d must be at least 1", o.MaxOpenFiles))
	}
	return errors.Join(errs...)
}

// String is a stable one-line form for result files and logs.
func (o Options) String() string {
	return fmt.Sprintf("consumequeue.Options{Dir: %q, EntriesPerFile: %d, MaxOpenFiles: %d, FS: %T}", o.Dir, o.EntriesPerFile, o.MaxOpenFiles, o.FS)
}
