package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// MemFS is an in-memory file system that can lose power (CrashClone) or
// the process using it (ProcessCrashClone); memfs_crash.go compares the two.
//
// Durability model:
//   - Each file holds its current bytes and a durable copy. Sync copies the
//     4 KiB blocks written since the last Sync (and the file's size) from
//     current to durable. Bytes written through a mapping are invisible to
//     MemFS, so the mapped range counts as possibly dirty: it is compared
//     block by block with the durable copy at Sync and at a crash.
//   - A file's name (create, rename, remove) is durable only after SyncDir
//     of its parent. Directories made by MkdirAll are durable at once (a
//     simplification: stores make their directories once, at setup).
//   - CrashClone returns the file system as after a power loss: durable
//     bytes and names kept, each unsynced dirty block kept or reverted at
//     random, at most one block per file torn (a random prefix of it kept),
//     unsynced size changes applied or not, unsynced names forgotten.
//
// Direct files enforce O_DIRECT alignment (buffer address, length and
// offset multiples of DirectAlignment; EINVAL otherwise). Capacity is
// configurable (SetCapacity): writes and Allocates that need space past it
// fail with ENOSPC. Truncate makes sparse files that use no space.
//
// All methods are safe for concurrent use (one mutex guards the whole file
// system). Writes through a mapping must not run concurrently with Sync or
// CrashClone of that file, which read the whole mapped range; use
// SyncMapped (MapSyncer) to flush a range while writing beyond it.
type MemFS struct {
	mu struct {
		sync.Mutex
		root     *memNode
		capacity int64
		used     int64
		locks    map[*memNode]bool
		boot     string // BootID (boot.go)
	}
}

// DefaultMemCapacity is a new MemFS's capacity: 1 TiB.
const DefaultMemCapacity = 1 << 40

var _ FS = (*MemFS)(nil)

// NewMem returns an empty MemFS with DefaultMemCapacity.
func NewMem() *MemFS {
	m := &MemFS{}
	m.mu.root = newDirNode()
	m.mu.capacity = DefaultMemCapacity
	m.mu.locks = map[*memNode]bool{}
	m.mu.boot = newMemBoot()
	return m
}

// SetCapacity sets the file system's size in bytes. Below the bytes in
// use, every write or allocation that needs more space fails with ENOSPC.
func (m *MemFS) SetCapacity(bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.capacity = bytes
}

// Used returns the bytes files occupy (written or allocated ranges).
func (m *MemFS) Used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.used
}

// memNode is a directory or a file (an inode: renames move it, names
// point at it).
type memNode struct {
	dir bool
	// Directories.
	children map[string]*memNode // current entries
	synced   map[string]*memNode // entries as of the last SyncDir
	// Files: see memfs_file.go.
	file memData
}

