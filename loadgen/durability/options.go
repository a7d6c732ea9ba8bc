package durability

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/samsamq/samsa/storage"
)

// Options configure one kill loop: one broker configuration.
type Options struct {
	// Binary is the samsa binary to run as `samsa namesrv` and
	// `samsa broker`. Required.
	Binary string
	// Dir is where the run's data dir is made (and removed after, unless
	// KeepDir or the run failed). It must be on a real disk: tmpfs has no
	// O_DIRECT. Default os.TempDir().
	Dir string
	// Backend is the broker's storeBackend: pwrite (default), mmap,
	// odirect, uring.
	Backend string
	// Flush is the broker's flush policy: async (default) or sync.
	Flush string
	// Role, when set, makes the run the replication loop (replication.go):
	// the broker is a master of this brokerRole, SYNC_MASTER or
	// ASYNC_MASTER, with one SLAVE following it; the master is the one
	// killed, and after each kill the slave's copy is checked. Default
	// "": one broker, the kill loop above.
	Role string
	// PauseSlave, with Role, stops the slave (SIGSTOP) this long before
	// each kill of the master and continues it (SIGCONT) after: what
	// the master acknowledged beyond what its sockets held is then lost
	// to the slave. A control for ASYNC_MASTER: the check must see
	// losses, each within the lag sampled before the kill. Default 0.
	PauseSlave time.Duration
	// AckBuffered sets the broker's transientStorePoolEnable (the store's
	// Options.AckBuffered: acknowledge from the user-space write buffer,
	// durability "memory"). Default false. A broker without the key
	// refuses to start.
	AckBuffered bool
	// SegmentSize is the CommitLog segment size (mappedFileSizeCommitLog),
	// small so that segments roll during the run. Default 16 MiB.
	SegmentSize int64
	// Producers send concurrently, one synchronous send each at a time.
	// Default 8.
	Producers int
	// Queues is the topic's queue count. Default 8.
	Queues int
	// BodySize is each message's body in bytes (the id, a newline,
	// padding). Default 1024.
	BodySize int
	// Kills is the number of SIGKILL cycles. Default 5.
	Kills int
	// NoTermCycle leaves out the last cycle, which stops the broker with
	// SIGTERM (a clean shutdown must lose nothing). Default false. The
	// replication loop has no SIGTERM cycle.
	NoTermCycle bool
	// MinUp and MaxUp bound how long after an incarnation's first
	// acknowledgement it is killed (uniform, seeded). Defaults 300 ms and
	// 2 s.
	MinUp, MaxUp time.Duration
	// Seed seeds the kill moments. 0: chosen from the clock (and reported).
	Seed uint64
	// StartTimeout bounds the first start: processes up, topic created.
	// Default 30 s.
	StartTimeout time.Duration
	// RecoveryTimeout bounds a restart: from starting the process to the
	// first acknowledged send. Default 60 s.
	RecoveryTimeout time.Duration
	// StopTimeout bounds a SIGTERM stop, and the producers' and consumer's
	// stop. Default 20 s.
	StopTimeout time.Duration
	// ReadTimeout bounds the read-back of every queue. Default 120 s.
	ReadTimeout time.Duration
	// Props are more broker.conf key=value settings (-D).
	Props []string
	// KeepDir keeps the data dir and logs after a successful run.
	KeepDir bool
	// Progress gets a line per cycle. Default io.Discard.
	Progress io.Writer
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	o.Backend, o.Flush = cmp.Or(o.Backend, "pwrite"), cmp.Or(o.Flush, "async")
	o.SegmentSize = cmp.Or(o.SegmentSize, 16<<20)
	o.Producers, o.Queues, o.BodySize = cmp.Or(o.Producers, 8), cmp.Or(o.Queues, 8), cmp.Or(o.BodySize, 1024)
	o.Kills = cmp.Or(o.Kills, 5)
	o.MinUp, o.MaxUp = cmp.Or(o.MinUp, 300*time.Millisecond), cmp.Or(o.MaxUp, 2*time.Second)
	o.StartTimeout, o.RecoveryTimeout = cmp.Or(o.StartTimeout, 30*time.Second), cmp.Or(o.RecoveryTimeout, 60*time.Second)
	o.StopTimeout, o.ReadTimeout = cmp.Or(o.StopTimeout, 20*time.Second), cmp.Or(o.ReadTimeout, 120*time.Second)
	o.Progress = cmp.Or(o.Progress, io.Discard)
}

