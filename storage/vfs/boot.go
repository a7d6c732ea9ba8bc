package vfs

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Booter is implemented by file systems that can name the boot of the
// kernel holding their page cache. Two calls return the same ID exactly
// when nothing the kernel held unsynced can have been lost between them: a
// process crash keeps the ID, a power loss, kernel panic or reboot changes
// it. A store uses it to tell whether bytes it handed to the kernel but
// never synced are still there (the stage files of the pwrite, odirect and
// uring backends).
type Booter interface {
	BootID() (string, error)
}

// BootID returns fsys's boot ID, or ok false if fsys cannot name one.
func BootID(fsys FS) (id string, ok bool, err error) {
	b, is := fsys.(Booter)
	if !is {
		return "", false, nil
	}
	id, err = b.BootID()
	return id, err == nil, err
}

// InnerBootID is the BootID of a wrapper over inner: inner's, or an error
// if inner names none.
func InnerBootID(inner FS) (string, error) {
	b, ok := inner.(Booter)
	if !ok {
		return "", errors.New("vfs: the file system names no boot")
	}
	return b.BootID()
}

// memBoots numbers MemFS boots: each NewMem and each CrashClone is a new
// one; a ProcessCrashClone keeps its source's.
var memBoots atomic.Int64

func newMemBoot() string { return fmt.Sprintf("memfs-boot-%d", memBoots.Add(1)) }

// BootID names the simulated machine's boot (see Booter).
func (m *MemFS) BootID() (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.boot, nil
}
