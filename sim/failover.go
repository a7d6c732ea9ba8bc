package sim

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/vfs"
)

// Family is a kind of fail-over run: which faults its seeds choose from.
type Family int

const (
	// FamilyMixed: every fault, one at a time (see Failover).
	FamilyMixed Family = iota
	// FamilyGroupCrash: appends and whole-group crashes (every replica's
	// process, or every replica's power, at once), the case where a
	// replica that lost its unsynced tail must not be elected over the
	// ones that kept it.
	FamilyGroupCrash
)

func (f Family) String() string {
	if f == FamilyGroupCrash {
		return "groupcrash"
	}
	return "mixed"
}

// FailoverOptions shape a fail-over run.
type FailoverOptions struct {
	// Seed chooses the workload and the fault schedule.
	Seed int64
	// Steps is how many workload or fault steps run (default 40).
	Steps int
	// Backend is the stores' write path (default pwrite).
	Backend string
	// Flush is the stores' flush policy (the zero value: async, every
	// 200 ms). Under sync flush a slave acknowledges only what it synced.
	Flush storage.FlushPolicy
	// Family is the kind of faults (default FamilyMixed).
	Family Family

	// sabotage, in this package's tests, plants a bug so the checks can
	// be seen to catch it: a replica that restarts reports, for the
	// elections, the log end it had before its crash (a position read
	// from a checkpoint ahead of the data), so one that lost its tail
	// ranks with the ones that kept it.
	sabotage bool
}

// The invariants a fail-over run checks, beside InvAckedKept and
// InvCatchUp.
const (
	// No two replicas take up the master role at one controller epoch.
	InvOneMasterPerEpoch = "one master per epoch"
	// A replica that takes up the master role holds every acknowledged
	// record the mode still promises.
	InvElectedHoldsAcked = "elected replica holds every acknowledged record"
	// A replica never cuts an acknowledged record it holds, that the mode
	// still promises, to follow a new master.
	InvNoHealthyCut = "healthy replicas never cut acknowledged records"
	// A bit flipped in a replica's log while it was down is found (the
	// record quarantined, or the log cut before it) by the time the
	// replica has read back what it wrote since its last verification.
	InvFlipDetected = "flipped bit detected"
)

var simGroup = controller.Group{Cluster: "sim", Broker: "g"}

const groupSize = 3

// failover is one fail-over run's state. The schedule (Failover's loop)
// runs on one goroutine; the replicas' loops and replication links call
// back into tracef, onElected, onCut and fail, hence mu.
type failover struct {
	o FailoverOptions
	// sched draws one seed per step; rng, seeded from it, draws what the
	// step does. What a step draws may depend on timing (how many records
	// a master took before it was fenced, how many blocks a power loss
	// finds dirty), but never shifts the steps after it: the schedule
	// replays exactly from the seed, whatever the goroutines'
	// interleaving.
	sched *rand.Rand
	rng   *rand.Rand
	net   *Net
	ctl   *ctlCluster
	reps  []*replica
	start time.Time
	lg    *slog.Logger

	mu struct {
		sync.Mutex
		trace   []string
		acked   map[int64]*ackedRec // by physical offset
		masters map[int64]int64     // controller epoch -> the replica that took up the master role
		flips   map[int64][]flipped // by replica: the records a bit flip damaged
		err     error               // the first violation found off the schedule's goroutine
		// forfeits counts the acknowledged records forfeited: lost
		// beyond what the mode promises.
		forfeits int
	}
}

// ackedRec is one acknowledged record and who holds it: the replicas
// seen holding it (at its acknowledgement, at each step, at each
// restart). forfeited: every holder lost it to power losses, which the
// mode does not promise to survive (async flush); it is checked no more.
type ackedRec struct {
	data      []byte
	holders   map[int64]bool
	forfeited bool
	// bodyAt is where the message body starts in data (a bit flip lands
	// there: the body's CRC covers it).
	bodyAt int
	// atRisk (async flush): a power loss took it from some replica, and
	// not every replica holds it again yet; a fault that begins now
	// forfeits it (the mode promises one power-loss event at a time).
	atRisk bool
}

func (f *failover) tracef(format string, args ...any) {
	line := fmt.Sprintf("%8.3fs ", time.Since(f.start).Seconds()) + fmt.Sprintf(format, args...)
	f.mu.Lock()
	f.mu.trace = append(f.mu.trace, line)
	f.mu.Unlock()
}

// traceWriter writes each line it is given to the trace.
type traceWriter struct{ f *failover }

func (w traceWriter) Write(b []byte) (int, error) {
	w.f.tracef("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func (f *failover) violation(inv, format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.violationLocked(inv, format, args...)
}

func (f *failover) violationLocked(inv, format string, args ...any) error {
	return &Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...), Seed: f.o.Seed, Trace: append([]string(nil), f.mu.trace...)}
}

// fail records a violation found on another goroutine; the schedule
// returns it at its next step.
func (f *failover) fail(err error) {
	f.mu.Lock()
	if f.mu.err == nil {
		f.mu.err = err
	}
	f.mu.Unlock()
}

func (f *failover) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.err
}

