// Package backlog is the lab's cold-read backlog experiment (after
// MetaQ's "massive accumulation"): a topic holds a backlog deeper than
// anyone keeps in memory, consumers drain it at full speed while producers
// keep a steady rate on another topic, and the run reports
//
//   - drain MB/s (CommitLog bytes of the backlog ÷ the time from starting
//     the consumers until they received every backlog message) against the
//     raw disk's sequential read rate (bench.RunDiskRead, same disk, same
//     program, right after);
//   - the steady producers' send p99 during the drain against their p99
//     in a window just before it (open loop: latency from the intended
//     send time, so a stalled producer is seen);
//   - how much of the store was in the page cache after the drop and
//     after the drain (mincore): whether the drain's reads filled the page
//     cache (the pollution that hurts Kafka and RocketMQ under cold reads).
//
// A repeat: the Target fills the backlog straight into its store and
// flushes it; the store's files are dropped from the page cache
// (bench.DropDirCache: fdatasync + posix_fadvise(DONTNEED) on every file,
// from outside the store; the result names the method); the steady
// producers start; after Before their "before" window closes and the
// consumers start; the "during" window closes when the backlog is
// drained (or DrainTimeout, an error).
//
// The cluster is a Target the caller provides (cmd/samsa's embedded
// cluster), so tests can drive the runner with a fake. RunExperiment runs
// one repeat at a time.
package backlog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen"
)

// Kind is the "kind" of a backlog-drain experiment file and its result.
const Kind = "backlog-drain"

// Experiment is an experiment file of kind "backlog-drain".
type Experiment struct {
	resultfile.Spec
	resultfile.Forms[Settings, *Settings]
	// DrainTarget is what drain MB/s ÷ raw read MB/s should reach
	// (default 0.8); P99Target what during p99 ÷ before p99 should stay
	// at or below (default 2).
	DrainTarget float64 `json:"drain_target,omitempty"`
	P99Target   float64 `json:"p99_target,omitempty"`
	// Cells, when set, make the experiment a matrix (cells.go): each cell
	// runs the settings with its own pull path and queue count, cold
	// repeats and a warm reference, and the targets are the read path's.
	Cells []Cell `json:"cells,omitempty"`
	// CellTargets are a matrix's targets (cells.go; defaults there).
	CellTargets CellTargets `json:"cell_targets,omitzero"`
}

// Settings are a run's parameters.
type Settings struct {
	// Flush is the broker's flush policy: "async" (default) or "sync".
	Flush string `json:"flush,omitempty"`
	// BacklogBytes is how deep the backlog is (CommitLog bytes).
	BacklogBytes int64 `json:"backlog_bytes"`
	// MessageSize is every message's body; default 1024.
	MessageSize int `json:"message_size,omitempty"`
	// Queues of the backlog topic; default 8. Consumers split them.
	Queues    int `json:"queues,omitempty"`
	Consumers int `json:"consumers,omitempty"` // default 2
	// SteadyRate is the steady producers' total rate, msg/s (default
	// 2000), over SteadyProducers (default 2) async producers.
	SteadyRate      float64 `json:"steady_rate,omitempty"`
	SteadyProducers int     `json:"steady_producers,omitempty"`
	// Before is the steady producers' window before the drain; default 5s
	// (after a 1 s warm-up).
	Before resultfile.Duration `json:"before,omitempty"`
	// DrainTimeout bounds the drain; default 10m.
	DrainTimeout resultfile.Duration `json:"drain_timeout,omitempty"`
	// ReadSize is the raw read reference's file; default BacklogBytes
	// (capped at 4 GiB).
	ReadSize int64 `json:"read_size,omitempty"`
	// Repeats: runs, median reported; default 1.
	Repeats int `json:"repeats,omitempty"`
	// Warm leaves the backlog in the page cache (no drop): the drain from
	// memory, to set the cold drain beside.
	Warm bool `json:"warm,omitempty"`
	// WarmReference, with a cold run, adds one warm repeat after the
	// cold ones (Result.Warm): what the drain does from memory, so the
	// cold drain's shortfall splits into the disk's share and the rest
	// (CPU, the consumers).
	WarmReference bool `json:"warm_reference,omitempty"`
	// PaceMBps, if set, paces the consumers together to this many MB
	// (10^6 B) of message bodies a second from the drain's start, where
	// they would otherwise drain at full speed: how fast a backlog can
	// drain while the producers' p99 stays within the target. The drain
	// target does not apply to a paced run.
	PaceMBps float64 `json:"pace_mb_per_sec,omitempty"`
	// DirectColdReads runs the broker with directColdReads: the read
	// block cache reads what is not in the page cache with O_DIRECT.
	DirectColdReads bool `json:"direct_cold_reads,omitempty"`
	// TransferMsgByHeap runs the broker with transferMsgByHeap: every
	// pull read into memory and checked (default false: the consumers,
	// which check CRCs, get their pulls from the files with sendfile).
	TransferMsgByHeap bool `json:"transfer_msg_by_heap,omitempty"`
}

