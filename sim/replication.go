package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/samsamq/samsa/ha"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// Options shape a replication run.
type Options struct {
	// Seed chooses the workload and the fault schedule.
	Seed int64
	// Steps is how many workload or fault steps run (default 60).
	Steps int
	// Backend is the stores' write path (default pwrite).
	Backend string
	// Flush is the stores' flush policy (the zero value: async).
	Flush storage.FlushPolicy

	// sabotage, in this package's tests, breaks the system on purpose
	// so the checks can be seen to catch it: the master loses its last
	// acknowledged record at each of its crashes.
	sabotage bool
}

// Result is what a run did.
type Result struct {
	Seed   int64
	Acked  int      // records acknowledged (written and replicated)
	Faults int      // faults injected
	Trace  []string // what happened, in order, on the virtual clock
}

// Violation is a broken invariant: the seed and the trace replay it.
type Violation struct {
	Invariant string
	Detail    string
	Seed      int64
	Trace     []string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("sim: invariant %q broken: %s\nseed %d; trace:\n  %s", v.Invariant, v.Detail, v.Seed, strings.Join(v.Trace, "\n  "))
}

// The invariants a replication run checks, named as they are reported.
const (
	// An acknowledged record (appended, and its replication to the slave
	// confirmed) is on the master at its offset, byte for byte, after any
	// process crash of either node.
	InvAckedKept = "acknowledged record kept"
	// Once healed and caught up, the slave's log is the master's byte for
	// byte: no record the master lacks, none altered, none out of place.
	InvSameLog = "slave log equals master log"
	// Every master epoch is above the last.
	InvEpochRises = "master epochs rise"
	// The run makes progress: after the last heal the slave catches up.
	InvCatchUp = "slave catches up"
)

const (
	masterNode = "master"
	slaveNode  = "slave"
	masterAddr = "master:10912"
)

// node is one broker's state in the run: its file system (what survives
// its crashes), its store and its replication role.
type node struct {
	name   string
	fs     *vfs.MemFS
	store  *storage.Store
	epochs *ha.EpochFile
	master *ha.Master
	slave  *ha.Slave
}

// run is one replication run's state.
type run struct {
	o      Options
	rng    *rand.Rand
	net    *Net
	start  time.Time
	trace  []string
	m, s   *node
	acked  map[int64][]byte // physical offset -> the acknowledged record
	epochs []uint64
	lg     *slog.Logger
}

func (r *run) tracef(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf("%8.3fs ", time.Since(r.start).Seconds())+fmt.Sprintf(format, args...))
}

func (r *run) violation(inv, format string, args ...any) error {
	return &Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...), Seed: r.o.Seed, Trace: r.trace}
}

