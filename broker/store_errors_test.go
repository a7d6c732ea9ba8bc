package broker

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/testutil"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// TestBrokenStoreNeverSendOK: once an fsync fails the store is broken and
// every send is answered with an error code and a remark saying so.
func TestBrokenStoreNeverSendOK(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	b := startBroker(t, "/store", func(c *Config) { c.FS = efs; c.FlushDiskType = SyncFlush })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("br", 1))
	if r := c.call(sendReq("br", 0, []byte("before"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpSync, Path: "commitlog", Sticky: true})
	for i := 0; i < 5; i++ {
		r := c.call(sendReq("br", 0, []byte("after"), nil))
		if r.Code == protocol.Success || r.Code == protocol.FlushDiskTimeout {
			t.Fatalf("send %d after a failed fsync answered %s", i, r)
		}
		if !strings.Contains(r.Remark, "broken") {
			t.Fatalf("remark %q does not say the store is broken", r.Remark)
		}
	}
}

// TestDiskFullRefused: ENOSPC on the CommitLog answers an error code with a
// clear remark, not SEND_OK.
func TestDiskFullRefused(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	b := startBroker(t, "/store", func(c *Config) { c.FS = efs; c.FlushDiskType = SyncFlush })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("full", 1))
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, Path: "commitlog", Sticky: true, Err: syscall.ENOSPC})
	efs.AddRule(errorfs.Rule{Op: errorfs.OpAllocate, Path: "commitlog", Sticky: true, Err: syscall.ENOSPC})
	efs.AddRule(errorfs.Rule{Op: errorfs.OpCreate, Path: "commitlog", Sticky: true, Err: syscall.ENOSPC})
	r := c.call(sendReq("full", 0, []byte("x"), nil))
	if r.Code == protocol.Success || r.Code == protocol.FlushDiskTimeout {
		t.Fatalf("send on a full disk answered %s", r)
	}
	if !strings.Contains(r.Remark, "disk is full") && !strings.Contains(r.Remark, "broken") {
		t.Fatalf("remark %q", r.Remark)
	}
}

// gateFS blocks every Sync of a file whose path contains "commitlog" while
// the gate is closed.
type gateFS struct {
	vfs.FS
	mu   sync.Mutex
	open chan struct{} // closed: syncs pass
}

func (g *gateFS) wait() {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	<-ch
}

func (g *gateFS) block() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

// release opens the gate; opening an open gate does nothing.
func (g *gateFS) release() {
	g.mu.Lock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
	g.mu.Unlock()
}

// holdGate makes a broker's Close safe while g may hold fsyncs: it
// registers the broker's bounded Close, then (to run before it) the gate's
// release, so a test that fails with the gate shut still closes and
// reports its failure instead of hanging until the package timeout.
func holdGate(t testing.TB, g *gateFS, b *Broker) {
	t.Helper()
	testutil.CleanupClose(t, "broker", b.Close)
	t.Cleanup(g.release)
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f gateFile) Sync() error { f.g.wait(); return f.File.Sync() }

func (g *gateFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.Contains(name, "commitlog") {
		return f, err
	}
	return gateFile{f, g}, nil
}

func (g *gateFS) Create(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := g.FS.Create(name, o)
	return g.wrap(name, f, err)
}

func (g *gateFS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := g.FS.Open(name, o)
	return g.wrap(name, f, err)
}

// TestSyncFlushTimeout: with SYNC_FLUSH a send is answered only once its
// record is durable; a flush slower than syncFlushTimeout answers
// FLUSH_DISK_TIMEOUT (stored, durability unknown), and once the disk
// catches up sends succeed again.
func TestSyncFlushTimeout(t *testing.T) {
	g := &gateFS{FS: vfs.NewMem(), open: make(chan struct{})}
	close(g.open)
	b := startBroker(t, "/store", func(c *Config) {
		c.FS = g
		c.FlushDiskType = SyncFlush
		c.SyncFlushTimeout = 200 * time.Millisecond
	})
	holdGate(t, g, b)
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("slow", 1))
	if r := c.call(sendReq("slow", 0, []byte("fast"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	g.block()
	start := time.Now()
	pending := c.start(sendReq("slow", 0, []byte("slow"), nil))
	select {
	case r := <-pending:
		if r.Code != protocol.FlushDiskTimeout {
			t.Fatalf("blocked fsync: %s", r)
		}
		if took := time.Since(start); took < 200*time.Millisecond {
			t.Fatalf("answered after %v, before the flush timeout", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer while the fsync hangs")
	}
	g.release()
	if r := c.call(sendReq("slow", 0, []byte("again"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if b.stats.flushTimeout.Load() != 1 {
		t.Fatalf("flush timeouts %d", b.stats.flushTimeout.Load())
	}
}

// TestOutOfDescriptorsAnswersBusy: a send that meets EMFILE (no descriptor
// for the next CommitLog segment) is answered SYSTEM_BUSY with a remark
// saying why; the store is not broken, and the same send succeeds once
// descriptors are free, with every acknowledged message readable.
func TestOutOfDescriptorsAnswersBusy(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	b := startBroker(t, "/store", func(c *Config) {
		c.FS = efs
		c.FlushDiskType = SyncFlush
		c.MappedFileSizeCommitLog = 64 << 10
	})
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("fd", 1))
	efs.AddRule(errorfs.Rule{Op: errorfs.OpCreate, Path: "commitlog", Sticky: true, Err: syscall.EMFILE})
	body := make([]byte, 4000)
	sent := 0
	var r *protocol.Command
	for i := 0; i < 40; i++ { // until a roll needs a new segment
		if r = c.call(sendReq("fd", 0, body, nil)); r.Code != protocol.Success {
			break
		}
		sent++
	}
	if r.Code != protocol.SystemBusy || !strings.Contains(r.Remark, "file descriptors") {
		t.Fatalf("send out of descriptors answered %s", r)
	}
	if err := b.store.Err(); err != nil {
		t.Fatalf("store broken: %v", err)
	}
	efs.ClearRules()
	for i := 0; i < 20; i++ {
		if r := c.call(sendReq("fd", 0, body, nil)); r.Code != protocol.Success {
			t.Fatalf("send %d after descriptors are free: %s", i, r)
		}
		sent++
	}
	deadline := time.Now().Add(60 * time.Second)
	for b.store.MaxQueueOffset("fd", 0) != int64(sent) {
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d messages, %d acknowledged", b.store.MaxQueueOffset("fd", 0), sent)
		}
		time.Sleep(time.Millisecond)
	}
}
