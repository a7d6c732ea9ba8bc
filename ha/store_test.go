package ha_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/ha"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// The ha link between two real stores (package storage), not the fake:
// what the broker runs.

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func storeOptions(fs vfs.FS, dir, be string, policy storage.FlushPolicy, interval time.Duration) storage.Options {
	return storage.Options{
		Dir:                 dir,
		FS:                  fs,
		Backend:             be,
		SegmentSize:         64 << 10,
		MaxMessageSize:      4 << 10,
		ConsumeQueueEntries: 64,
		Flush:               storage.FlushOptions{Policy: policy, Interval: interval, Timeout: time.Minute},
		Retention:           storage.RetentionOptions{MaxAge: -1, DiskRatio: -1, CheckInterval: time.Hour},
		CheckpointInterval:  time.Hour,
		Logger:              quiet,
	}
}

func openStore(t *testing.T, o storage.Options) *storage.Store {
	t.Helper()
	s, err := storage.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openEpochs(t *testing.T, fs vfs.FS, dir string) *ha.EpochFile {
	t.Helper()
	if err := fs.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	e, err := ha.OpenEpochFile(fs, filepath.Join(dir, "epochs"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var topics = []string{"orders", "payments", "audit"}

func message(rng *rand.Rand) *storage.Message {
	body := make([]byte, 1+rng.Intn(3000))
	rng.Read(body)
	topic := topics[rng.Intn(len(topics))]
	return &storage.Message{
		Topic:         topic,
		QueueID:       int32(rng.Intn(4)),
		Body:          body,
		Properties:    record.AppendProperty(nil, record.PropertyTags, "t"+topic),
		TagsCode:      record.TagsCode("t" + topic),
		BornTimestamp: 1700000000000,
		BornHost:      netip.MustParseAddrPort("127.0.0.1:5555"),
		StoreHost:     netip.MustParseAddrPort("127.0.0.1:10911"),
	}
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startMaster(t *testing.T, log *storage.Store, epochs *ha.EpochFile, addr string) *ha.Master {
	t.Helper()
	m, err := ha.NewMaster(ha.MasterConfig{Addr: addr, Log: log, Epochs: epochs, AckTimeout: time.Minute,
		HeartbeatInterval: 50 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func startSlave(t *testing.T, master func() string, log *storage.Store, epochs *ha.EpochFile) *ha.Slave {
	t.Helper()
	s, err := ha.NewSlave(ha.SlaveConfig{MasterAddr: master, BrokerID: 1, Log: log, Epochs: epochs,
		HeartbeatInterval: 50 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func inSync(m *ha.Master) bool {
	for _, s := range m.Slaves() {
		if s.InSync {
			return true
		}
	}
	return false
}

// sameLog checks the slave's CommitLog is the master's, byte for byte,
// from the slave's min offset to its written offset, and that both serve
// the same messages from every queue.
func sameLog(t *testing.T, m, s *storage.Store, where string) {
	t.Helper()
	lo, end := s.CommitLogMinOffset(), s.WrittenOffset()
	if end > m.WrittenOffset() {
		t.Fatalf("%s: slave at %d, past the master's %d", where, end, m.WrittenOffset())
	}
	// ReadLog on both walks the log record by record (a blank filler as
	// its header, as the master wrote it).
	bufA, bufB := make([]byte, m.MaxRecordSize()), make([]byte, s.MaxRecordSize())
	for off := lo; off < end; {
		na, nextA, errA := m.ReadLog(off, bufA)
		nb, nextB, errB := s.ReadLog(off, bufB)
		if errA != nil || errB != nil || nb == 0 {
			t.Fatalf("%s: ReadLog(%d): master %d, %v; slave %d, %v", where, off, na, errA, nb, errB)
		}
		if nb > na || !bytes.Equal(bufA[:nb], bufB[:nb]) || (nb == na && nextA != nextB) {
			t.Fatalf("%s: the logs differ from %d (master %d bytes to %d, slave %d to %d)", where, off, na, nextA, nb, nextB)
		}
		off = nextB
	}
	for _, topic := range topics {
		for q := int32(0); q < 4; q++ {
			// The master indexes in the background too: wait for it.
			eventually(t, fmt.Sprintf("%s: the master's %s/%d indexed as far as the slave's", where, topic, q), func() bool {
				return m.MaxQueueOffset(topic, q) >= s.MaxQueueOffset(topic, q)
			})
			for off := s.MinQueueOffset(topic, q); off < s.MaxQueueOffset(topic, q); {
				var rm storage.GetResult
				eventually(t, "the master serving what it indexed", func() bool {
					var err error
					if rm, err = m.GetMessages(topic, q, off, 32, 1<<20, nil); err != nil {
						t.Fatal(err)
					}
					return len(rm.Records) > 0
				})
				rs, err := s.GetMessages(topic, q, off, 32, 1<<20, nil)
				if err != nil {
					t.Fatal(err)
				}
				// Either read may stop early (a read returns what it has at
				// hand): compare what both returned, then go on from there.
				n := min(len(rs.QueueOffsets), len(rm.QueueOffsets))
				if n == 0 || fmt.Sprint(rs.QueueOffsets[:n]) != fmt.Sprint(rm.QueueOffsets[:n]) {
					t.Fatalf("%s: %s/%d at %d: slave offsets %v, master %v", where, topic, q, off, rs.QueueOffsets, rm.QueueOffsets)
				}
				for i, r := range rs.Records[:n] {
					if !bytes.Equal(r, rm.Records[i]) {
						t.Fatalf("%s: %s/%d offset %d: the records differ", where, topic, q, rs.QueueOffsets[i])
					}
				}
				off = rs.QueueOffsets[n-1] + 1
			}
		}
	}
}

// TestStoreReplication: producers on a SYNC_MASTER store get an answer
// only once the slave holds their records; the slave's log is the
// master's byte for byte, across segment rolls, a slave restart and a
// master restart (a new epoch).
func TestStoreReplication(t *testing.T) {
	for _, tc := range []struct {
		be     string
		policy storage.FlushPolicy
	}{{"pwrite", storage.FlushAsync}, {"pwrite", storage.FlushSync}, {"mmap", storage.FlushAsync}} {
		t.Run(fmt.Sprintf("%s-%s", tc.be, tc.policy), func(t *testing.T) {
			fs := vfs.Default
			dir := t.TempDir()
			mo := storeOptions(fs, filepath.Join(dir, "master"), tc.be, tc.policy, 5*time.Millisecond)
			so := storeOptions(fs, filepath.Join(dir, "slave"), tc.be, tc.policy, 5*time.Millisecond)
			ms, ss := openStore(t, mo), openStore(t, so)
			me, se := openEpochs(t, fs, filepath.Join(dir, "master")), openEpochs(t, fs, filepath.Join(dir, "slave"))
			master := startMaster(t, ms, me, "127.0.0.1:0")
			addr := master.Addr().String()
			slave := startSlave(t, func() string { return addr }, ss, se)
			eventually(t, "the slave in sync", func() bool { return inSync(master) })

			produce := func(seed int64, n int) {
				var wg sync.WaitGroup
				for p := 0; p < 8; p++ {
					wg.Add(1)
					go func(p int) {
						defer wg.Done()
						rng := rand.New(rand.NewSource(seed + int64(p)))
						for i := 0; i < n; i++ {
							res, err := ms.Append(context.Background(), message(rng))
							if err != nil {
								t.Error(err)
								return
							}
							end := res.PhysicalOffset + int64(res.Size)
							if err := master.WaitReplicated(end); err != nil {
								t.Errorf("WaitReplicated(%d): %v", end, err)
								return
							}
							if w := ss.WrittenOffset(); w < end {
								t.Errorf("acknowledged %d, the slave holds %d", end, w)
								return
							}
						}
					}(p)
				}
				wg.Wait()
			}
			produce(1, 60)
			if t.Failed() {
				return
			}
			eventually(t, "the slave caught up", func() bool { return ss.HandedOffset() == ms.HandedOffset() }) // handed: readable (under sync flush, once its flush round ends)
			sameLog(t, ms, ss, "first run")
			if ms.WrittenOffset() < 3*ms.SegmentSize() {
				t.Fatalf("only %d bytes: the test wants several segments", ms.WrittenOffset())
			}

			// The slave restarts and catches up. (The master drops the old
			// link first: an answer must come from the new one.)
			slave.Close()
			eventually(t, "the master dropping the old link", func() bool { return len(master.Slaves()) == 0 })
			ss.Close()
			ss = openStore(t, so)
			se = openEpochs(t, fs, filepath.Join(dir, "slave"))
			slave = startSlave(t, func() string { return addr }, ss, se)
			eventually(t, "the restarted slave in sync", func() bool { return inSync(master) })
			produce(100, 30)
			eventually(t, "the slave caught up again", func() bool { return ss.HandedOffset() == ms.HandedOffset() }) // handed: readable (under sync flush, once its flush round ends)
			sameLog(t, ms, ss, "after a slave restart")

			// The master restarts on the same address: a new epoch.
			master.Close()
			ms.Close()
			ms = openStore(t, mo)
			me = openEpochs(t, fs, filepath.Join(dir, "master"))
			master = startMaster(t, ms, me, addr)
			eventually(t, "the slave back in sync", func() bool { return inSync(master) })
			produce(200, 30)
			eventually(t, "the slave caught up after the master's restart", func() bool { return ss.HandedOffset() == ms.HandedOffset() }) // handed: readable (under sync flush, once its flush round ends)
			sameLog(t, ms, ss, "after a master restart")
			if got, want := len(se.Entries()), len(me.Entries()); got != want {
				t.Fatalf("slave epochs %v, master's %v", se.Entries(), me.Entries())
			}
			slave.Close()
			master.Close()
			ss.Close()
			ms.Close()
		})
	}
}

// TestDivergedSlave: an async master loses its unflushed tail in a power
// loss after the slave received it; restarted, it writes other records at
// those offsets. The slave cuts its tail back to the consistent point and
// follows again, byte for byte.
func TestDivergedSlave(t *testing.T) {
	mem := vfs.NewMem()
	mo := storeOptions(mem, "/master", "pwrite", storage.FlushAsync, time.Hour)
	so := storeOptions(vfs.NewMem(), "/slave", "pwrite", storage.FlushAsync, time.Hour)
	ms, ss := openStore(t, mo), openStore(t, so)
	me, se := openEpochs(t, mo.FS, "/master"), openEpochs(t, so.FS, "/slave")
	master := startMaster(t, ms, me, "127.0.0.1:0")
	addr := master.Addr().String()
	slave := startSlave(t, func() string { return addr }, ss, se)
	defer func() { slave.Close(); ss.Close() }()
	eventually(t, "the slave in sync", func() bool { return inSync(master) })

	rng := rand.New(rand.NewSource(7))
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		if _, err := ms.Append(ctx, message(rng)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms.FlushTo(ctx, ms.WrittenOffset()); err != nil { // a durable prefix
		t.Fatal(err)
	}
	durable := ms.WrittenOffset()
	for i := 0; i < 40; i++ { // an unflushed tail the slave receives
		if _, err := ms.Append(ctx, message(rng)); err != nil {
			t.Fatal(err)
		}
	}
	lost := ms.WrittenOffset()
	eventually(t, "the slave holding the tail", func() bool { return ss.WrittenOffset() == lost })

	// Power loss: only what was synced survives (nil rng: every unsynced
	// write is lost).
	master.Close()
	img := mem.CrashClone(nil)
	ms.Close()
	mo.FS = img
	ms = openStore(t, mo)
	defer ms.Close()
	if w := ms.WrittenOffset(); w < durable || w >= lost {
		t.Fatalf("after the power loss the master is at %d; want [%d, %d)", w, durable, lost)
	}
	me = openEpochs(t, img, "/master")
	// The master opens its new epoch before it takes an append (as the
	// broker does), then writes other records where the lost ones were.
	master = startMaster(t, ms, me, addr)
	defer master.Close()
	for i := 0; i < 40; i++ {
		if _, err := ms.Append(ctx, message(rng)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the slave following the new master", func() bool {
		return ss.HandedOffset() == ms.HandedOffset() && inSync(master)
	})
	sameLog(t, ms, ss, "after the divergence")
}

// TestSlaveNotAvailable: a SYNC_MASTER with no slave answers at once, and
// a stalled slave makes the wait time out without touching the store.
func TestSlaveNotAvailable(t *testing.T) {
	ms := openStore(t, storeOptions(vfs.NewMem(), "/master", "pwrite", storage.FlushAsync, 5*time.Millisecond))
	defer ms.Close()
	me := openEpochs(t, ms.Options().FS, "/master")
	master, err := ha.NewMaster(ha.MasterConfig{Addr: "127.0.0.1:0", Log: ms, Epochs: me, AckTimeout: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	res, err := ms.Append(context.Background(), message(rand.New(rand.NewSource(1))))
	if err != nil {
		t.Fatal(err)
	}
	if err := master.WaitReplicated(res.PhysicalOffset + int64(res.Size)); !errors.Is(err, ha.ErrSlaveNotAvailable) {
		t.Fatalf("no slave: %v, want ErrSlaveNotAvailable", err)
	}
}
