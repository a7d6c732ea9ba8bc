package broker

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// TestDamagedRecordRepairedFromPeer: a record damaged at rest in a sealed
// segment, first on the slave, then on the master, is never served
// damaged and never skipped: the pull at it is told to retry while the
// broker fetches the record from its peer replica (GetCommitLogRange) and
// writes it back, then it is served intact (or, when the broker still
// holds an intact copy of the block in memory, served intact at once).
func TestDamagedRecordRepairedFromPeer(t *testing.T) {
	const topic, n = "rp", 40
	c := newCtlCluster(t, time.Hour)
	m := c.startGroup(2)
	s := c.b[2]
	rc := dialRaw(t, m.Addr())
	if r := rc.call(createTopicReq(topic, 1)); r.Code != protocol.Success {
		t.Fatalf("create topic: %s", r)
	}
	body := strings.Repeat("y", 40<<10) // 40 records: past the first 1 MiB segment
	for i := range n {
		if r := rc.call(sendReq(topic, 0, []byte(fmt.Sprintf("%02d-%s", i, body)), nil)); r.Code != protocol.Success {
			t.Fatalf("send %d: %s", i, r)
		}
	}
	r := rc.call(pullReq("g", topic, 0, 0, 32, 0, "*"))
	recs := decodeRecords(t, r.Body)
	if r.Code != protocol.Success || len(recs) < 5 {
		t.Fatalf("pull: %s, %d records", r, len(recs))
	}
	segSize := int64(m.cfg.MappedFileSizeCommitLog)
	if recs[4].PhysOffset >= segSize || m.store.WrittenOffset() <= segSize {
		t.Fatalf("record 4 at %d is not in a sealed segment (log ends at %d)", recs[4].PhysOffset, m.store.WrittenOffset())
	}
	for i, b := range []*Broker{s, m} { // the slave's damage first, then the master's
		victim := int64(2 + i)
		phys := recs[victim].PhysOffset
		waitLong(t, func() bool { return b.store.DurableOffset() >= segSize }, "the first segment durable")
		flipStoredByte(t, b, phys+200)
		bc := dialRaw(t, b.Addr())
		retries := 0
		waitLong(t, func() bool {
			r := bc.call(pullReq("g", topic, 0, victim, 1, 0, "*"))
			switch r.Code {
			case protocol.PullRetryImmediately:
				retries++
				return false
			case protocol.Success:
				got := decodeRecords(t, r.Body)
				if len(got) != 1 || got[0].QueueOffset != victim || !bytes.HasPrefix(got[0].Body, []byte(fmt.Sprintf("%02d-", victim))) {
					t.Fatalf("broker %d served %+v at %d", b.cfg.BrokerID, got, victim)
				}
				return true
			}
			t.Fatalf("broker %d: pull at the damaged record: %s", b.cfg.BrokerID, r)
			return false
		}, fmt.Sprintf("broker %d to serve the repaired record", b.cfg.BrokerID))
		if retries == 0 {
			// Served intact at once: the read came from an intact copy
			// the broker still held in memory, not from the damaged
			// file (seen once in a loaded CI run). Never served damaged is what holds;
			// the repair is not exercised on this broker this time
			// (TestRestartVerifiesBeforeRejoining always does).
			t.Logf("broker %d served record %d intact at once, from a copy held in memory", b.cfg.BrokerID, victim)
			continue
		}
		if mt := b.store.Metrics(); mt.RepairedBytes == 0 || len(b.store.Damaged()) != 0 || b.stats.corruptSkips.Load() != 0 {
			t.Fatalf("broker %d: repaired %d bytes, damaged %v, %d pulls moved past", b.cfg.BrokerID, mt.RepairedBytes,
				b.store.Damaged(), b.stats.corruptSkips.Load())
		}
	}
}

// flipStoredByte flips one byte of b's CommitLog at physical offset at,
// in its segment file, behind the store's back (damage at rest).
func flipStoredByte(t *testing.T, b *Broker, at int64) {
	t.Helper()
	segSize := int64(b.cfg.MappedFileSizeCommitLog)
	seg := filepath.Join(b.cfg.StorePathRootDir, "commitlog", fmt.Sprintf("%020d", at/segSize*segSize))
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1)
	if _, err := f.ReadAt(buf, at%segSize); err != nil {
		t.Fatal(err)
	}
	buf[0] ^= 0x20
	if _, err := f.WriteAt(buf, at%segSize); err != nil {
		t.Fatal(err)
	}
}

// TestRestartVerifiesBeforeRejoining: a slave stopped cleanly whose log
// was damaged while it was down (a clean restart scans nothing) finds the
// damage by reading back what was written since its last verified point,
// reports itself damaged (no candidate) until its master's copy repairs
// it, and then holds the record intact.
func TestRestartVerifiesBeforeRejoining(t *testing.T) {
	const topic, n = "rv", 40
	c := newCtlCluster(t, time.Hour)
	m := c.startGroup(2)
	rc := dialRaw(t, m.Addr())
	if r := rc.call(createTopicReq(topic, 1)); r.Code != protocol.Success {
		t.Fatalf("create topic: %s", r)
	}
	body := strings.Repeat("v", 40<<10) // past the first 1 MiB segment
	for i := range n {
		if r := rc.call(sendReq(topic, 0, []byte(fmt.Sprintf("%02d-%s", i, body)), nil)); r.Code != protocol.Success {
			t.Fatalf("send %d: %s", i, r)
		}
	}
	recs := decodeRecords(t, rc.call(pullReq("g", topic, 0, 0, 8, 0, "*")).Body)
	if len(recs) < 4 {
		t.Fatalf("pulled %d records", len(recs))
	}
	s := c.b[2]
	waitLong(t, func() bool { return s.store.DurableOffset() == m.store.WrittenOffset() }, "the slave to hold the whole log durably")
	c.kill(2)
	victim := recs[3].PhysOffset
	flipStoredByte(t, s, victim+200) // s's files; s itself is closed

	s = c.start(2)
	waitLong(t, func() bool {
		return s.store.Unverified() == 0 && s.store.Metrics().RepairedBytes > 0 && len(s.store.Damaged()) == 0
	}, "the restarted slave to verify its log and repair the damage from its master")
	if !c.logs[2].contains("startup verification found a bad record") {
		t.Fatalf("the damage was not found by the restart's verification:\n%s", c.logs[2])
	}
	r := dialRaw(t, s.Addr()).call(pullReq("g", topic, 0, 3, 1, 0, "*"))
	if got := decodeRecords(t, r.Body); r.Code != protocol.Success || len(got) != 1 || got[0].PhysOffset != victim ||
		!bytes.HasPrefix(got[0].Body, []byte("03-")) {
		t.Fatalf("the repaired record: %s %+v", r, got)
	}
}
