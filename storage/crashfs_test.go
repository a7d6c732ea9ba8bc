package storage

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/samsamq/samsa/storage/vfs"
)

// crashFS is a MemFS whose machine can crash at a chosen moment, in one of
// two modes (see vfs/memfs_crash.go for what each keeps):
//
//   - powerLoss: crash takes a CrashClone, what the disk holds after the
//     power goes (synced bytes and names, a random share of the rest);
//   - processCrash: crash takes a ProcessCrashClone, what the kernel holds
//     when the process dies (every byte, size and name handed to the OS).
//
// The moment is the n-th file operation from arm (the crash comes before
// it runs), or the test's own call of crash. Either way the clone is taken
// while no operation is in flight, and every operation after it fails with
// EIO: the old store keeps running against a dead machine (its user-space
// buffers die with it: nothing it does reaches the clone) until the test
// closes it to stop its goroutines.
//
// Operations hold mu shared; crash holds it exclusively, so an operation
// (a write, an fsync) either completed before the clone (and is in it) or
// fails: an acknowledgement can never rest on an operation the clone
// missed. Writes through a mapping are not operations: callers crash with
// the store's append lock held.
type crashFS struct {
	mem   *vfs.MemFS
	mode  crashMode
	rng   *rand.Rand // draws which unsynced bytes survive; used under mu only
	mu    sync.RWMutex
	dead  atomic.Bool
	ops   atomic.Int64 // operations so far
	armAt atomic.Int64 // crash at this operation count (0: not armed)
	clone *vfs.MemFS   // after the crash
}

// crashMode is what a crashFS's crash loses.
type crashMode int

const (
	powerLoss    crashMode = iota // the machine: unsynced bytes and names may go
	processCrash                  // the process: the kernel keeps all it was handed
)

func (m crashMode) String() string {
	if m == processCrash {
		return "process crash"
	}
	return "power loss"
}

// newCrashFS returns a crashFS over mem that loses power.
func newCrashFS(mem *vfs.MemFS, seed int64) *crashFS { return newCrashFSMode(mem, seed, powerLoss) }

// newCrashFSMode returns a crashFS over mem whose crash is mode.
func newCrashFSMode(mem *vfs.MemFS, seed int64, mode crashMode) *crashFS {
	return &crashFS{mem: mem, mode: mode, rng: rand.New(rand.NewSource(seed))}
}

var errDead = &fs.PathError{Op: "io", Path: "crashed", Err: syscall.EIO}

// crash takes the after-crash image, once.
func (c *crashFS) crash() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashLocked()
}

func (c *crashFS) crashLocked() {
	if c.dead.Load() {
		return
	}
	if c.mode == processCrash {
		c.clone = c.mem.ProcessCrashClone()
	} else {
		c.clone = c.mem.CrashClone(c.rng)
	}
	c.dead.Store(true)
}

// arm makes the n-th operation from now crash the machine (before it runs).
func (c *crashFS) arm(n int64) { c.armAt.Store(c.ops.Load() + n) }
func (c *crashFS) disarm()     { c.armAt.Store(0) }

// op runs fn as one operation unless the machine is (or now goes) dead.
func (c *crashFS) op(fn func() error) error {
	n := c.ops.Add(1)
	if a := c.armAt.Load(); a > 0 && n >= a {
		c.crash()
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.dead.Load() {
		return errDead
	}
	return fn()
}

func (c *crashFS) Create(name string, opts vfs.OpenOptions) (vfs.File, error) {
	var f vfs.File
	err := c.op(func() (err error) { f, err = c.mem.Create(name, opts); return })
	if err != nil {
		return nil, err
	}
	return &crashFile{c: c, f: f}, nil
}

func (c *crashFS) Open(name string, opts vfs.OpenOptions) (vfs.File, error) {
	var f vfs.File
	err := c.op(func() (err error) { f, err = c.mem.Open(name, opts); return })
	if err != nil {
		return nil, err
	}
	return &crashFile{c: c, f: f}, nil
}

func (c *crashFS) Remove(name string) error { return c.op(func() error { return c.mem.Remove(name) }) }
func (c *crashFS) Rename(a, b string) error { return c.op(func() error { return c.mem.Rename(a, b) }) }
func (c *crashFS) MkdirAll(d string) error  { return c.op(func() error { return c.mem.MkdirAll(d) }) }
func (c *crashFS) SyncDir(d string) error   { return c.op(func() error { return c.mem.SyncDir(d) }) }

func (c *crashFS) List(dir string) (names []string, err error) {
	err = c.op(func() (err error) { names, err = c.mem.List(dir); return })
	return
}

func (c *crashFS) Stat(name string) (n int64, err error) {
	err = c.op(func() (err error) { n, err = c.mem.Stat(name); return })
	return
}

func (c *crashFS) Lock(name string) (io.Closer, error) { return c.mem.Lock(name) }

// BootID is the machine's (vfs.Booter): a process crash keeps it, a power
// loss changes it (the clone's).
func (c *crashFS) BootID() (string, error) { return c.mem.BootID() }

func (c *crashFS) DiskUsage(dir string) (t, f uint64, err error) {
	err = c.op(func() (err error) { t, f, err = c.mem.DiskUsage(dir); return })
	return
}

// crashFile is a file of a crashFS (always a Mapper and MapSyncer: MemFS
// files are).
type crashFile struct {
	c *crashFS
	f vfs.File
}

func (f *crashFile) ReadAt(p []byte, off int64) (n int, err error) {
	err = f.c.op(func() (err error) { n, err = f.f.ReadAt(p, off); return })
	return
}

func (f *crashFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.c.op(func() (err error) { n, err = f.f.WriteAt(p, off); return })
	return
}

func (f *crashFile) Sync() error { return f.c.op(f.f.Sync) }
func (f *crashFile) Allocate(off, n int64) error {
	return f.c.op(func() error { return f.f.Allocate(off, n) })
}
func (f *crashFile) Truncate(size int64) error {
	return f.c.op(func() error { return f.f.Truncate(size) })
}
func (f *crashFile) Close() error { return f.f.Close() }
func (f *crashFile) Fd() uintptr  { return f.f.Fd() }

func (f *crashFile) Size() (n int64, err error) {
	err = f.c.op(func() (err error) { n, err = f.f.Size(); return })
	return
}

func (f *crashFile) Map(size int) (b []byte, err error) {
	m, ok := f.f.(vfs.Mapper)
	if !ok {
		return nil, fmt.Errorf("crashfs: %T cannot map", f.f)
	}
	err = f.c.op(func() (err error) { b, err = m.Map(size); return })
	return
}

func (f *crashFile) Unmap(b []byte) error { return f.f.(vfs.Mapper).Unmap(b) }

func (f *crashFile) SyncMapped(m []byte, off, n int64) error {
	return f.c.op(func() error { return f.f.(vfs.MapSyncer).SyncMapped(m, off, n) })
}
