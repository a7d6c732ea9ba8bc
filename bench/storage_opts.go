package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/samsamq/samsa/internal/resultfile"
)

// ErrUnavailable is wrapped by RunStorage's error when the backend asked for
// cannot run here: not registered in this build, or refused by the kernel or
// file system (io_uring disabled, no O_DIRECT). The runner records such a
// cell as skipped with the reason; it never substitutes another backend.
var ErrUnavailable = errors.New("bench: backend unavailable")

// StorageOptions configure RunStorage: the engine options that vary in the
// lab and the load. Zero engine fields mean the storage engine's default.
type StorageOptions struct {
	// Dir is where the store lives; it must not hold a store (a fresh
	// directory is created under it and removed afterwards). Required.
	Dir string
	// Backend is the segment write path; default "pwrite".
	Backend string
	// Flush is "sync" (group commit), "async" (default) or "none".
	Flush string
	// Size is each message body's bytes; default 1024.
	Size int
	// Writers are closed-loop goroutines, each appending one message at a
	// time and waiting for its result; default 1.
	Writers int
	// Duration is the measured time (default 10s), Warmup the unrecorded
	// time before it (default 1s).
	Duration time.Duration
	Warmup   time.Duration
	// Queues the writers spread their messages over (writer i uses queue
	// i mod Queues) in one topic; default 8.
	Queues int
	// Engine options (storage.Options / FlushOptions); 0 = the engine's
	// default.
	SegmentSize   int64
	Preallocate   bool
	MaxBatchBytes int64
	MinInterval   time.Duration
	MaxGather     time.Duration // negative = off
	MaxPending    int
	Interval      time.Duration
	DirtyPages    int
	// AckBuffered acknowledges from the backend's user-space buffer
	// (storage Options.AckBuffered: durability "memory"); default false.
	AckBuffered bool
	// NoStage turns the engine's stages off (storage Options.NoStage):
	// async appends are then handed to the kernel by write calls.
	NoStage bool
}

// EnsureDefaults fills the bench's own zero fields (not the engine's).
func (o *StorageOptions) EnsureDefaults() {
	if o.Backend == "" {
		o.Backend = "pwrite"
	}
	if o.Flush == "" {
		o.Flush = "async"
	}
	if o.Size == 0 {
		o.Size = 1024
	}
	if o.Writers == 0 {
		o.Writers = 1
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup == 0 {
		o.Warmup = time.Second
	}
	if o.Queues == 0 {
		o.Queues = 8
	}
}

// Validate reports every invalid field at once.
func (o *StorageOptions) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.Dir == "" {
		bad("dir is required")
	}
	switch o.Flush {
	case "sync", "async", "none":
	default:
		bad("flush %q: want sync, async or none", o.Flush)
	}
	if o.Size <= 0 {
		bad("size %d must be > 0", o.Size)
	}
	if o.Writers <= 0 {
		bad("writers %d must be > 0", o.Writers)
	}
	if o.Duration <= 0 || o.Warmup < 0 {
		bad("duration %s must be > 0 and warmup %s >= 0", o.Duration, o.Warmup)
	}
	if o.Queues <= 0 || o.Queues > 1<<16 {
		bad("queues %d must be in [1, 65536]", o.Queues)
	}
	if o.SegmentSize < 0 || o.MaxBatchBytes < 0 || o.MinInterval < 0 || o.MaxPending < 0 || o.Interval < 0 {
		bad("engine options must not be negative")
	}
	return errors.Join(errs...)
}

// String is the bench's side of the configuration, on one line; the
// result's StoreConfig has the engine's Options.String().
func (o StorageOptions) String() string {
	stage := ""
	if o.NoStage { // only when set: the gate keys results by this line
		stage = " no_stage=true"
	}
	return fmt.Sprintf("backend=%s flush=%s size=%d writers=%d queues=%d duration=%s warmup=%s segment_size=%d preallocate=%t max_batch_bytes=%d min_interval=%s max_gather=%s max_pending=%d interval=%s dirty_pages=%d ack_buffered=%t%s",
		o.Backend, o.Flush, o.Size, o.Writers, o.Queues, o.Duration, o.Warmup,
		o.SegmentSize, o.Preallocate, o.MaxBatchBytes, o.MinInterval, o.MaxGather, o.MaxPending, o.Interval, o.DirtyPages, o.AckBuffered, stage)
}

// StorageResult is one storage run. Counters cover the measured window.
type StorageResult struct {
	Kind string `json:"kind"` // "storage"
	// Config is StorageOptions.String(), StoreConfig the engine's
	// Options.String() after its defaults: together every option that ran.
	Config      string `json:"config"`
	StoreConfig string `json:"store_config"`
	// Durability is what an acknowledged append survived
	// (storage.Durability: memory, process-crash, power-loss) and
	// DurabilityNote the store's one-line account of it.
	Durability      string         `json:"durability,omitempty"`
	DurabilityNote  string         `json:"durability_note,omitempty"`
	Options         StorageOptions `json:"options"`
	Start           time.Time      `json:"start"`
	MeasuredSeconds float64        `json:"measured_seconds"`
	Appends         int64          `json:"appends"`
	Errors          int64          `json:"errors"`
	FirstError      string         `json:"first_error,omitempty"`
	// RecordBytes is the stored size of one message (header, body,
	// topic, properties).
	RecordBytes int     `json:"record_bytes"`
	MsgsPerSec  float64 `json:"msgs_per_sec"`
	// MBPerSec counts message bodies, LogMBPerSec stored records (what
	// the disk is given); 10^6 bytes.
	MBPerSec    float64 `json:"mb_per_sec"`
	LogMBPerSec float64 `json:"log_mb_per_sec"`
	// LatencyUs is per Append, from call to return (under sync: until
	// durable).
	LatencyUs Latency `json:"latency_us"`
	// Engine counters (Store.Metrics deltas over the measured window).
	Fsyncs       int64 `json:"fsyncs"`
	FlushBatches int64 `json:"flush_batches"`
	// AvgBatch is appends per fsync.
	AvgBatch float64 `json:"avg_batch"`
	// Gathers are sync rounds that waited for the writers the previous
	// round released; GatherMisses those whose wait ended unfilled.
	Gathers      int64   `json:"gathers,omitempty"`
	GatherMisses int64   `json:"gather_misses,omitempty"`
	GatherAvgUs  float64 `json:"gather_avg_us,omitempty"`
	// OwnRounds are sync rounds a lone writer ran on its own goroutine
	// (no hand-off to the flusher).
	OwnRounds    int64 `json:"own_rounds,omitempty"`
	WriteCalls   int64 `json:"write_syscalls"`
	BytesWritten int64 `json:"bytes_written"`
	// SyscallsPer1000 is (write syscalls + fsync syscalls) per 1,000
	// appends, as the backend counts them: an io_uring submit counts once,
	// with the fsync linked into it; mmap's msync counts as an fsync.
	SyscallsPer1000 float64 `json:"syscalls_per_1000_appends"`
	// FlushP99Us is the engine's own flush latency p99, if it keeps one.
	FlushP99Us float64 `json:"flush_p99_us,omitempty"`
	// ProcIO is the process's /proc/self/io deltas over the window.
	ProcIO *ProcIO `json:"proc_io,omitempty"`
	// Device is the write counters of the block device holding Dir over
	// the window; nil where they cannot be read, and DeviceNote says why.
	Device     *DeviceIO           `json:"device,omitempty"`
	DeviceNote string              `json:"device_note,omitempty"`
	Machine    *resultfile.Machine `json:"machine,omitempty"`
}
