package sim

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/ctlrole"
	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/ha"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/vfs"
)

// The controller-mode timings of a simulated broker: the broker's
// defaults (brokerHeartbeatInterval, controllerHeartBeatTimeoutMills,
// haMaxTimeSlaveNotCatchup).
const (
	heartbeatEvery = time.Second
	fenceTimeout   = 3 * time.Second
	notCatchup     = 15 * time.Second
)

// replica is one broker of the group in controller mode: its file system
// (what survives its crashes) and, while up, its store, epoch file,
// acknowledged mark, replication end (an ha.Master or an ha.Slave) and
// the loop that registers and heartbeats with the controller and takes
// up the role each answer gives, with the broker's rules
// (package broker/ctlrole). What package broker adds around it (name
// servers, tables, transactions) is not simulated.
type replica struct {
	f      *failover
	id     int64
	name   string
	haAddr string
	fs     *vfs.MemFS

	// Set by open, cleared by stop; read by the schedule between them.
	store  *storage.Store
	epochs *ha.EpochFile
	acked  *ha.AckedMark
	cli    *ctlClient
	stopc  chan struct{}
	done   chan struct{}

	// master is the running ha.Master (nil when not master); writable:
	// named master and its ha.Master up; lastOK: when (unix ns) the last
	// heartbeat the controller answered was sent.
	master   atomic.Pointer[ha.Master]
	writable atomic.Bool
	lastOK   atomic.Int64
	// dead: the process crashed (quiesce); its loop, which may still be
	// inside a call to the controller, acts on nothing and sends nothing
	// more. roleMu makes the loop's role changes and quiesce exclusive.
	dead   atomic.Bool
	roleMu sync.Mutex

	mu struct {
		sync.Mutex
		role         controller.Role
		registered   bool
		epoch        int64
		masterID     int64
		masterAddr   string
		syncSet      []int64
		syncSetEpoch int64
		uncleanEpoch int64
		masterFailed string
		slave        *ha.Slave
		failed       bool // the last call to the controller failed
	}
	tracker *ctlrole.Tracker // the loop's alone

	// flipped: the next open follows a bit flip in the log (what it
	// loses is not covered by the flush mode's promise); openedEnd: the
	// log's end when the store opened, before anything was copied.
	flipped   bool
	openedEnd int64

	// staleEnd (sabotage only): the log end before the last power loss,
	// reported instead of a shorter one until the next role change.
	staleEnd int64
}

func replicaName(id int64) string { return fmt.Sprintf("b%d", id) }

// open starts the replica's process on its file system: store, epochs,
// acknowledged mark, and the controller loop (registering first). It
// takes no writes until the controller names it master.
func (p *replica) open() error {
	st, err := storage.Open(p.f.storeOptions(p.name, p.fs))
	if errors.Is(err, storage.ErrCorrupt) {
		// Damage below what was synced: the store refuses to open, and
		// the operator repairs it (samsa store repair: the log is cut at
		// its last valid record, the rest kept in lost+found).
		rep, rerr := storage.Repair(storage.RepairOptions{Dir: "/" + p.name, FS: p.fs, SegmentSize: 64 << 10, Logger: p.f.lg})
		if rerr != nil {
			return fmt.Errorf("sim: repair %s's store after %v: %w", p.name, err, rerr)
		}
		p.f.tracef("%s's store refused to open (%v); the operator repaired it: cut at %d", p.name, err, rep.Cut)
		st, err = storage.Open(p.f.storeOptions(p.name, p.fs))
	}
	if err != nil {
		return fmt.Errorf("sim: open %s's store: %w", p.name, err)
	}
	st.SetFenced(true)
	p.store = st
	p.openedEnd = st.WrittenOffset()
	dir := "/" + p.name
	if p.epochs, err = ha.OpenEpochFile(p.fs, filepath.Join(dir, "epochs"), p.f.lg); err != nil {
		return fmt.Errorf("sim: %s's epochs: %w", p.name, err)
	}
	if p.acked, err = ha.OpenAckedMark(p.fs, filepath.Join(dir, "acked")); err != nil {
		return fmt.Errorf("sim: %s's acked mark: %w", p.name, err)
	}
	p.dead.Store(false)
	p.cli = &ctlClient{c: p.f.ctl, from: p.name, dead: &p.dead}
	p.tracker = ctlrole.NewTracker()
	p.mu.role, p.mu.masterID, p.mu.registered, p.mu.epoch = controller.RoleNone, controller.NoMaster, false, 0
	p.mu.syncSet, p.mu.masterFailed, p.mu.failed = nil, "", false
	p.stopc, p.done = make(chan struct{}), make(chan struct{})
	p.f.tracef("%s up, log end %d, epochs %v", p.name, st.WrittenOffset(), p.epochs.Entries())
	p.f.afterOpen(p)
	go p.run()
	return nil
}