func (f *failover) storeOptions(name string, fs *vfs.MemFS) storage.Options {
	return storage.Options{
		Dir: "/" + name, FS: fs, Backend: f.o.Backend,
		SegmentSize: 64 << 10, MaxMessageSize: 4 << 10, ConsumeQueueEntries: 64,
		Flush:              storage.FlushOptions{Policy: f.o.Flush, Interval: 200 * time.Millisecond, Timeout: time.Minute},
		Retention:          storage.RetentionOptions{MaxAge: -1, DiskRatio: -1, CheckInterval: time.Hour},
		CheckpointInterval: time.Hour,
		Logger:             f.lg,
	}
}

// Failover runs a broker group of three replicas in controller mode
// (SYNC_MASTER) with a three-replica controller on hashicorp/raft, over
// an in-memory network, each broker on its own crash-simulating file
// system, under the seed's schedule of appends and faults, and checks
// the invariants as it goes and at the end. Run it inside
// testing/synctest's bubble.
func Failover(o FailoverOptions) (*Result, error) {
	if o.Steps == 0 {
		o.Steps = 40
	}
	if o.Backend == "" {
		o.Backend = "pwrite"
	}
	f := &failover{o: o, sched: rand.New(rand.NewSource(o.Seed)), net: NewNet(), start: time.Now(),
		lg: slog.New(slog.NewTextHandler(io.Discard, nil))}
	f.mu.acked, f.mu.masters, f.mu.flips = map[int64]*ackedRec{}, map[int64]int64{}, map[int64][]flipped{}
	// The controller's warnings (elections, held elections) go to the
	// trace.
	ctlLog := slog.New(slog.NewTextHandler(traceWriter{f}, &slog.HandlerOptions{Level: slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
				return slog.Attr{}
			}
			return a
		}}))
	ctl, err := newCtlCluster(f.net, controller.Config{}, ctlLog)
	if err != nil {
		return nil, err
	}
	f.ctl = ctl
	defer f.closeAll()
	f.rng = rand.New(rand.NewSource(f.sched.Int63()))
	for i := 0; i < groupSize; i++ {
		id := int64(i + 1)
		p := &replica{f: f, id: id, name: replicaName(id), haAddr: replicaName(id) + ":10912", fs: vfs.NewMem()}
		f.reps = append(f.reps, p)
	}
	for _, p := range f.reps {
		if err := p.open(); err != nil {
			return nil, err
		}
	}
	res := &Result{Seed: o.Seed}
	for step := 0; step < o.Steps; step++ {
		f.rng = rand.New(rand.NewSource(f.sched.Int63()))
		var err error
		if o.Family == FamilyGroupCrash {
			err = f.groupCrashStep(res)
		} else {
			err = f.mixedStep(res)
		}
		if err == nil {
			err = f.failed()
		}
		if err == nil {
			err = f.refreshHolders()
		}
		if err != nil {
			return nil, err
		}
	}
	if err := f.finish(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	res.Acked, res.Trace = len(f.mu.acked), f.mu.trace
	f.mu.Unlock()
	return res, nil
}

func (f *failover) closeAll() {
	for _, p := range f.reps {
		p.stop()
	}
	f.ctl.close()
}

// groupCrashStep: mostly appends; else every replica crashes at once: a
// process crash of all, a power loss of all, or each its own (a power
// loss of some machines, the others' processes killed with them).
func (f *failover) groupCrashStep(res *Result) error {
	if f.rng.Intn(100) < 60 {
		return f.appendBatch(1 + f.rng.Intn(20))
	}
	res.Faults++
	power := make([]bool, groupSize)
	switch f.rng.Intn(3) {
	case 0:
	case 1:
		for i := range power {
			power[i] = true
		}
	default:
		for i := range power {
			power[i] = f.rng.Intn(2) == 0
		}
	}
	return f.crashEach(f.reps, power)
}

// mixedStep chooses one step of any kind.
func (f *failover) mixedStep(res *Result) error {
	p := f.rng.Intn(100)
	if p < 50 {
		return f.appendBatch(1 + f.rng.Intn(20))
	}
	res.Faults++
	master := f.currentMaster()
	if master == nil {
		master = f.reps[f.rng.Intn(groupSize)]
	}
	switch {
	case p < 56:
		return f.crash([]*replica{master}, false)
	case p < 62:
		return f.crash([]*replica{master}, true)
	case p < 68:
		return f.crash([]*replica{f.reps[f.rng.Intn(groupSize)]}, f.rng.Intn(2) == 0)
	case p < 73:
		return f.crash(f.reps, f.rng.Intn(2) == 0)
	case p < 79:
		return f.isolate(master.name)
	case p < 85:
		return f.isolateWithLeader(master)
	case p < 90:
		return f.oneWay(master)
	case p < 93:
		return f.slowLink(master)
	case p < 96:
		return f.bitFlip(master)
	default:
		return f.crashController()
	}
}

// currentMaster is a replica that takes writes now, nil if none.
func (f *failover) currentMaster() *replica {
	for _, p := range f.reps {
		if p.up() && p.canWrite() {
			return p
		}
	}
	return nil
}

func (f *failover) names() []string {
	var out []string
	for _, p := range f.reps {
		out = append(out, p.name)
	}
	for _, rp := range f.ctl.reps {
		out = append(out, rp.name)
	}
	return out
}

func joinNames(ps []*replica) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.name)
	}
	return strings.Join(s, ",")
}
