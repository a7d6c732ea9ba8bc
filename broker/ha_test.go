package broker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/testutil"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// fakeReplicator stands in for the replication link: it records the end
// offsets it is asked to wait for, holds the callers while its gate is
// shut, and answers result.
type fakeReplicator struct {
	mu     sync.Mutex
	ends   []int64
	result error
	gate   chan struct{} // nil or closed: answer at once
	slaves []SlaveStatus
}

func (f *fakeReplicator) WaitReplicated(end int64) error {
	f.mu.Lock()
	f.ends = append(f.ends, end)
	gate, res := f.gate, f.result
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return res
}

func (f *fakeReplicator) WaitReplicatedFunc(end int64, fn func(error)) (bool, error) {
	f.mu.Lock()
	f.ends = append(f.ends, end)
	gate, res := f.gate, f.result
	f.mu.Unlock()
	if gate == nil {
		return true, res
	}
	go func() {
		<-gate
		fn(res)
	}()
	return false, nil
}

func (f *fakeReplicator) Slaves() []SlaveStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.slaves)
}

func (f *fakeReplicator) set(result error) {
	f.mu.Lock()
	f.result, f.ends = result, nil
	f.mu.Unlock()
}

func (f *fakeReplicator) waited() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ends)
}

// startSyncMaster starts a SYNC_MASTER with repl attached (nil: none).
func startSyncMaster(t *testing.T, dir string, repl replicator, mutate func(*Config)) *Broker {
	t.Helper()
	b := newBroker(t, dir, func(c *Config) {
		c.BrokerRole = SyncMaster
		if mutate != nil {
			mutate(c)
		}
	})
	if repl != nil {
		b.repl.setReplicator(repl)
	}
	if err := b.Start(); err != nil {
		b.Close()
		t.Fatal(err)
	}
	return b
}

func batchReq(topic string, n int) *protocol.Command {
	var items []batchItem
	for i := 0; i < n; i++ {
		p, _ := record.EncodeProperties(map[string]string{"i": fmt.Sprint(i)})
		items = append(items, batchItem{Body: []byte(fmt.Sprintf("b-%d", i)), Properties: p})
	}
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: AutoCreateTopicKey,
		DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli(), Batch: true}
	return protocol.NewRequest(protocol.SendBatchMessage, h.V2().Encode(), encodeBatch(items))
}

// TestSyncMasterWithoutReplicator: with no replication link attached a
// SYNC_MASTER stores and answers SLAVE_NOT_AVAILABLE, as RocketMQ does
// with no slave.
func TestSyncMasterWithoutReplicator(t *testing.T) {
	b := startSyncMaster(t, "", nil, nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("sm", 1))
	if r := c.call(sendReq("sm", 0, []byte("x"), nil)); r.Code != protocol.SlaveNotAvailable || r.ExtFields["msgId"] == "" {
		t.Fatalf("send: %s", r)
	}
	if r := c.call(batchReq("sm", 3)); r.Code != protocol.SlaveNotAvailable {
		t.Fatalf("batch: %s", r)
	}
	if b.stats.slaveNotAvailable.Load() != 2 || b.stats.cmdPut.Load() != 4 {
		t.Fatalf("counted %d not available, %d stored", b.stats.slaveNotAvailable.Load(), b.stats.cmdPut.Load())
	}
}

// TestSyncMasterReplicatorAnswers: the replicator's outcome maps to the
// SEND answer, for single sends (through the combiner, and alone under
// SYNC_FLUSH) and batches; each waits for its own end offset.
func TestSyncMasterReplicatorAnswers(t *testing.T) {
	for _, flush := range []FlushDiskType{AsyncFlush, SyncFlush} {
		t.Run(string(flush), func(t *testing.T) {
			f := &fakeReplicator{}
			b := startSyncMaster(t, "", f, func(c *Config) { c.FlushDiskType = flush })
			defer b.Close()
			if (b.appends != nil) != (flush == AsyncFlush) {
				t.Fatal("combiner use does not follow the flush type")
			}
			c := dialRaw(t, b.Addr())
			c.call(createTopicReq("rp", 1))
			for _, tc := range []struct {
				result error
				code   int32
			}{
				{nil, protocol.Success},
				{errSlaveTimeout, protocol.FlushSlaveTimeout},
				{errSlaveNotAvailable, protocol.SlaveNotAvailable},
				{errors.New("link closing"), protocol.SlaveNotAvailable},
			} {
				f.set(tc.result)
				if r := c.call(sendReq("rp", 0, []byte("one"), nil)); r.Code != tc.code {
					t.Fatalf("send with %v: %s", tc.result, r)
				}
				if got := f.waited(); len(got) != 1 || got[0] != b.store.WrittenOffset() {
					t.Fatalf("send waited for %v, the log ends at %d", got, b.store.WrittenOffset())
				}
				f.set(tc.result)
				if r := c.call(batchReq("rp", 5)); r.Code != tc.code {
					t.Fatalf("batch with %v: %s", tc.result, r)
				}
				if got := f.waited(); len(got) != 1 || got[0] != b.store.WrittenOffset() {
					t.Fatalf("batch waited for %v, the log ends at %d", got, b.store.WrittenOffset())
				}
			}
			if b.stats.slaveTimeouts.Load() != 2 || b.stats.slaveNotAvailable.Load() != 4 {
				t.Fatalf("counted %d timeouts, %d not available", b.stats.slaveTimeouts.Load(), b.stats.slaveNotAvailable.Load())
			}
		})
	}
}

