package broker

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/offsets"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// pullAll pulls queue 0 of topic from offset 0 and returns the bodies.
func pullAll(t *testing.T, c *rawClient, topic string) []string {
	t.Helper()
	var out []string
	for off := int64(0); ; {
		r := c.call(pullReq("g", topic, 0, off, 32, 0, "*"))
		if r.Code == protocol.PullNotFound {
			return out
		}
		if r.Code != protocol.Success {
			t.Fatalf("pull at %d: %s", off, r)
		}
		for _, rec := range decodeRecords(t, r.Body) {
			out = append(out, string(rec.Body))
		}
		off = ext64(t, r, "nextBeginOffset")
	}
}

func wantBodies(t *testing.T, got []string, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("pulled %d messages, want %d: %v", len(got), n, got)
	}
	for i, b := range got {
		if b != fmt.Sprintf("m%d", i) {
			t.Fatalf("message %d is %q", i, b)
		}
	}
}

// TestBrokerStartsOnFullDisk: a broker starts on a full disk (the store
// cannot create its abort marker nor write its checkpoint), serves pulls,
// answers sends SERVICE_NOT_AVAILABLE "disk is full", and takes sends
// again once space is freed, with no restart.
func TestBrokerStartsOnFullDisk(t *testing.T) {
	for _, flush := range []FlushDiskType{AsyncFlush, SyncFlush} {
		t.Run(string(flush), func(t *testing.T) {
			mem := vfs.NewMem()
			efs := errorfs.Wrap(mem)
			opts := func(c *Config) { c.FS = efs; c.FlushDiskType = flush }
			b := startBroker(t, "/store", opts)
			c := dialRaw(t, b.Addr())
			c.call(createTopicReq("full", 1))
			for i := 0; i < 10; i++ {
				if r := c.call(sendReq("full", 0, []byte(fmt.Sprintf("m%d", i)), nil)); r.Code != protocol.Success {
					t.Fatal(r)
				}
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}

			mem.SetCapacity(0)
			efs.AddRule(errorfs.Rule{Op: errorfs.OpCreate, Path: "abort", Sticky: true, Err: syscall.ENOSPC})
			b = startBroker(t, "/store", opts)
			defer b.Close()
			c = dialRaw(t, b.Addr())
			wantBodies(t, pullAll(t, c, "full"), 10)
			r := c.call(sendReq("full", 0, []byte("refused"), nil))
			if r.Code != protocol.ServiceNotAvailable || !strings.Contains(r.Remark, "disk is full") {
				t.Fatalf("send on a full disk: %s", r)
			}

			mem.SetCapacity(vfs.DefaultMemCapacity)
			efs.ClearRules()
			deadline := time.Now().Add(10 * time.Second)
			for {
				r := c.call(sendReq("full", 0, []byte("m10"), nil))
				if r.Code == protocol.Success {
					break
				}
				if r.Code != protocol.ServiceNotAvailable || time.Now().After(deadline) {
					t.Fatalf("send once space is freed: %s", r)
				}
				time.Sleep(time.Millisecond)
			}
			deadline = time.Now().Add(10 * time.Second)
			for len(pullAll(t, c, "full")) < 11 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond) // the dispatcher indexes it
			}
			wantBodies(t, pullAll(t, c, "full"), 11)
		})
	}
}

