package ha

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

const (
	testSeg    = 64 << 10
	testMaxRec = 4 << 10
)

// node is one broker's replication state: its log and epoch file.
type node struct {
	log    *memLog
	fs     *vfs.MemFS
	epochs *EpochFile
}

func newNode(t *testing.T, seg int64) *node {
	t.Helper()
	n := &node{log: newMemLog(seg, testMaxRec), fs: vfs.NewMem()}
	n.epochs = openEpochs(t, n.fs)
	return n
}

// reopenEpochs reopens the epoch file, as a broker restart does.
func (n *node) reopenEpochs(t *testing.T) { n.epochs = openEpochs(t, n.fs) }

func startMaster(t *testing.T, n *node, addr string, mod func(*MasterConfig)) *Master {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	cfg := MasterConfig{Addr: addr, Log: n.log, Epochs: n.epochs, Logger: quietLogger()}
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewMaster(cfg)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// addrOf is a MasterAddr func that follows whatever address it is set to.
type addrOf struct{ v atomic.Value }

func (a *addrOf) set(s string) { a.v.Store(s) }
func (a *addrOf) get() string  { s, _ := a.v.Load().(string); return s }

func masterAddr(m *Master) *addrOf {
	a := &addrOf{}
	a.set(m.Addr().String())
	return a
}

func startSlave(t *testing.T, n *node, id int64, addr *addrOf, mod func(*SlaveConfig)) *Slave {
	t.Helper()
	cfg := SlaveConfig{MasterAddr: addr.get, BrokerID: id, Log: n.log, Epochs: n.epochs,
		BackoffMax: 200 * 1e6, Logger: quietLogger()}
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewSlave(cfg)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// linked starts a master and a slave (id 1) following it, on new nodes.
func linked(t *testing.T, slaveMod func(*SlaveConfig)) (mn, sn *node, m *Master, addr *addrOf, s *Slave) {
	t.Helper()
	mn, sn = newNode(t, testSeg), newNode(t, testSeg)
	m = startMaster(t, mn, "", nil)
	addr = masterAddr(m)
	s = startSlave(t, sn, 1, addr, slaveMod)
	return mn, sn, m, addr, s
}

// fill appends count records of random sizes (seeded) and returns the
// log's end.
func fill(l *memLog, rng *rand.Rand, count int, tag byte) int64 {
	var end int64
	for i := 0; i < count; i++ {
		p := make([]byte, rng.Intn(testMaxRec-recHeader))
		for j := range p {
			p[j] = tag + byte(j)
		}
		end = l.Append(p)
	}
	return end
}

// caughtUp waits until the slave's log ends where the master's does and
// both hold the same bytes over the range both retain.
func caughtUp(t *testing.T, master, slave *memLog) {
	t.Helper()
	waitFor(t, "slave to catch up", func() bool { return slave.WrittenOffset() == master.HandedOffset() })
	sameBytes(t, master, slave)
}

func sameBytes(t *testing.T, a, b *memLog) {
	t.Helper()
	from := max(a.CommitLogMinOffset(), b.CommitLogMinOffset())
	to := min(a.WrittenOffset(), b.WrittenOffset())
	if !bytes.Equal(a.bytes(from, to), b.bytes(from, to)) {
		t.Fatalf("logs differ in [%d, %d)", from, to)
	}
}

func seeded(t *testing.T) *rand.Rand {
	seed := int64(rand.Uint32())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewSource(seed))
}

func TestReplicateByteIdentical(t *testing.T) {
	rng := seeded(t)
	mn, sn := newNode(t, testSeg), newNode(t, testSeg)
	fill(mn.log, rng, 300, 1) // before the slave connects
	m := startMaster(t, mn, "", nil)
	s := startSlave(t, sn, 1, masterAddr(m), nil)
	fill(mn.log, rng, 700, 2) // while it follows: ~1.4 MiB over ~20 segments
	caughtUp(t, mn.log, sn.log)
	if mn.log.CommitLogMinOffset() != 0 || sn.log.CommitLogMinOffset() != 0 {
		t.Fatal("a new slave copies from the master's oldest byte")
	}
	if got, want := sn.epochs.Entries(), mn.epochs.Entries(); !slices.Equal(got, want) {
		t.Fatalf("slave epochs %v, master %v", got, want)
	}
	waitFor(t, "acknowledged", func() bool {
		ss := m.Slaves()
		return len(ss) == 1 && ss[0].AckOffset == mn.log.HandedOffset()
	})
	st := m.Slaves()[0]
	if st.BrokerID != 1 || !st.InSync || st.LagBytes != 0 || st.LagTime != 0 {
		t.Fatalf("status %+v", st)
	}
	if c := m.ConfirmOffset(); c != mn.log.HandedOffset() {
		t.Fatalf("confirm offset %d, handed %d", c, mn.log.HandedOffset())
	}
	if ls := s.Status(); !ls.Connected || ls.Offset != mn.log.HandedOffset() || ls.Reconnects != 0 {
		t.Fatalf("slave status %+v", ls)
	}
}

// A slave that was away catches up, across the master's restart: the
// stream crosses an epoch boundary, which no frame spans.
func TestSlaveRestartCatchUp(t *testing.T) {
	rng := seeded(t)
	mn, sn, m, addr, s := linked(t, nil)
	fill(mn.log, rng, 100, 1)
	caughtUp(t, mn.log, sn.log)
	s.Close()

	fill(mn.log, rng, 100, 2) // epoch 1 goes on without the slave
	m.Close()
	m = startMaster(t, mn, "", nil) // epoch 2
	addr.set(m.Addr().String())
	fill(mn.log, rng, 100, 3)

	sn.reopenEpochs(t)
	startSlave(t, sn, 1, addr, nil)
	caughtUp(t, mn.log, sn.log)
	if got, want := sn.epochs.Entries(), mn.epochs.Entries(); len(want) != 2 || !slices.Equal(got, want) {
		t.Fatalf("slave epochs %v, master %v", got, want)
	}
}

// An async master loses the tail of its log in a crash (the slave had
// copied it), restarts, and writes on: the slave cuts its diverged tail
// at the consistent point and follows.
func TestDivergedSlaveTruncated(t *testing.T) {
	rng := seeded(t)
	logs := &logCapture{}
	mn, sn, m, addr, _ := linked(t, func(c *SlaveConfig) { c.Logger = slog.New(logs) })
	keep := fill(mn.log, rng, 200, 1)
	fill(mn.log, rng, 50, 2) // the tail the master will lose
	caughtUp(t, mn.log, sn.log)
	slaveEnd := sn.log.WrittenOffset()
	m.Close()

	must(t, mn.log.TruncateTo(keep)) // the crash took the tail
	mn.reopenEpochs(t)
	m = startMaster(t, mn, "", nil)
	fill(mn.log, rng, 80, 3) // different bytes where the slave has the lost tail
	if mn.log.WrittenOffset() <= slaveEnd {
		fill(mn.log, rng, 80, 4)
	}
	addr.set(m.Addr().String())
	caughtUp(t, mn.log, sn.log)
	if got, want := sn.epochs.Entries(), mn.epochs.Entries(); !slices.Equal(got, want) {
		t.Fatalf("slave epochs %v, master %v", got, want)
	}
	if !logs.has("cut its diverged tail", fmt.Sprintf("from=%d", slaveEnd), fmt.Sprintf("to=%d", keep)) || logs.has("afresh") {
		t.Fatalf("the slave did not cut its tail from %d to %d: %q", slaveEnd, keep, logs.lines)
	}
}

func TestSegmentSizeMismatchRefused(t *testing.T) {
	mn, sn := newNode(t, testSeg), newNode(t, 2*testSeg)
	m := startMaster(t, mn, "", nil)
	s := startSlave(t, sn, 1, masterAddr(m), nil)
	waitFor(t, "refusal", func() bool { return errors.Is(s.Status().LastError, ErrRefused) })
	if st := s.Status(); st.Connected || len(m.Slaves()) != 0 {
		t.Fatalf("refused slave linked: %+v, master sees %v", st, m.Slaves())
	}
	t.Log(s.Status().LastError)
}

func TestWaitReplicated(t *testing.T) {
	rng := seeded(t)
	mn, sn := newNode(t, testSeg), newNode(t, testSeg)
	m := startMaster(t, mn, "", func(c *MasterConfig) { c.AckTimeout = 300 * 1e6 })
	end := fill(mn.log, rng, 10, 1)
	if err := m.WaitReplicated(end); !errors.Is(err, ErrSlaveNotAvailable) {
		t.Fatalf("no slave: %v", err)
	}
	fault := &Fault{}
	startSlave(t, sn, 1, masterAddr(m), func(c *SlaveConfig) { c.Fault = fault })
	waitFor(t, "slave linked", func() bool { return len(m.Slaves()) == 1 })
	for i := 0; i < 20; i++ {
		end = fill(mn.log, rng, 5, byte(i))
		if err := m.WaitReplicated(end); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	caughtUp(t, mn.log, sn.log)
	fault.Stall()
	end = fill(mn.log, rng, 1, 9)
	if err := m.WaitReplicated(end); !errors.Is(err, ErrSlaveTimeout) {
		t.Fatalf("stalled slave: %v", err)
	}
	fault.Resume()
	if err := m.WaitReplicated(end); err != nil {
		t.Fatalf("after resume: %v", err)
	}
	m.Close()
	if err := m.WaitReplicated(end + 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed master: %v", err)
	}
}

// ASYNC_MASTER: a hung slave holds up nothing. The log grows far past what
// the socket holds, status calls answer, and Close returns.
func TestStalledSlaveBlocksNothing(t *testing.T) {
	rng := seeded(t)
	mn, sn := newNode(t, 1<<20), newNode(t, 1<<20)
	m := startMaster(t, mn, "", nil)
	fault := &Fault{}
	startSlave(t, sn, 1, masterAddr(m), func(c *SlaveConfig) { c.Fault = fault })
	waitFor(t, "slave linked", func() bool { return len(m.Slaves()) == 1 })
	fault.Stall()
	fill(mn.log, rng, 10_000, 1) // ~20 MiB
	st := m.Slaves()
	if len(st) != 1 || st[0].LagBytes <= 0 {
		t.Fatalf("status %+v", st)
	}
	_ = m.ConfirmOffset()
	fault.Resume()
	caughtUp(t, mn.log, sn.log)
	fault.Stall()
	fill(mn.log, rng, 2000, 2)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReconnectAfterMasterRestart(t *testing.T) {
	rng := seeded(t)
	mn, sn, m, _, s := linked(t, nil)
	addr := m.Addr().String()
	fill(mn.log, rng, 100, 1)
	caughtUp(t, mn.log, sn.log)
	m.Close()
	waitFor(t, "slave to notice", func() bool { return !s.Status().Connected })
	mn.reopenEpochs(t)
	startMaster(t, mn, addr, nil) // same address (closed by its cleanup)
	fill(mn.log, rng, 100, 2)
	caughtUp(t, mn.log, sn.log)
	if got, want := sn.epochs.Entries(), mn.epochs.Entries(); len(want) != 2 || !slices.Equal(got, want) {
		t.Fatalf("slave epochs %v, master %v", got, want)
	}
	if st := s.Status(); st.Reconnects == 0 || !st.Connected {
		t.Fatalf("status %+v", st)
	}
}

// A record corrupted on the wire fails its CRC: the slave drops the link,
// reconnects and copies it again.
func TestBadRecordDropsLink(t *testing.T) {
	rng := seeded(t)
	fault := &Fault{}
	fault.CorruptNext(2)
	mn, sn, _, _, s := linked(t, func(c *SlaveConfig) { c.Fault = fault })
	fill(mn.log, rng, 200, 1)
	caughtUp(t, mn.log, sn.log)
	if st := s.Status(); st.Reconnects < 2 || !errors.Is(st.LastError, errMismatch) {
		t.Fatalf("status %+v", st)
	}
}

// A slave that was away longer than the master's retention copies the
// master's log afresh from its oldest byte.
func TestSlaveBehindRetention(t *testing.T) {
	rng := seeded(t)
	mn, sn, _, addr, s := linked(t, nil)
	fill(mn.log, rng, 50, 1)
	caughtUp(t, mn.log, sn.log)
	s.Close()
	end := fill(mn.log, rng, 400, 2)
	mn.log.trimTo(end - end%testSeg - testSeg)
	sn.reopenEpochs(t)
	logs := &logCapture{}
	startSlave(t, sn, 1, addr, func(c *SlaveConfig) { c.Logger = slog.New(logs) })
	caughtUp(t, mn.log, sn.log)
	if !logs.has("afresh", "no longer retains") {
		t.Fatalf("no fresh copy logged: %q", logs.lines)
	}
	if sn.log.CommitLogMinOffset() != mn.log.CommitLogMinOffset() {
		t.Fatalf("slave starts at %d, master at %d", sn.log.CommitLogMinOffset(), mn.log.CommitLogMinOffset())
	}
}

// FromLastSegment: a new slave starts at the master's last segment base.
func TestFromLastSegment(t *testing.T) {
	rng := seeded(t)
	mn, sn := newNode(t, testSeg), newNode(t, testSeg)
	end := fill(mn.log, rng, 200, 1)
	m := startMaster(t, mn, "", nil)
	startSlave(t, sn, 1, masterAddr(m), func(c *SlaveConfig) { c.FromLastSegment = true })
	caughtUp(t, mn.log, sn.log)
	if got, want := sn.log.CommitLogMinOffset(), end-end%testSeg; got != want {
		t.Fatalf("slave starts at %d, want %d", got, want)
	}
}

// SYNC_MASTER under concurrency: many producers append and wait at once;
// every wait is released by the slave's acknowledgements.
func TestConcurrentWaitersOverTheLink(t *testing.T) {
	mn, sn, m, _, _ := linked(t, func(c *SlaveConfig) { c.AckFlushed = true })
	waitFor(t, "slave linked", func() bool { return len(m.Slaves()) == 1 })
	const producers, each = 16, 40
	errs := make(chan error, producers)
	for p := 0; p < producers; p++ {
		go func() {
			payload := bytes.Repeat([]byte{byte(p)}, 100+p)
			for i := 0; i < each; i++ {
				if err := m.WaitReplicated(mn.log.Append(payload)); err != nil {
					errs <- fmt.Errorf("producer %d, write %d: %w", p, i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for p := 0; p < producers; p++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	caughtUp(t, mn.log, sn.log)
	// AckFlushed: what the slave acknowledged is durable there.
	if d, a := sn.log.DurableOffset(), m.Slaves()[0].AckOffset; d < a {
		t.Fatalf("slave acknowledged %d with %d durable", a, d)
	}
}

// An epoch file that cannot be written drops the link (the data it would
// cover is not appended); the slave retries and goes on.
func TestEpochWriteFailureDropsLink(t *testing.T) {
	rng := seeded(t)
	mn := newNode(t, testSeg)
	sn := &node{log: newMemLog(testSeg, testMaxRec), fs: vfs.NewMem()}
	efs := errorfs.Wrap(sn.fs, errorfs.Rule{Op: errorfs.OpSync, Path: "epoch"})
	sn.epochs = openEpochs(t, efs)
	m := startMaster(t, mn, "", nil)
	s := startSlave(t, sn, 1, masterAddr(m), nil)
	fill(mn.log, rng, 50, 1)
	caughtUp(t, mn.log, sn.log)
	if st := s.Status(); st.Reconnects == 0 || !errors.Is(st.LastError, errorfs.ErrInjected) {
		t.Fatalf("status %+v", st)
	}
}

// A lost epoch file is read conservatively: whichever side lost it, the
// slave cannot prove its log matches and copies the master's afresh.
func TestLostEpochFileCopiesAfresh(t *testing.T) {
	for _, side := range []string{"master", "slave"} {
		t.Run(side, func(t *testing.T) {
			rng := seeded(t)
			mn, sn, m, addr, s := linked(t, nil)
			fill(mn.log, rng, 100, 1)
			caughtUp(t, mn.log, sn.log)
			s.Close()
			m.Close()
			lost, reason := mn, "no epoch in common"
			if side == "slave" {
				lost, reason = sn, "no epoch history"
			}
			must(t, lost.fs.Remove(epochPath))
			mn.reopenEpochs(t)
			sn.reopenEpochs(t)
			m = startMaster(t, mn, "", nil)
			addr.set(m.Addr().String())
			fill(mn.log, rng, 20, 2)
			logs := &logCapture{}
			startSlave(t, sn, 1, addr, func(c *SlaveConfig) { c.Logger = slog.New(logs) })
			caughtUp(t, mn.log, sn.log)
			if !logs.has("afresh", reason) {
				t.Fatalf("no fresh copy for %q: %q", reason, logs.lines)
			}
			if got, want := sn.epochs.Entries(), mn.epochs.Entries(); !slices.Equal(got, want) {
				t.Fatalf("slave epochs %v, master %v", got, want)
			}
		})
	}
}

// Records larger than the batch size go one a frame, whether the log
// answers a short buffer with io.ErrShortBuffer or with 0, nil.
func TestRecordsAboveBatchSize(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quietShort=%t", quiet), func(t *testing.T) {
			rng := seeded(t)
			mn, sn := newNode(t, testSeg), newNode(t, testSeg)
			mn.log.quietShort = quiet
			m := startMaster(t, mn, "", func(c *MasterConfig) { c.TransferBatchSize = 1024 })
			startSlave(t, sn, 1, masterAddr(m), nil)
			fill(mn.log, rng, 300, 1) // most records exceed 1 KiB
			caughtUp(t, mn.log, sn.log)
		})
	}
}

// A slave far behind gets frames of up to catchUpBatch (what it said it
// takes permitting); it still ends byte-identical, and the head of the log
// goes in TransferBatchSize frames again once it is close.
func TestFarBehindSlaveGetsLargeFrames(t *testing.T) {
	rng := seeded(t)
	mn, sn := newNode(t, 4<<20), newNode(t, 4<<20)
	for mn.log.HandedOffset() < 3*catchUpGap/2 {
		fill(mn.log, rng, 500, 3)
	}
	m := startMaster(t, mn, "", nil)
	startSlave(t, sn, 1, masterAddr(m), func(c *SlaveConfig) { c.MaxBatchSize = 2 * catchUpBatch })
	caughtUp(t, mn.log, sn.log)
	fill(mn.log, rng, 300, 4)
	caughtUp(t, mn.log, sn.log)
	if got := sn.log.appends(); got >= int(mn.log.HandedOffset()/DefaultTransferBatchSize) {
		t.Fatalf("%d appends for %d bytes: the catch-up did not use large frames", got, mn.log.HandedOffset())
	}
}

// TestKickEndsBackoff: a slave backing off while its master's address is
// unknown dials as soon as Kick says it changed, however long the
// back-off (an hour here: without the kick it would not link in the
// test's lifetime).
func TestKickEndsBackoff(t *testing.T) {
	mn, sn := newNode(t, testSeg), newNode(t, testSeg)
	fill(mn.log, seeded(t), 50, 1)
	m := startMaster(t, mn, "", nil)
	addr := &addrOf{}
	addr.set("")
	s := startSlave(t, sn, 1, addr, func(c *SlaveConfig) { c.BackoffMin, c.BackoffMax = time.Hour, time.Hour })
	waitFor(t, "the first attempt to fail", func() bool { return s.Status().LastError != nil })
	addr.set(m.Addr().String())
	s.Kick()
	caughtUp(t, mn.log, sn.log)
}

// The slave holds messages its group acknowledged (its acked mark) that
// the new master lacks: it refuses to cut them and keeps its log until an
// unclean decision gives its lineage up, then cuts and follows.
func TestSlaveRefusesToCutAcknowledged(t *testing.T) {
	rng := seeded(t)
	logs := &logCapture{}
	mark, err := OpenAckedMark(vfs.NewMem(), "/acked")
	must(t, err)
	var given atomic.Bool
	var asked atomic.Uint64
	mn, sn, m, addr, s := linked(t, func(c *SlaveConfig) {
		c.Logger = slog.New(logs)
		c.Acked = mark
		c.MayCutAcked = func(lineage uint64) bool { asked.Store(lineage); return given.Load() }
	})
	keep := fill(mn.log, rng, 200, 1)
	fill(mn.log, rng, 50, 2) // acknowledged, then lost by the master
	caughtUp(t, mn.log, sn.log)
	slaveEnd := sn.log.WrittenOffset()
	must(t, mark.Raise(slaveEnd))
	m.Close()

	must(t, mn.log.TruncateTo(keep))
	mn.reopenEpochs(t)
	m = startMaster(t, mn, "", nil)
	fill(mn.log, rng, 80, 3)
	addr.set(m.Addr().String())
	waitFor(t, "the refusal", func() bool { return s.Status().CutRefused })
	if !errors.Is(s.Status().LastError, ErrCutRefused) || sn.log.WrittenOffset() != slaveEnd || mark.Value() != slaveEnd {
		t.Fatalf("refused, yet: err %v, log end %d (was %d), mark %d", s.Status().LastError, sn.log.WrittenOffset(), slaveEnd, mark.Value())
	}
	// The status turns before the line is logged: wait for the line.
	waitFor(t, "the refusal logged and the lineage asked", func() bool { return logs.has("refusing to cut") && asked.Load() != 0 })

	given.Store(true) // the operator's unclean decision
	s.Kick()
	caughtUp(t, mn.log, sn.log)
	if s.Status().CutRefused || mark.Value() != keep {
		t.Fatalf("after the decision: refused %v, mark %d (want %d)", s.Status().CutRefused, mark.Value(), keep)
	}
}