// up reports whether the process runs.
func (p *replica) up() bool { return p.store != nil }

// stop ends the process: quiesce, then close the store.
func (p *replica) stop() {
	if p.store == nil {
		return
	}
	p.quiesce()
	p.closeStore()
}

// quiesce ends the process at an instant, but for its store: its loop
// acts on nothing more (it may still be inside a call to the
// controller, which then fails), its connections reset, its replication
// end stops. Then nothing appends to the store (the backends write
// through mappings of the file system, which a crash image must not read
// while they do: vfs.MemFS.ProcessCrashClone); its background flusher
// may still run. No virtual time passes: the crash image the caller
// takes next is the file system at the instant of the crash.
func (p *replica) quiesce() {
	close(p.stopc)
	p.roleMu.Lock()
	p.dead.Store(true)
	p.roleMu.Unlock()
	p.f.net.Isolate(p.name)
	p.stopWriting()
	p.stopSlave()
}

// closeStore closes a quiesced process's store once its loop ended (a
// crash: the caller took its image first, and what Close writes goes to
// a file system the run drops).
func (p *replica) closeStore() {
	<-p.done
	_ = p.store.Close()
	p.store, p.epochs, p.acked = nil, nil, nil
}

// canWrite: named master, its ha.Master up, and a heartbeat sent within
// the fence timeout answered (broker: ctlMode.canWrite).
func (p *replica) canWrite() bool {
	return p.writable.Load() && time.Now().UnixNano()-p.lastOK.Load() < int64(fenceTimeout)
}

func (p *replica) stopWriting() {
	p.writable.Store(false)
	p.store.SetFenced(true)
	if m := p.master.Swap(nil); m != nil {
		_ = m.Close() // the listener's close: nothing to do
	}
}

func (p *replica) stopSlave() {
	p.mu.Lock()
	s := p.mu.slave
	p.mu.slave = nil
	p.mu.Unlock()
	if s != nil {
		_ = s.Close() // always nil
	}
}

// syncSetNow is the sync-state set as the controller last told it.
func (p *replica) syncSetNow() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mu.syncSet)
}

// slaveLink is the replication link while a slave (nil otherwise).
func (p *replica) slaveLink() *ha.Slave {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.slave
}

// newMaster starts the replication master at ha epoch epoch.
func (p *replica) newMaster(epoch uint64) (*ha.Master, error) {
	ln, err := p.f.net.Listen(p.name, p.haAddr)
	if err != nil {
		return nil, err
	}
	m, err := ha.NewMaster(ha.MasterConfig{Listener: ln, Log: p.store, Epochs: p.epochs, Epoch: epoch, InSyncReplicas: 2, RequiredOnly: true,
		AckTimeout: 2 * time.Second, HeartbeatInterval: 50 * time.Millisecond, HousekeepingInterval: time.Second,
		Logger: p.f.lg, OnLinkDown: func(int64) {}})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	return m, nil
}

// newSlave starts the replication link to the master the controller
// named. Under sync flush a slave acknowledges only what it synced.
func (p *replica) newSlave(masterHA string) (*ha.Slave, error) {
	return ha.NewSlave(ha.SlaveConfig{MasterAddr: func() string { return masterHA }, BrokerID: p.id, Log: p.store, Epochs: p.epochs,
		AckFlushed: p.f.o.Flush == storage.FlushSync,
		Dial:       p.f.net.Dialer(p.name), HeartbeatInterval: 50 * time.Millisecond, HousekeepingInterval: time.Second,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Logger: p.f.lg,
		Acked: p.acked,
		MayCutAcked: func(lineage uint64) bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return ctlrole.MayCutAcked(lineage, p.mu.uncleanEpoch)
		},
		OnCut: func(from, to, _ int64) { p.f.onCut(p, from, to) },
	})
}
