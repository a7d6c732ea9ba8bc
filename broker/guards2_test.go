package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/testutil"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// Second, independent guards: each checks a property another
// test checks too, by another road, so one broken test cannot hide a
// broken property.

// TestLongPollWokenByBatchFromAnotherConnection: a pull held for an hour
// (the broker's cap raised to match) is answered with the message that a
// batch send on another connection stores. Nothing but the arrival can
// answer it within the test's deadline: an hour-long hold cannot expire,
// and an expired hold would answer PULL_NOT_FOUND with no records. It reads
// none of the broker's long-poll counters (TestLongPollWakesOnArrival does).
func TestLongPollWokenByBatchFromAnotherConnection(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.LongPollingMaxHold = 2 * time.Hour })
	testutil.CleanupClose(t, "broker", b.Close)
	puller, sender := dialRaw(t, b.Addr()), dialRaw(t, b.Addr())
	sender.call(createTopicReq("lpb", 1))
	pending := puller.start(pullReq("g", "lpb", 0, 0, 32, time.Hour, "*"))
	waitFor(t, func() bool { return b.stats.held.Load() == 1 }, "pull held")
	if r := sender.call(batchReq("lpb", 3)); r.Code != protocol.Success {
		t.Fatalf("batch send: %s", r)
	}
	select {
	case r := <-pending:
		recs := decodeRecords(t, r.Body)
		// The first record's arrival wakes it; the rest may follow in it.
		if r.Code != protocol.Success || len(recs) == 0 || string(recs[0].Body) != "b-0" {
			t.Fatalf("held pull answered %s with %d records", r, len(recs))
		}
		verifyBody(t, r.Body)
	case <-time.After(60 * time.Second):
		t.Fatal("an hour-long held pull not woken by the batch that arrived for its queue")
	}
}

// TestBatchSendAnswersFlushDiskTimeout: under SYNC_FLUSH a batch whose
// fsync outlasts syncFlushTimeout is answered FLUSH_DISK_TIMEOUT (never
// SUCCESS, never an error that says it was not stored), its messages are
// stored and readable, and once the disk catches up batches succeed. The
// single-send path is TestSyncFlushTimeout's.
func TestBatchSendAnswersFlushDiskTimeout(t *testing.T) {
	g := &gateFS{FS: vfs.NewMem(), open: make(chan struct{})}
	close(g.open)
	b := startBroker(t, "/store", func(c *Config) {
		c.FS = g
		c.FlushDiskType = SyncFlush
		c.SyncFlushTimeout = 100 * time.Millisecond
	})
	holdGate(t, g, b)
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("bft", 1))
	if r := c.call(batchReq("bft", 2)); r.Code != protocol.Success {
		t.Fatalf("batch with a healthy disk: %s", r)
	}
	g.block()
	r := c.call(batchReq("bft", 4))
	if r.Code != protocol.FlushDiskTimeout {
		t.Fatalf("batch with its fsync held past the timeout: %s, want FLUSH_DISK_TIMEOUT", r)
	}
	// Stored, durability unknown: once the disk catches up the queue holds
	// all six (records are served only once durable).
	g.release()
	waitFor(t, func() bool { return b.store.MaxQueueOffset("bft", 0) == 6 }, "the timed-out batch indexed")
	if r := c.call(batchReq("bft", 1)); r.Code != protocol.Success {
		t.Fatalf("batch after the disk caught up: %s", r)
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("bft", 0) == 7 }, "all indexed")
	pr := c.call(pullReq("g", "bft", 0, 0, 32, 0, "*"))
	if recs := decodeRecords(t, pr.Body); pr.Code != protocol.Success || len(recs) != 7 {
		t.Fatalf("pull: %s, %d records", pr, len(recs))
	}
}

