package index

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/samsamq/samsa/storage/vfs"
)

// Defaults are RocketMQ's (maxHashSlotNum, maxIndexNum): a file of
// 64 + 20,000,000 + 400,000,000 bytes.
const (
	DefaultMaxHashSlots = 5_000_000
	DefaultMaxEntries   = 20_000_000
	// MaxMaxEntries keeps a file's entry numbers in 31 bits.
	MaxMaxEntries = 1<<31 - 1
)

// Options configure an Index.
type Options struct {
	// FS is the file system every byte goes through. Default vfs.Default.
	FS vfs.FS
	// Dir holds the index files and its checkpoint. Required; created if
	// missing.
	Dir string
	// MaxHashSlots is the slots per file (RocketMQ's maxHashSlotNum).
	// Default 5,000,000. More slots make chains shorter (a lookup reads
	// about MaxEntries/MaxHashSlots entries a file) and cost 4 bytes each,
	// on disk and in memory for the active file.
	MaxHashSlots int
	// MaxEntries is the entries per file (RocketMQ's maxIndexNum).
	// Default 20,000,000. A file holds one entry per key; smaller files let
	// retention free space sooner and cost more files to search.
	MaxEntries int
	// Logger receives recovery notes. Default slog.Default().
	Logger *slog.Logger
}

// EnsureDefaults fills in zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.MaxHashSlots == 0 {
		o.MaxHashSlots = DefaultMaxHashSlots
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports every invalid field at once.
func (o *Options) Validate() error {
	var errs []error
	if o.FS == nil {
		errs = append(errs, errors.New("index: Options.FS is nil (call EnsureDefaults)"))
	}
	if o.Dir == "" {
		errs = append(errs, errors.New("index: Options.Dir is required"))
	}
	if o.MaxHashSlots < 1 || o.MaxHashSlots > 1<<30 {
		errs = append(errs, fmt.Errorf("index: Options.MaxHashSlots %d out of [1, %d]", o.MaxHashSlots, 1<<30))
	}
	if o.MaxEntries < 1 || o.MaxEntries > MaxMaxEntries {
		errs = append(errs, fmt.Errorf("index: Options.MaxEntries %d out of [1, %d]", o.MaxEntries, MaxMaxEntries))
	}
	if o.Logger == nil {
		errs = append(errs, errors.New("index: Options.Logger is nil (call EnsureDefaults)"))
	}
	return errors.Join(errs...)
}

// String is a stable one-line form for result files and logs.
func (o Options) String() string {
	return fmt.Sprintf("index.Options{Dir: %q, MaxHashSlots: %d, MaxEntries: %d, FS: %T}", o.Dir, o.MaxHashSlots, o.MaxEntries, o.FS)
}