func newDirNode() *memNode {
	return &memNode{dir: true, children: map[string]*memNode{}, synced: map[string]*memNode{}}
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// split turns a name into its components; the root is nil.
func split(name string) ([]string, error) {
	c := filepath.ToSlash(filepath.Clean(name))
	c = strings.TrimLeft(c, "/")
	if c == "." || c == "" {
		return nil, nil
	}
	parts := strings.Split(c, "/")
	if parts[0] == ".." {
		return nil, syscall.EINVAL
	}
	return parts, nil
}

// lookupLocked returns the node at parts.
func (m *MemFS) lookupLocked(parts []string) (*memNode, error) {
	n := m.mu.root
	for _, p := range parts {
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		c, ok := n.children[p]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = c
	}
	return n, nil
}

// parentLocked returns the directory holding name and name's last element.
func (m *MemFS) parentLocked(name string) (*memNode, string, error) {
	parts, err := split(name)
	if err != nil {
		return nil, "", err
	}
	if len(parts) == 0 {
		return nil, "", syscall.EINVAL // the root has no parent
	}
	dir, err := m.lookupLocked(parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.dir {
		return nil, "", syscall.ENOTDIR
	}
	return dir, parts[len(parts)-1], nil
}

func (m *MemFS) Create(name string, opts OpenOptions) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked(name)
	if err != nil {
		return nil, pathErr("create", name, err)
	}
	n, ok := dir.children[base]
	switch {
	case ok && n.dir:
		return nil, pathErr("create", name, syscall.EISDIR)
	case ok:
		if n.file.maps > 0 {
			return nil, pathErr("create", name, fmt.Errorf("truncating a mapped MemFS file: %w", syscall.EBUSY))
		}
		m.truncateLocked(n, 0)
	default:
		n = &memNode{}
		dir.children[base] = n
	}
	return &memFile{fs: m, n: n, name: name, direct: opts.Direct}, nil
}

func (m *MemFS) Open(name string, opts OpenOptions) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	parts, err := split(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	n, err := m.lookupLocked(parts)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	if n.dir {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	return &memFile{fs: m, n: n, name: name, direct: opts.Direct, readOnly: opts.ReadOnly}, nil
}

func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	n, ok := dir.children[base]
	if !ok {
		return pathErr("remove", name, syscall.ENOENT)
	}
	if n.dir && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(dir.children, base)
	m.unlinkedLocked(n)
	return nil
}

// unlinkedLocked frees the space of a node no current name points at.
// (Open handles keep working; a crash may bring a durable name back.)
func (m *MemFS) unlinkedLocked(n *memNode) {
	if !n.dir {
		m.mu.used -= n.file.backed
	}
}

func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	odir, obase, err := m.parentLocked(oldname)
	if err != nil {
		return pathErr("rename", oldname, err)
	}
	n, ok := odir.children[obase]
	if !ok {
		return pathErr("rename", oldname, syscall.ENOENT)
	}
	ndir, nbase, err := m.parentLocked(newname)
	if err != nil {
		return pathErr("rename", newname, err)
	}
	if old, ok := ndir.children[nbase]; ok {
		if old == n {
			return nil
		}
		if old.dir != n.dir {
			if old.dir {
				return pathErr("rename", newname, syscall.EISDIR)
			}
			return pathErr("rename", newname, syscall.ENOTDIR)
		}
		if old.dir && len(old.children) > 0 {
			return pathErr("rename", newname, syscall.ENOTEMPTY)
		}
		m.unlinkedLocked(old)
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

func (m *MemFS) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parts, err := split(dir)
	if err != nil {
		return pathErr("mkdir", dir, err)
	}
	n := m.mu.root
	for _, p := range parts {
		c, ok := n.children[p]
		if !ok {
			c = newDirNode()
			n.children[p] = c
			n.synced[p] = c // directories are durable at once (see MemFS)
		} else if !c.dir {
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = c
	}
	return nil
}

func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.dirLocked(dir)
	if err != nil {
		return nil, pathErr("readdir", dir, err)
	}
	names := make([]string, 0, len(n.children))
	for k := range n.children {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

func (m *MemFS) dirLocked(dir string) (*memNode, error) {
	parts, err := split(dir)
	if err != nil {
		return nil, err
	}
	n, err := m.lookupLocked(parts)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, syscall.ENOTDIR
	}
	return n, nil
}

func (m *MemFS) Stat(name string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	parts, err := split(name)
	if err != nil {
		return 0, pathErr("stat", name, err)
	}
	n, err := m.lookupLocked(parts)
	if err != nil {
		return 0, pathErr("stat", name, err)
	}
	if n.dir {
		return 0, nil
	}
	return int64(len(n.file.cur)), nil
}

func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.dirLocked(dir)
	if err != nil {
		return pathErr("fsync", dir, err)
	}
	n.synced = make(map[string]*memNode, len(n.children))
	for k, c := range n.children {
		n.synced[k] = c
	}
	return nil
}

func (m *MemFS) Lock(name string) (io.Closer, error) {
	f, err := m.Open(name, OpenOptions{})
	if err != nil {
		f, err = m.Create(name, OpenOptions{})
	}
	if err != nil {
		return nil, err
	}
	n := f.(*memFile).n
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.locks[n] {
		return nil, pathErr("lock", name, fmt.Errorf("held by another user: %w", syscall.EWOULDBLOCK))
	}
	m.mu.locks[n] = true
	return &memLock{fs: m, n: n}, nil
}

type memLock struct {
	fs   *MemFS
	n    *memNode
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.fs.mu.Lock()
		delete(l.fs.mu.locks, l.n)
		l.fs.mu.Unlock()
	})
	return nil
}

func (m *MemFS) DiskUsage(dir string) (total, free uint64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.dirLocked(dir); err != nil {
		return 0, 0, pathErr("statfs", dir, err)
	}
	c, u := m.mu.capacity, m.mu.used
	if c < 0 {
		c = 0
	}
	if u > c {
		u = c
	}
	return uint64(c), uint64(c - u), nil
}
