// Package errorfs wraps a vfs.FS and injects I/O errors by rule: fail the
// n-th write, sync, allocate, create, rename or directory sync (optionally
// only on paths containing a substring) with EIO or ENOSPC, or tear the
// n-th write after k bytes (write a prefix, return EIO).
//
// Injected errors wrap both ErrInjected and the rule's errno, so
// errors.Is(err, syscall.ENOSPC) holds as it would for a real full disk.
// Every operation is counted (Count), whether or not it failed.
//
// An FS and its files are safe for concurrent use: rules are matched under
// one mutex, the wrapped operation runs outside it. A file is a vfs.Mapper
// exactly when the wrapped one is, and then also a vfs.MapSyncer (syncing
// the whole file if the wrapped one cannot sync a range).
package errorfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"syscall"

	"github.com/samsamq/samsa/storage/vfs"
)

// Op is a kind of file-system operation.
type Op int

// The operations errorfs counts and can fail.
const (
	OpWrite    Op = iota // File.WriteAt
	OpRead               // File.ReadAt
	OpSync               // File.Sync and MapSyncer.SyncMapped
	OpAllocate           // File.Allocate
	OpTruncate           // File.Truncate
	OpCreate             // FS.Create
	OpOpen               // FS.Open
	OpRemove             // FS.Remove
	OpRename             // FS.Rename (the path rule matches either name)
	OpSyncDir            // FS.SyncDir
	OpMkdir              // FS.MkdirAll
	OpMap                // Mapper.Map
	OpClose              // File.Close (the inner file is closed all the same, as close(2) does)
	numOps
)

var opNames = [numOps]string{"write", "read", "sync", "allocate", "truncate", "create", "open",
	"remove", "rename", "syncdir", "mkdir", "map", "close"}

func (o Op) String() string {
	if o < 0 || o >= numOps {
		return fmt.Sprintf("Op(%d)", int(o))
	}
	return opNames[o]
}

// ErrInjected is wrapped by every error errorfs makes up.
var ErrInjected = errors.New("errorfs: injected")

// Rule says which operation fails and how.
type Rule struct {
	// Op is the operation the rule watches.
	Op Op
	// Path, if not empty, restricts the rule to paths containing it.
	Path string
	// Nth is which matching operation fails, from 1; 0 means 1 (the first).
	Nth int
	// Sticky makes the rule fail every matching operation from the Nth on,
	// as a dead disk does; otherwise it fires once.
	Sticky bool
	// Err is the errno returned; default syscall.EIO.
	Err syscall.Errno
	// Tear, for OpWrite only, writes the first TearAt bytes of the failing
	// write (all of it if shorter) before returning the error. On a Direct
	// file, TearAt must be a multiple of vfs.DirectAlignment.
	Tear   bool
	TearAt int
}

func (r Rule) String() string {
	s := fmt.Sprintf("%s#%d", r.Op, max(r.Nth, 1))
	if r.Path != "" {
		s += fmt.Sprintf("[%s]", r.Path)
	}
	if r.Sticky {
		s += "+"
	}
	if r.Tear {
		s += fmt.Sprintf(" torn@%d", r.TearAt)
	}
	return s + " " + r.errno().Error()
}

func (r Rule) errno() syscall.Errno {
	if r.Err == 0 {
		return syscall.EIO
	}
	return r.Err
}

type ruleState struct {
	Rule
	seen  int // matching operations so far
	fired int
}

// FS injects errors into the operations of the FS it wraps.
type FS struct {
	inner vfs.FS
	mu    struct {
		sync.Mutex
		rules    []*ruleState
		counts   [numOps]int64
		injected int64
	}
}

var _ vfs.FS = (*FS)(nil)

// Wrap returns an FS over inner that applies rules.
func Wrap(inner vfs.FS, rules ...Rule) *FS {
	f := &FS{inner: inner}
	for _, r := range rules {
		f.AddRule(r)
	}
	return f
}

// AddRule adds a rule; it counts only operations from now on.
func (f *FS) AddRule(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.rules = append(f.mu.rules, &ruleState{Rule: r})
}

// ClearRules drops every rule (counters stay).
func (f *FS) ClearRules() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.rules = nil
}

// Count returns how many operations of kind op were seen.
func (f *FS) Count(op Op) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op < 0 || op >= numOps {
		return 0
	}
	return f.mu.counts[op]
}

// Injected returns how many errors were injected.
func (f *FS) Injected() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.injected
}

// check counts an operation on the given paths and returns the rule that
// fails it, if any.
func (f *FS) check(op Op, paths ...string) *Rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.counts[op]++
	var hit *Rule
	for _, r := range f.mu.rules {
		if r.Op != op || !matches(r.Path, paths) {
			continue
		}
		r.seen++
		nth := max(r.Nth, 1)
		if hit == nil && (r.seen == nth || (r.Sticky && r.seen > nth)) {
			r.fired++
			rule := r.Rule
			hit = &rule
		}
	}
	if hit != nil {
		f.mu.injected++
	}
	return hit
}

func matches(sub string, paths []string) bool {
	if sub == "" {
		return true
	}
	for _, p := range paths {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

func injected(op Op, path string, r *Rule) error {
	return &fs.PathError{Op: op.String(), Path: path, Err: fmt.Errorf("%w (%s): %w", ErrInjected, r, r.errno())}
}

func (f *FS) Create(name string, opts vfs.OpenOptions) (vfs.File, error) {
	if r := f.check(OpCreate, name); r != nil {
		return nil, injected(OpCreate, name, r)
	}
	inner, err := f.inner.Create(name, opts)
	if err != nil {
		return nil, err
	}
	return f.wrapFile(inner, name), nil
}

func (f *FS) Open(name string, opts vfs.OpenOptions) (vfs.File, error) {
	if r := f.check(OpOpen, name); r != nil {
		return nil, injected(OpOpen, name, r)
	}
	inner, err := f.inner.Open(name, opts)
	if err != nil {
		return nil, err
	}
	return f.wrapFile(inner, name), nil
}

func (f *FS) Remove(name string) error {
	if r := f.check(OpRemove, name); r != nil {
		return injected(OpRemove, name, r)
	}
	return f.inner.Remove(name)
}

func (f *FS) Rename(oldname, newname string) error {
	if r := f.check(OpRename, oldname, newname); r != nil {
		return injected(OpRename, oldname, r)
	}
	return f.inner.Rename(oldname, newname)
}

func (f *FS) MkdirAll(dir string) error {
	if r := f.check(OpMkdir, dir); r != nil {
		return injected(OpMkdir, dir, r)
	}
	return f.inner.MkdirAll(dir)
}

func (f *FS) SyncDir(dir string) error {
	if r := f.check(OpSyncDir, dir); r != nil {
		return injected(OpSyncDir, dir, r)
	}
	return f.inner.SyncDir(dir)
}

func (f *FS) List(dir string) ([]string, error)            { return f.inner.List(dir) }
func (f *FS) Stat(name string) (int64, error)              { return f.inner.Stat(name) }
func (f *FS) Lock(name string) (io.Closer, error)          { return f.inner.Lock(name) }
func (f *FS) DiskUsage(dir string) (uint64, uint64, error) { return f.inner.DiskUsage(dir) }

// BootID is the inner file system's (vfs.Booter), or an error if it names
// none.
func (f *FS) BootID() (string, error) { return vfs.InnerBootID(f.inner) }