// TestSyncMasterWaitsOffTheReader: sends waiting for slaves do not hold up
// the connection (the reader queues their answers with the replication
// link and reads on), and each waits for its own record's end.
func TestSyncMasterWaitsOffTheReader(t *testing.T) {
	f := &fakeReplicator{gate: make(chan struct{})}
	b := startSyncMaster(t, "", f, nil)
	testutil.CleanupClose(t, "broker", b.Close)
	var once sync.Once
	open := func() { once.Do(func() { close(f.gate) }) }
	t.Cleanup(open) // runs before the Close above: a failure must not leave Close waiting on the gate
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("wr", 1))
	const n = 8
	var sends []<-chan *protocol.Command
	for i := 0; i < n; i++ {
		sends = append(sends, c.start(sendReq("wr", 0, []byte(fmt.Sprintf("m%d", i)), nil)))
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(f.waited()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sends wait for slaves", len(f.waited()), n)
		}
		time.Sleep(time.Millisecond)
	}
	// The connection still answers while every send waits (and the
	// records are readable: stored before the wait).
	h := protocol.GetMaxOffsetRequestHeader{Topic: "wr", QueueID: 0}
	for {
		r := c.call(protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil))
		if r.Code != protocol.Success {
			t.Fatalf("max offset while sends wait: %s", r)
		}
		if ext64(t, r, "offset") == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("max offset while sends wait: %s", r)
		}
		time.Sleep(time.Millisecond)
	}
	for _, ch := range sends {
		select {
		case r := <-ch:
			t.Fatalf("answered before the slaves: %s", r)
		default:
		}
	}
	open()
	for i, ch := range sends {
		select {
		case r := <-ch:
			if r.Code != protocol.Success {
				t.Fatalf("send %d: %s", i, r)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("send %d not answered", i)
		}
	}
	ends := f.waited()
	slices.Sort(ends)
	if len(slices.Compact(ends)) != n || ends[n-1] != b.store.WrittenOffset() {
		t.Fatalf("ends waited for: %v (log ends at %d)", ends, b.store.WrittenOffset())
	}
}

// TestSyncMasterFlushAndReplica: under SYNC_FLUSH a flush timeout answers
// FLUSH_DISK_TIMEOUT when the slaves hold the record, and the replica's
// failure wins when they do not (RocketMQ's order).
func TestSyncMasterFlushAndReplica(t *testing.T) {
	g := &gateFS{FS: vfs.NewMem(), open: make(chan struct{})}
	close(g.open)
	f := &fakeReplicator{}
	b := startSyncMaster(t, "/store", f, func(c *Config) {
		c.FS = g
		c.FlushDiskType = SyncFlush
		c.SyncFlushTimeout = 100 * time.Millisecond
	})
	holdGate(t, g, b)
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("fr", 1))
	g.block()
	if r := c.call(sendReq("fr", 0, []byte("a"), nil)); r.Code != protocol.FlushDiskTimeout {
		t.Fatalf("flush timeout, slaves fine: %s", r)
	}
	f.set(errSlaveTimeout)
	if r := c.call(sendReq("fr", 0, []byte("b"), nil)); r.Code != protocol.FlushSlaveTimeout {
		t.Fatalf("flush timeout, slaves late: %s", r)
	}
	g.release()
	f.set(nil)
	if r := c.call(sendReq("fr", 0, []byte("c"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
}

// TestHAStats: the text stats and /metrics show the role and each slave
// the replicator reports.
func TestHAStats(t *testing.T) {
	f := &fakeReplicator{slaves: []SlaveStatus{{Addr: "10.0.0.2:10912", AckOffset: 4096, Behind: 128, InSync: true,
		Since: time.UnixMilli(1_700_000_000_000)}}}
	b := startSyncMaster(t, "", f, nil)
	defer b.Close()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if !b.writeStats(w, "ha") {
		t.Fatal("no ha stats item")
	}
	w.Flush()
	for _, want := range []string{"STAT ha_role SYNC_MASTER", "STAT ha_slaves 1", "STAT slave:10.0.0.2:10912:ack_offset 4096",
		"STAT slave:10.0.0.2:10912:behind_bytes 128", "STAT slave:10.0.0.2:10912:in_sync 1",
		"STAT slave:10.0.0.2:10912:since_ms 1700000000000"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("stats ha lacks %q:\n%s", want, buf.String())
		}
	}
	mfs, err := b.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "samsa_ha_slave_behind_bytes" && len(mf.GetMetric()) == 1 && mf.GetMetric()[0].GetGauge().GetValue() == 128 {
			found = true
		}
	}
	if !found {
		t.Fatal("no samsa_ha_slave_behind_bytes for the slave")
	}

	s := startBroker(t, "", asSlave("", 1, nil))
	defer s.Close()
	buf.Reset()
	w.Reset(&buf)
	s.writeStats(w, "")
	w.Flush()
	for _, want := range []string{"STAT broker_role SLAVE", "STAT ha_master_addr ", "STAT slave_sync_rounds "} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("slave stats lack %q", want)
		}
	}
}