// TestOneFailedFsyncBreaksTheBrokerForGood: one fsync fails, once (the
// rule is not sticky: the disk is healthy right after). The send it
// covered, and every send after it, is refused with a remark saying the
// store is broken, never SUCCESS or FLUSH_DISK_TIMEOUT: the failure is
// sticky in the store, not in the disk (TestBrokenStoreNeverSendOK keeps
// the disk failing).
func TestOneFailedFsyncBreaksTheBrokerForGood(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	b := startBroker(t, "/store", func(c *Config) { c.FS = efs; c.FlushDiskType = SyncFlush })
	testutil.CleanupClose(t, "broker", b.Close)
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("once", 1))
	if r := c.call(sendReq("once", 0, []byte("before"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpSync, Path: "commitlog"})
	for i := 0; i < 5; i++ {
		r := c.call(sendReq("once", 0, []byte(fmt.Sprintf("after-%d", i)), nil))
		if r.Code == protocol.Success || r.Code == protocol.FlushDiskTimeout {
			t.Fatalf("send %d after a failed fsync answered %s", i, r)
		}
		if !strings.Contains(r.Remark, "broken") {
			t.Fatalf("send %d: remark %q does not say the store is broken", i, r.Remark)
		}
	}
	if n := efs.Injected(); n != 1 {
		t.Fatalf("%d fsyncs failed, want exactly one (the disk healthy after it)", n)
	}
	if r := c.call(batchReq("once", 2)); r.Code == protocol.Success || r.Code == protocol.FlushDiskTimeout {
		t.Fatalf("batch after a failed fsync answered %s", r)
	}
}

// TestPullNeverServesRecordWithBadCRCField damages the stored body CRC
// (not the body: TestPullNeverServesCorruptRecord flips a body byte) of the
// last record of a queue, on an in-memory file system, while the broker is
// stopped cleanly (no recovery scan sees it). No pull, plain or suspended,
// from any offset, ever carries that record: the records before it are
// served intact, the pull at it is moved past it, and every served record
// verifies.
func TestPullNeverServesRecordWithBadCRCField(t *testing.T) {
	const topic, n = "crcf", 6
	mem := vfs.NewMem()
	cfg := func(c *Config) { c.FS = mem }
	b := startBroker(t, "/store", cfg)
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq(topic, 1))
	for i := 0; i < n; i++ {
		if r := c.call(sendReq(topic, 0, []byte(fmt.Sprintf("crc-%d", i)), nil)); r.Code != protocol.Success {
			t.Fatalf("send %d: %s", i, r)
		}
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset(topic, 0) == n }, "all dispatched")
	recs := decodeRecords(t, c.call(pullReq("g", topic, 0, 0, 32, 0, "*")).Body)
	if len(recs) != n {
		t.Fatalf("%d records before the damage", len(recs))
	}
	phys := recs[n-1].PhysOffset
	testutil.CloseWithin(t, "broker", b.Close, false)

	seg := fmt.Sprintf("/store/commitlog/%020d", phys/(4<<20)*(4<<20))
	f, err := mem.Open(seg, vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := phys%(4<<20) + record.OffBodyCRC + 3 // the CRC's low byte
	buf := make([]byte, 1)
	if _, err := f.ReadAt(buf, at); err != nil {
		t.Fatal(err)
	}
	buf[0] ^= 0x01
	if _, err := f.WriteAt(buf, at); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	b = startBroker(t, "/store", cfg)
	testutil.CleanupClose(t, "broker", b.Close)
	c = dialRaw(t, b.Addr())
	for from := int64(0); from < n; from++ {
		for _, suspend := range []time.Duration{0, 20 * time.Second} {
			r := c.call(pullReq("g", topic, 0, from, 32, suspend, "*"))
			verifyBody(t, r.Body)
			for _, rec := range decodeRecords(t, r.Body) {
				if rec.PhysOffset == phys {
					t.Fatalf("pull from %d served the record with the bad CRC: %s", from, r)
				}
			}
			if from == n-1 {
				if r.Code != protocol.PullOffsetMoved || ext64(t, r, "nextBeginOffset") != n || len(r.Body) != 0 {
					t.Fatalf("pull at the damaged record (suspend %v): %s; want PULL_OFFSET_MOVED to %d", suspend, r, n)
				}
			} else if got := len(decodeRecords(t, r.Body)); r.Code != protocol.Success || got != int(n-1-from) {
				t.Fatalf("pull from %d: %s, %d records; want the %d before the damage", from, r, got, n-1-from)
			}
		}
	}
}
