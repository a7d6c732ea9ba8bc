package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand"
	"testing"
)

// TestMemFSProcessCrashKeepsTheKernel: a process crash keeps every byte,
// size and name handed to the OS, synced or not, mapped writes too; the
// clone still owes the syncs m never did, so a power loss after it loses
// exactly what a power loss of m would.
func TestMemFSProcessCrashKeepsTheKernel(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	// Durable: three files, their names, their bytes.
	synced := mustCreate(t, m, "/d/synced", OpenOptions{})
	mustWrite(t, synced, pattern(3*4096, 1), 0)
	synced.Sync()
	gone := mustCreate(t, m, "/d/gone", OpenOptions{})
	mustWrite(t, gone, pattern(10, 3), 0)
	gone.Sync()
	mapped := mustCreate(t, m, "/d/mapped", OpenOptions{})
	mapped.Truncate(2 * 4096)
	mapped.Sync()
	m.SyncDir("/d")

	// Handed to the OS, never synced.
	over := pattern(4096+10, 50)
	mustWrite(t, synced, over, 4096) // an overwrite
	fresh := mustCreate(t, m, "/d/fresh", OpenOptions{})
	mustWrite(t, fresh, pattern(100, 2), 0)
	m.Remove("/d/gone")
	mb, err := mapped.(Mapper).Map(2 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	copy(mb[4096:], pattern(300, 4))

	c := m.ProcessCrashClone()
	wantSynced := append(pattern(3*4096, 1)[:4096], over...)
	wantSynced = append(wantSynced, pattern(3*4096, 1)[4096+len(over):]...)
	if got := readAll(t, c, "/d/synced"); !bytes.Equal(got, wantSynced) {
		t.Fatal("unsynced overwrite lost by a process crash")
	}
	if got := readAll(t, c, "/d/fresh"); !bytes.Equal(got, pattern(100, 2)) {
		t.Fatal("unsynced file lost by a process crash")
	}
	if _, err := c.Stat("/d/gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unsynced remove undone by a process crash: %v", err)
	}
	wantMapped := make([]byte, 2*4096)
	copy(wantMapped[4096:], pattern(300, 4))
	if got := readAll(t, c, "/d/mapped"); !bytes.Equal(got, wantMapped) {
		t.Fatal("mapped write lost by a process crash")
	}
	if err := mapped.(Mapper).Unmap(mb); err != nil {
		t.Fatal(err)
	}

	// The power loss that follows: the clone's durable state is m's.
	p := c.CrashClone(nil)
	if got := readAll(t, p, "/d/synced"); !bytes.Equal(got, pattern(3*4096, 1)) {
		t.Fatal("power loss after a process crash kept unsynced bytes")
	}
	if _, err := p.Stat("/d/fresh"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("power loss after a process crash kept an unsynced name: %v", err)
	}
	if got := readAll(t, p, "/d/gone"); !bytes.Equal(got, pattern(10, 3)) {
		t.Fatal("power loss after a process crash did not bring the durable name back")
	}
	if got := readAll(t, p, "/d/mapped"); !bytes.Equal(got, make([]byte, 2*4096)) {
		t.Fatal("power loss after a process crash kept an unsynced mapped write")
	}
	// And a random power loss of the clone draws from the same blocks as one of m.
	for seed := int64(0); seed < 20; seed++ {
		a := readAll(t, m.CrashClone(rand.New(rand.NewSource(seed))), "/d/synced")
		b := readAll(t, c.CrashClone(rand.New(rand.NewSource(seed))), "/d/synced")
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: power loss of the clone differs from one of m", seed)
		}
	}
}

// TestMemFSProcessCrashIsolated: the clone shares nothing with m, holds no
// lock, and can be written and synced on its own.
func TestMemFSProcessCrashIsolated(t *testing.T) {
	m := NewMem()
	f := mustCreate(t, m, "/f", OpenOptions{})
	mustWrite(t, f, pattern(5000, 1), 0)
	l, err := m.Lock("/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := m.ProcessCrashClone()
	if c.Used() != m.Used() {
		t.Fatalf("clone uses %d bytes, m %d", c.Used(), m.Used())
	}
	cl, err := c.Lock("/LOCK")
	if err != nil {
		t.Fatalf("the dead process's lock survived: %v", err)
	}
	cl.Close()
	mustWrite(t, f, pattern(5000, 9), 0)
	if got := readAll(t, c, "/f"); !bytes.Equal(got, pattern(5000, 1)) {
		t.Fatal("a write to m reached the clone")
	}
	cf, err := c.Open("/f", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, cf, pattern(10, 7), 0)
	if err := cf.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, m, "/f"); !bytes.Equal(got, pattern(5000, 9)) {
		t.Fatal("a write to the clone reached m")
	}
}
