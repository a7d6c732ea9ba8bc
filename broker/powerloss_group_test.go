package broker

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// TestWholeGroupPowerLoss measures the promise README's fail-over section
// writes down: three controller-mode replicas, each on a file system of
// its own that can lose power (vfs.MemFS.CrashClone with no seed: every
// unsynced byte of every replica is lost at once, the harshest outcome),
// take sends; then the whole group loses power and comes back. With
// SYNC_FLUSH nothing acknowledged is lost; otherwise only acknowledged
// messages that no replica kept are lost (none that any replica's disk
// held). When every replica lacks what the group is known to have
// acknowledged the controller elects no one and says so, and the
// operator's unclean election picks the replica that kept the most; the
// controller learns what was acknowledged from the master's heartbeats,
// so the last interval's acknowledgements can be lost with no unclean
// election (they were on no disk).
func TestWholeGroupPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		role  BrokerRole
		flush FlushDiskType
	}{{SyncMaster, SyncFlush}, {SyncMaster, AsyncFlush}, {AsyncMaster, AsyncFlush}} {
		t.Run(fmt.Sprintf("%s/%s", tc.role, tc.flush), func(t *testing.T) {
			lost, kept, acked, unclean := wholeGroupPowerLoss(t, tc.role, tc.flush)
			t.Logf("%s %s: %d acknowledged, %d lost, of which %d a replica's disk held; unclean election needed: %v",
				tc.role, tc.flush, acked, lost, kept, unclean)
			if kept != 0 {
				t.Errorf("%d acknowledged messages lost although a replica's disk held them", kept)
			}
			if tc.flush == SyncFlush && (lost != 0 || unclean) {
				t.Errorf("SYNC_FLUSH: %d acknowledged messages lost to a power loss (unclean election: %v)", lost, unclean)
			}
		})
	}
}

func wholeGroupPowerLoss(t *testing.T, role BrokerRole, flush FlushDiskType) (lost, kept, acked int, unclean bool) {
	const topic, n = "pl", 600
	fss := map[int64]*vfs.MemFS{1: vfs.NewMem(), 2: vfs.NewMem(), 3: vfs.NewMem()}
	c := newCtlCluster(t, 1500*time.Millisecond)
	t.Cleanup(func() {
		if t.Failed() {
			c.ctl.mu.Lock()
			t.Logf("controller results:\n%s\npending: %s", strings.Join(c.ctl.log, "\n"), c.ctl.m.Pending(ctlGroup))
			c.ctl.mu.Unlock()
			for id, l := range c.logs {
				t.Logf("broker %d log (tail):\n%s", id, tailLines(l.String(), 15))
			}
		}
	})
	c.mutate = map[int64]func(*Config){}
	for id := range fss {
		c.mutate[id] = func(cfg *Config) { cfg.FS = fss[id]; cfg.FlushDiskType = flush; cfg.BrokerRole = role }
	}
	m := c.startGroup(3)
	rc := dialRaw(t, m.Addr())
	if r := rc.call(createTopicReq(topic, 1)); r.Code != protocol.Success {
		t.Fatalf("create topic: %s", r)
	}
	var ackedBodies []string
	pad := strings.Repeat("p", 200)
	for i := range n {
		time.Sleep(3 * time.Millisecond) // 2 s of sends or more: async flushes (every 500 ms) run between them
		body := fmt.Sprintf("m%05d-%s", i, pad)
		if r := rc.call(sendReq(topic, 0, []byte(body), nil)); r.Code == protocol.Success {
			ackedBodies = append(ackedBodies, body)
		}
	}
	if len(ackedBodies) < n/2 {
		t.Fatalf("only %d of %d sends acknowledged", len(ackedBodies), n)
	}
	// The power goes on every replica at once: what each disk holds is
	// what was synced.
	crashed := map[int64]*vfs.MemFS{}
	for id, fs := range fss {
		crashed[id] = fs.CrashClone(nil)
	}
	for id := range fss {
		c.kill(id)
	}
	onDisk := map[string]bool{}
	for id, fs := range crashed {
		for _, b := range logBodies(t, fs, filepath.Join(c.dirs[id], "commitlog")) {
			onDisk[b] = true
		}
		c.mutate[id] = func(cfg *Config) { cfg.FS = crashed[id]; cfg.FlushDiskType = flush; cfg.BrokerRole = role }
	}
	for _, id := range []int64{1, 2, 3} {
		c.start(id)
	}
	// Every replica may have lost acknowledged messages (under async
	// flush): the controller then elects no one and says only an unclean
	// election can; the operator's choice is that election.
	waitLong(t, func() bool {
		c.ctl.mu.Lock()
		defer c.ctl.mu.Unlock()
		r, _ := c.ctl.m.State().Show(ctlGroup)
		if r.MasterID != controller.NoMaster {
			return true
		}
		if strings.Contains(c.ctl.m.Pending(ctlGroup), "only an unclean election") {
			e := c.ctl.m.Elect(ctlGroup, time.Now())
			e.Unclean = true
			r, err := c.ctl.m.Apply(e, time.Now())
			unclean = err == nil && r.Unclean
		}
		return false
	}, "a master, or the controller's word that only an unclean election can elect one")
	m = c.waitMaster(-1)
	got := map[string]bool{}
	pc := dialRaw(t, m.Addr())
	for off, tries := int64(0), 0; tries < 1000; tries++ {
		r := pc.call(pullReq("g", topic, 0, off, 32, 0, "*"))
		if r.Code != protocol.Success {
			break
		}
		for _, rec := range decodeRecords(t, r.Body) {
			got[string(rec.Body)] = true
		}
		off = ext64(t, r, "nextBeginOffset")
	}
	for _, b := range ackedBodies {
		if !got[b] {
			lost++
			if onDisk[b] {
				kept++
			}
		}
	}
	return lost, kept, len(ackedBodies), unclean
}

// logBodies returns the bodies of the valid records of the CommitLog in
// dir on fs, in order, up to the first invalid one of each segment (as
// recovery reads them).
func logBodies(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		return nil // no log at all
	}
	var out []string
	for _, name := range names {
		base, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		f, err := fs.Open(filepath.Join(dir, name), vfs.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		data := make([]byte, size)
		_, _ = f.ReadAt(data, 0)
		_ = f.Close()
		for p := 0; p+record.BlankSize <= len(data); {
			sz, magic, err := record.Header(data[p:])
			if err != nil || magic != record.MagicMessage || p+int(sz) > len(data) {
				break
			}
			var r record.Record
			if _, err := record.Validate(data[p:p+int(sz)], base+int64(p)); err != nil {
				break
			}
			if err := record.DecodeUnchecked(data[p:p+int(sz)], &r); err != nil {
				break
			}
			out = append(out, string(r.Body))
			p += int(sz)
		}
	}
	return out
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