// EnsureDefaults fills the zero fields with their defaults.
func (s *Settings) EnsureDefaults() {
	s.Flush, s.MessageSize, s.Queues = cmp.Or(s.Flush, "async"), cmp.Or(s.MessageSize, 1024), cmp.Or(s.Queues, 8)
	s.Consumers = cmp.Or(s.Consumers, 2)
	s.SteadyRate, s.SteadyProducers = cmp.Or(s.SteadyRate, 2000), cmp.Or(s.SteadyProducers, 2)
	s.Before = cmp.Or(s.Before, resultfile.Duration(5*time.Second))
	s.DrainTimeout = cmp.Or(s.DrainTimeout, resultfile.Duration(10*time.Minute))
	s.ReadSize = cmp.Or(s.ReadSize, min(s.BacklogBytes, 4<<30))
	s.Repeats = cmp.Or(s.Repeats, 1)
}

// Validate reports every bad field at once.
func (s *Settings) Validate() error {
	var errs []error
	if s.Flush != "async" && s.Flush != "sync" {
		errs = append(errs, fmt.Errorf("flush %q: want async or sync", s.Flush))
	}
	if s.BacklogBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("backlog_bytes %d: want at least 1 MiB", s.BacklogBytes))
	}
	if s.MessageSize < 16 || s.Queues < 1 || s.Consumers < 1 || s.SteadyRate <= 0 || s.SteadyProducers < 1 {
		errs = append(errs, fmt.Errorf("message_size %d (>= 16), queues %d, consumers %d, steady_producers %d (>= 1) and steady_rate %g (> 0)",
			s.MessageSize, s.Queues, s.Consumers, s.SteadyProducers, s.SteadyRate))
	}
	if s.Before <= 0 || s.DrainTimeout <= 0 || s.Repeats < 1 {
		errs = append(errs, fmt.Errorf("before and drain_timeout (> 0), repeats %d (>= 1)", s.Repeats))
	}
	if s.PaceMBps < 0 {
		errs = append(errs, fmt.Errorf("pace_mb_per_sec %g: want 0 (full speed) or more", s.PaceMBps))
	}
	if s.ReadSize < 1<<20 {
		errs = append(errs, fmt.Errorf("read_size %d: want at least 1 MiB", s.ReadSize))
	}
	return errors.Join(errs...)
}

// LoadExperiment reads and checks a backlog-drain experiment file.
func LoadExperiment(path string) (*Experiment, error) {
	e, err := resultfile.ReadExperiment[Experiment](path, Kind)
	if err != nil {
		return nil, err
	}
	e.DrainTarget, e.P99Target = cmp.Or(e.DrainTarget, 0.8), cmp.Or(e.P99Target, 2)
	e.CellTargets.ensureDefaults()
	if err := resultfile.CheckForms(path, e.Settings); err != nil {
		return nil, err
	}
	return e, nil
}

// TargetOptions are what a repeat asks of its cluster.
type TargetOptions struct {
	Flush string // "async" or "sync"
	// DirectColdReads: the broker reads the backlog around the page cache
	// (storage.Options.DirectColdReads).
	DirectColdReads bool
	// TransferMsgByHeap: the broker reads every pull into memory.
	TransferMsgByHeap bool
}

// Target is the cluster a repeat fills and drains.
type Target interface {
	// Driver is the loadgen driver the steady producers and the
	// consumers use; Close closes it.
	Driver() loadgen.Driver
	// Fill appends messages of size bytes spread over the topic's queues
	// (created by the runner) until the store holds n more bytes, and
	// makes them durable; it returns the messages and CommitLog bytes
	// appended.
	Fill(ctx context.Context, topic string, queues int, n int64, size int) (msgs, bytes int64, err error)
	// StoreDir holds the store's files, which the runner drops from the
	// page cache.
	StoreDir() string
	// Describe names the store for the result.
	Describe() string
	// Close stops the cluster and removes its data.
	Close() error
}

// ReadCacheCounter is a Target whose store counts its read block cache's
// blocks found and read, and the reads made with O_DIRECT
// (storage.Metrics ReadCacheHits, ReadCacheMisses, ReadCacheDirect).
type ReadCacheCounter interface {
	ReadCache() (hits, misses, direct int64)
}

// Options are a run's plumbing.
type Options struct {
	Quick bool
	// NewTarget starts a fresh cluster per repeat as its options ask.
	NewTarget func(ctx context.Context, to TargetOptions) (Target, error)
	// DiskDir is where the raw read reference reads: the store's disk.
	DiskDir  string
	Progress io.Writer
	// Poll is how often the drain's progress is checked; default 5ms.
	Poll time.Duration
}