// maxKills bounds Kills: a loop with a count, not a soak without end.
const maxKills = 10000

// Validate reports every invalid field at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Binary == "" {
		errs = append(errs, errors.New("Binary: empty"))
	}
	switch o.Backend {
	case "pwrite", "mmap", "odirect", "uring":
	default:
		errs = append(errs, fmt.Errorf("Backend %q: want pwrite, mmap, odirect or uring", o.Backend))
	}
	switch o.Role {
	case "", "SYNC_MASTER", "ASYNC_MASTER":
	default:
		errs = append(errs, fmt.Errorf("Role %q: want SYNC_MASTER, ASYNC_MASTER or empty (one broker)", o.Role))
	}
	if o.PauseSlave < 0 || (o.PauseSlave > 0 && o.Role == "") || o.PauseSlave > time.Minute {
		errs = append(errs, fmt.Errorf("PauseSlave %v: want 0 to 1m, and a Role", o.PauseSlave))
	}
	if o.Flush != "async" && o.Flush != "sync" {
		errs = append(errs, fmt.Errorf("Flush %q: want async or sync", o.Flush))
	}
	if o.SegmentSize < storage.MinSegmentSize || o.SegmentSize%4096 != 0 {
		errs = append(errs, fmt.Errorf("SegmentSize %d: want a multiple of 4 KiB, at least %d", o.SegmentSize, storage.MinSegmentSize))
	}
	if o.Producers < 1 || o.Queues < 1 {
		errs = append(errs, fmt.Errorf("Producers %d, Queues %d: want at least 1", o.Producers, o.Queues))
	}
	if o.BodySize < 32 || o.BodySize > 1<<20 {
		errs = append(errs, fmt.Errorf("BodySize %d: want 32 B to 1 MiB", o.BodySize))
	}
	if o.Kills < 0 || o.Kills > maxKills {
		errs = append(errs, fmt.Errorf("Kills %d: want 0 to %d", o.Kills, maxKills))
	}
	if o.MinUp < 0 || o.MaxUp < o.MinUp {
		errs = append(errs, fmt.Errorf("MinUp %v, MaxUp %v: want 0 <= MinUp <= MaxUp", o.MinUp, o.MaxUp))
	}
	for _, d := range []time.Duration{o.StartTimeout, o.RecoveryTimeout, o.StopTimeout, o.ReadTimeout} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("timeouts must not be negative (%v)", d))
			break
		}
	}
	for _, kv := range o.Props {
		if !strings.Contains(kv, "=") {
			errs = append(errs, fmt.Errorf("Props %q: want key=value", kv))
		}
	}
	return errors.Join(errs...)
}

// String renders the settings stably, for result files.
func (o Options) String() string {
	role := ""
	if o.Role != "" {
		role = "role=" + o.Role + " "
	}
	if o.PauseSlave > 0 {
		role += "pauseSlave=" + o.PauseSlave.String() + " "
	}
	return role + fmt.Sprintf("backend=%s flush=%s ackBuffered=%t segment=%d producers=%d queues=%d body=%d kills=%d term=%t up=%v..%v seed=%d props=[%s]",
		o.Backend, o.Flush, o.AckBuffered, o.SegmentSize, o.Producers, o.Queues, o.BodySize, o.Kills, !o.NoTermCycle && o.Role == "",
		o.MinUp, o.MaxUp, o.Seed, strings.Join(o.Props, " "))
}

// storeOptions is the store configuration the broker runs with, as far as
// the durability level goes.
func (o Options) storeOptions() storage.Options {
	so := storage.Options{Backend: o.Backend, AckBuffered: o.AckBuffered}
	so.Flush.Policy = storage.FlushAsync
	if o.Flush == "sync" {
		so.Flush.Policy = storage.FlushSync
	}
	so.EnsureDefaults()
	return so
}

// Durability is the level the store states for this configuration.
func (o Options) Durability() storage.Durability { return o.storeOptions().Durability() }

// DurabilityNote is the store's one-line statement of that level.
func (o Options) DurabilityNote() string { return o.storeOptions().DurabilityNote() }