// Replication runs a master and a slave with synchronous replication over
// an in-memory network, each on its own crash-simulating file system,
// under the seed's schedule of appends and faults: partitions, slow
// links (every write delayed), process
// crashes (what the kernel holds survives) and power losses (only what
// was synced survives, torn at random) of the slave, process crashes of
// the master, and its power losses under sync flush. It checks the invariants above as it goes and at the end.
// Run it inside testing/synctest's bubble for virtual time (seconds of
// timeouts cost nothing); outside it runs in real time.
func Replication(o Options) (*Result, error) {
	if o.Steps == 0 {
		o.Steps = 60
	}
	if o.Backend == "" {
		o.Backend = "pwrite"
	}
	r := &run{o: o, rng: rand.New(rand.NewSource(o.Seed)), net: NewNet(), start: time.Now(),
		acked: map[int64][]byte{}, lg: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r.m = &node{name: masterNode, fs: vfs.NewMem()}
	r.s = &node{name: slaveNode, fs: vfs.NewMem()}
	defer r.closeAll()
	if err := r.open(r.m); err != nil {
		return nil, err
	}
	if err := r.open(r.s); err != nil {
		return nil, err
	}
	res := &Result{Seed: o.Seed}
	for step := 0; step < o.Steps; step++ {
		var err error
		switch p := r.rng.Intn(100); {
		case p < 60:
			err = r.appendBatch(1 + r.rng.Intn(20))
		case p < 66:
			res.Faults++
			err = r.partition()
		case p < 72:
			res.Faults++
			err = r.slowLink()
		case p < 82:
			res.Faults++
			err = r.crash(r.s, false)
		case p < 90:
			res.Faults++
			err = r.crash(r.s, true)
		case p < 96 || o.Flush != storage.FlushSync:
			res.Faults++
			err = r.crash(r.m, false)
		default:
			// Only under sync flush: an acknowledged record was synced on
			// the master too, so its power loss keeps it (under async
			// flush it may not, and with static roles no election picks
			// the slave's longer log: the controller's part).
			res.Faults++
			err = r.crash(r.m, true)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := r.finish(); err != nil {
		return nil, err
	}
	res.Acked, res.Trace = len(r.acked), r.trace
	return res, nil
}

func (r *run) storeOptions(n *node) storage.Options {
	return storage.Options{
		Dir: "/" + n.name, FS: n.fs, Backend: r.o.Backend,
		SegmentSize: 64 << 10, MaxMessageSize: 4 << 10, ConsumeQueueEntries: 64,
		Flush:              storage.FlushOptions{Policy: r.o.Flush, Interval: 5 * time.Millisecond, Timeout: time.Minute},
		Retention:          storage.RetentionOptions{MaxAge: -1, DiskRatio: -1, CheckInterval: time.Hour},
		CheckpointInterval: time.Hour,
		Logger:             r.lg,
	}
}

// open starts n's store and its role on its file system.
func (r *run) open(n *node) error {
	st, err := storage.Open(r.storeOptions(n))
	if err != nil {
		return fmt.Errorf("sim: open %s's store: %w", n.name, err)
	}
	n.store = st
	if err := n.fs.MkdirAll("/" + n.name); err != nil {
		return err
	}
	if n.epochs, err = ha.OpenEpochFile(n.fs, filepath.Join("/"+n.name, "epochs"), r.lg); err != nil {
		return fmt.Errorf("sim: %s's epochs: %w", n.name, err)
	}
	if n == r.m {
		ln, err := r.net.Listen(masterNode, masterAddr)
		if err != nil {
			return err
		}
		if n.master, err = ha.NewMaster(ha.MasterConfig{Listener: ln, Log: st, Epochs: n.epochs, AckTimeout: 2 * time.Second,
			HeartbeatInterval: 50 * time.Millisecond, HousekeepingInterval: time.Second, Logger: r.lg}); err != nil {
			return fmt.Errorf("sim: master: %w", err)
		}
		e := n.master.Epoch().Epoch
		if len(r.epochs) > 0 && e <= r.epochs[len(r.epochs)-1] {
			return r.violation(InvEpochRises, "epoch %d after %d", e, r.epochs[len(r.epochs)-1])
		}
		r.epochs = append(r.epochs, e)
		r.tracef("master up, epoch %d, log end %d", e, st.WrittenOffset())
		return nil
	}
	if n.slave, err = ha.NewSlave(ha.SlaveConfig{MasterAddr: func() string { return masterAddr }, BrokerID: 1, Log: st, Epochs: n.epochs,
		Dial: r.net.Dialer(slaveNode), HeartbeatInterval: 50 * time.Millisecond, HousekeepingInterval: time.Second,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Logger: r.lg}); err != nil {
		return fmt.Errorf("sim: slave: %w", err)
	}
	r.tracef("slave up, log end %d", st.WrittenOffset())
	return nil
}

// stop ends n's process: its connections reset, its objects closed (what
// they do after this reaches a file system the run no longer uses when
// the caller took an image first).
func (r *run) stop(n *node) {
	r.net.Isolate(n.name)
	if n.master != nil {
		_ = n.master.Close()
		n.master = nil
	}
	if n.slave != nil {
		_ = n.slave.Close()
		n.slave = nil
	}
	if n.store != nil {
		_ = n.store.Close()
		n.store = nil
	}
	n.epochs = nil
}

func (r *run) closeAll() {
	r.stop(r.s)
	r.stop(r.m)
}

var bornHost = netip.MustParseAddrPort("127.0.0.1:5555")

// appendBatch appends k records on the master, one at a time, each
// acknowledged once its replication is confirmed.
func (r *run) appendBatch(k int) error {
	// A producer retries while the slave is away: give it a moment to
	// be (back) in sync first.
	for deadline := time.Now().Add(2 * time.Second); !r.inSync() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	ok := 0
	for i := 0; i < k; i++ {
		body := make([]byte, 1+r.rng.Intn(2000))
		r.rng.Read(body)
		m := &storage.Message{Topic: "sim", QueueID: int32(r.rng.Intn(4)), Body: body, BornTimestamp: 1700000000000,
			BornHost: bornHost, StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
			Properties: record.AppendProperty(nil, record.PropertyTags, "t"), TagsCode: record.TagsCode("t")}
		res, err := r.m.store.Append(context.Background(), m)
		if err != nil {
			r.tracef("append refused: %v", err)
			continue
		}
		end := res.PhysicalOffset + int64(res.Size)
		if err := r.m.master.WaitReplicated(end); err != nil {
			continue // not acknowledged: the producer would see the error
		}
		buf := make([]byte, res.Size)
		n, _, err := r.m.store.ReadLog(res.PhysicalOffset, buf)
		if err != nil || n != int(res.Size) {
			return r.violation(InvAckedKept, "the record just acknowledged at %d reads back %d bytes, %v", res.PhysicalOffset, n, err)
		}
		r.acked[res.PhysicalOffset] = buf
		ok++
	}
	r.tracef("appended %d of %d acknowledged (log end %d)", ok, k, r.m.store.WrittenOffset())
	return nil
}

// inSync says whether the master counts the slave in sync.
func (r *run) inSync() bool {
	for _, s := range r.m.master.Slaves() {
		if s.InSync {
			return true
		}
	}
	return false
}

// partition cuts master from slave for a while, then heals.
func (r *run) partition() error {
	d := time.Duration(10+r.rng.Intn(3000)) * time.Millisecond
	r.net.Partition(masterNode, slaveNode)
	r.tracef("partition master|slave for %v", d)
	if err := r.appendBatch(1 + r.rng.Intn(5)); err != nil {
		return err
	}
	time.Sleep(d)
	r.net.Heal()
	r.tracef("healed")
	return nil
}

// slowLink delays every write between master and slave for a while (up
// to past the master's ack timeout), with appends going on, then heals.
func (r *run) slowLink() error {
	d := time.Duration(1+r.rng.Intn(3000)) * time.Millisecond
	r.net.Delay(masterNode, slaveNode, d)
	r.tracef("link master-slave slowed to %v a write", d)
	if err := r.appendBatch(1 + r.rng.Intn(5)); err != nil {
		return err
	}
	r.net.Heal()
	r.tracef("healed")
	return nil
}

// crash kills n's process (power: the machine loses power, keeping only
// what was synced, torn at random) and starts it again on what survived.
// The master's power loss runs only under sync flush (see Replication).
func (r *run) crash(n *node, power bool) error {
	var img *vfs.MemFS
	if power {
		img = n.fs.CrashClone(r.rng)
	} else {
		img = n.fs.ProcessCrashClone()
	}
	r.stop(n)
	n.fs = img
	what := "process crash"
	if power {
		what = "power loss"
	}
	r.tracef("%s of %s", what, n.name)
	time.Sleep(time.Duration(r.rng.Intn(500)) * time.Millisecond)
	if err := r.open(n); err != nil {
		return err
	}
	if n == r.m {
		if r.o.sabotage {
			r.loseLastAcked()
		}
		return r.checkAcked(r.m.store, "master after its "+what)
	}
	return nil
}

// loseLastAcked cuts the master's log at its last acknowledged record
// (sabotage).
func (r *run) loseLastAcked() {
	last := int64(-1)
	for off := range r.acked {
		last = max(last, off)
	}
	if last >= 0 {
		if err := r.m.store.TruncateTo(last); err == nil {
			r.tracef("sabotage: master log cut at %d", last)
		}
	}
}

// checkAcked holds every acknowledged record against st's log.
func (r *run) checkAcked(st *storage.Store, where string) error {
	for off, want := range r.acked {
		got := make([]byte, len(want))
		n, _, err := st.ReadLog(off, got)
		if err != nil || n != len(want) || !bytes.Equal(got, want) {
			return r.violation(InvAckedKept, "%s: the record acknowledged at %d (%d bytes) reads %d bytes, %v", where, off, len(want), n, err)
		}
	}
	return nil
}

// finish heals everything, waits for the slave to catch up, and holds
// both logs to the invariants.
func (r *run) finish() error {
	r.net.Heal()
	r.tracef("final heal")
	deadline := time.Now().Add(10 * time.Minute)
	// Caught up: the slave holds the master's whole log, handed to its
	// kernel (ReadLog reads no further), and so does the master.
	for end := r.m.store.WrittenOffset(); r.s.store.WrittenOffset() != end || r.s.store.HandedOffset() != end || r.m.store.HandedOffset() != end; end = r.m.store.WrittenOffset() {
		if time.Now().After(deadline) {
			return r.violation(InvCatchUp, "slave at %d, master at %d after 10 minutes healed (slave %+v)",
				r.s.store.WrittenOffset(), r.m.store.WrittenOffset(), r.s.slave.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.tracef("caught up at %d", r.m.store.WrittenOffset())
	if err := r.checkAcked(r.m.store, "master at the end"); err != nil {
		return err
	}
	if err := r.checkAcked(r.s.store, "slave at the end"); err != nil {
		return err
	}
	ms, ss := r.m.store, r.s.store
	bufA, bufB := make([]byte, ms.MaxRecordSize()), make([]byte, ss.MaxRecordSize())
	for off := ss.CommitLogMinOffset(); off < ss.WrittenOffset(); {
		na, nextA, errA := ms.ReadLog(off, bufA)
		nb, nextB, errB := ss.ReadLog(off, bufB)
		if errA != nil || errB != nil || nb == 0 || na != nb || nextA != nextB || !bytes.Equal(bufA[:na], bufB[:nb]) {
			return r.violation(InvSameLog, "at %d: master %d bytes to %d (%v), slave %d bytes to %d (%v)", off, na, nextA, errA, nb, nextB, errB)
		}
		off = nextB
	}
	return nil
}