// TestBrokerCloseOnFullDisk: Close (what SIGTERM runs) on a full disk
// returns nil, so `samsa broker` exits 0; consumerOffset.json keeps its
// last saved version and no temp file; the next start recovers every
// acknowledged message.
func TestBrokerCloseOnFullDisk(t *testing.T) {
	mem := vfs.NewMem()
	opts := func(c *Config) { c.FS = mem }
	b := startBroker(t, "/store", opts)
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("full", 1))
	for i := 0; i < 10; i++ {
		if r := c.call(sendReq("full", 0, []byte(fmt.Sprintf("m%d", i)), nil)); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	commit := func(off int64) {
		t.Helper()
		h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "full", QueueID: 0, CommitOffset: off}
		if r := c.call(protocol.NewRequest(protocol.UpdateConsumerOffset, h.Encode(), nil)); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	commit(4)
	if err := b.offsets.Save(true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(b.cfg.ConfigDir(), offsets.FileName)
	good := readAll(t, mem, path)
	commit(8)

	mem.SetCapacity(0)
	if err := b.Close(); err != nil {
		t.Fatalf("Close on a full disk: %v (samsa broker would exit non-zero)", err)
	}
	if got := readAll(t, mem, path); !bytes.Equal(got, good) {
		t.Fatalf("consumerOffset.json changed by a failed save:\n%s\nwant\n%s", got, good)
	}
	if _, err := mem.Stat(path + ".tmp"); err == nil {
		t.Fatal("a failed save left its temp file")
	}

	mem.SetCapacity(vfs.DefaultMemCapacity)
	b = startBroker(t, "/store", opts)
	defer b.Close()
	c = dialRaw(t, b.Addr())
	qh := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "full", QueueID: 0}
	if r := c.call(protocol.NewRequest(protocol.QueryConsumerOffset, qh.Encode(), nil)); ext64(t, r, "offset") != 4 {
		t.Fatalf("offset after the restart: %s", r)
	}
	wantBodies(t, pullAll(t, c, "full"), 10)
}

func readAll(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if m, err := f.ReadAt(b, 0); m < len(b) {
		t.Fatal(err)
	}
	return b
}

// TestLongPollWokenAfterConsumeQueueFull: a message acknowledged while its
// ConsumeQueue entry cannot be written (ENOSPC) wakes the pull held on its
// queue once space returns, with no restart; meanwhile sends are refused
// SERVICE_NOT_AVAILABLE and the pull stays held.
func TestLongPollWokenAfterConsumeQueueFull(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	b := startBroker(t, "/store", func(c *Config) { c.FS = efs })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	// The disk fills before the topic is made, so the queue's file, which
	// creating the topic makes, is not there: the first entry's append
	// meets the full disk.
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpCreate, errorfs.OpMkdir} {
		efs.AddRule(errorfs.Rule{Op: op, Path: "consumequeue", Sticky: true, Err: syscall.ENOSPC})
	}
	if r := c.call(createTopicReq("lpf", 1)); r.Code != protocol.Success {
		t.Fatalf("create topic on a full disk (its queue files are made later): %s", r)
	}
	pending := c.start(pullReq("g", "lpf", 0, 0, 32, 10*time.Second, "*"))
	waitFor(t, func() bool { return b.stats.held.Load() == 1 }, "pull held")
	if r := c.call(sendReq("lpf", 0, []byte("m0"), nil)); r.Code != protocol.Success {
		t.Fatalf("send while only the consume queue is full: %s", r)
	}
	waitFor(t, func() bool { return b.store.ReadOnly() }, "the store to hold the entry and turn read-only")
	if r := c.call(sendReq("lpf", 0, []byte("m1"), nil)); r.Code != protocol.ServiceNotAvailable {
		t.Fatalf("send while read-only: %s", r)
	}
	select {
	case r := <-pending:
		t.Fatalf("pull answered while its entry is held: %s", r)
	default:
	}
	efs.ClearRules()
	select {
	case r := <-pending:
		recs := decodeRecords(t, r.Body)
		if r.Code != protocol.Success || len(recs) != 1 || string(recs[0].Body) != "m0" {
			t.Fatalf("woken pull: %s", r)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("held pull not woken once the entry landed")
	}
	if w, e := b.stats.wokenTotal.Load(), b.stats.expiredTotal.Load(); w != 1 || e != 0 {
		t.Fatalf("woken by arrival %d, by deadline %d; want 1 and 0", w, e)
	}
}
