package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/vfs"
)

// FlushPolicy says when appended bytes are made durable.
type FlushPolicy int

const (
	// FlushAsync flushes every Interval when DirtyPages pages are dirty,
	// and everything at least every FullInterval (RocketMQ's
	// ASYNC_FLUSH). Append returns once the bytes are in the kernel
	// (durability process-crash; see AckBuffered). The default.
	FlushAsync FlushPolicy = iota
	// FlushSync is group commit: Append returns once its record is
	// durable; one flusher makes every pending record durable with one
	// fsync per segment touched (RocketMQ's SYNC_FLUSH).
	FlushSync
	// FlushNone never flushes while open (the OS writes back when it
	// likes); Close flushes.
	FlushNone
)

var flushPolicyNames = [...]string{FlushAsync: "async", FlushSync: "sync", FlushNone: "none"}

func (p FlushPolicy) String() string {
	if p < 0 || int(p) >= len(flushPolicyNames) {
		return fmt.Sprintf("FlushPolicy(%d)", int(p))
	}
	return flushPolicyNames[p]
}

// ParseFlushPolicy parses "sync", "async" or "none".
func ParseFlushPolicy(s string) (FlushPolicy, error) {
	for i, n := range flushPolicyNames {
		if s == n {
			return FlushPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("storage: unknown flush policy %q (have sync, async, none)", s)
}

// Defaults and limits.
const (
	DefaultBackend                       = "pwrite"
	DefaultSegmentSize                   = 1 << 30
	MinSegmentSize                       = 4 << 10
	MaxSegmentSize                       = 1<<31 - pageSize // a blank record's int32 size spans the rest of a segment
	DefaultMaxMessageSize                = 4 << 20
	DefaultMaxPending                    = 16384
	DefaultMaxGather                     = time.Millisecond
	DefaultFlushTimeout                  = 5 * time.Second
	DefaultFlushInterval                 = 500 * time.Millisecond
	DefaultDirtyPages                    = 4
	DefaultFullFlushInterval             = 10 * time.Second
	DefaultCheckpointInterval            = time.Second
	DefaultConsumeQueueFlushLeastEntries = 400
	DefaultConsumeQueueFlushMaxDelay     = 10 * time.Second
	DefaultRetentionMaxAge               = 72 * time.Hour
	DefaultRetentionDiskRatio            = 0.75
	DefaultRetentionCheckEvery           = 10 * time.Second
	DefaultScrubBytesPerSecond           = 8 << 20
	DefaultScrubInterval                 = 24 * time.Hour
	pageSize                             = 4096
)

// Options configure a Store. The zero value of every field but Dir means
// its default; call EnsureDefaults to see them, Validate to check.
type Options struct {
	// Dir is the store's root directory (required). Layout:
	// Dir/commitlog/<20-digit start offset>, Dir/consumequeue/<topic>/<queue>/,
	// Dir/checkpoint, Dir/abort (present while open), Dir/LOCK.
	Dir string
	// FS is the file system every byte goes through. Default vfs.Default.
	FS vfs.FS
	// Backend names the segment write path (backend.Names()): "pwrite"
	// (default: buffered writes, fdatasync), "mmap", "odirect", "uring".
	Backend string
	// SegmentBackend, if set, is used instead of the backend named by
	// Backend: a configured instance (backend.NewODirect with other buffer
	// sizes, say). Default nil.
	SegmentBackend backend.Backend
	// SegmentSize is the bytes of one CommitLog file. Default 1 GiB;
	// a multiple of 4 KiB in [4 KiB, 2 GiB - 4 KiB] (a blank record's
	// 32-bit size must span a segment's tail). Larger segments mean fewer
	// files and coarser retention; a store keeps its segment size for
	// life (Open refuses a different one).
	SegmentSize int64
	// Preallocate reserves each new segment with fallocate at creation
	// (default false): no ENOSPC mid-segment and cheaper fdatasyncs, at
	// the price of disk space up front. mmap and odirect always reserve.
	Preallocate bool
	// IndexReserve is the bytes the store keeps allocated in
	// Dir/index.reserve so that, on a full disk, the index entries of
	// what was acknowledged still find space (reserve.go). Default
	// SegmentSize/64 within [1 MiB, 16 MiB] (at least what a pwrite
	// segment's write-behind may allocate ahead of the appends in the
	// moment the reserve is freed); negative turns it off.
	IndexReserve int64
	// MaxMessageSize bounds a message's body in bytes. Default 4 MiB
	// (RocketMQ's maxMessageSize). A record must also fit a segment.
	MaxMessageSize int
	// Flush says when appends become durable.
	Flush FlushOptions
	// AckBuffered (async and none flush) acknowledges an append once it is
	// in the backend's user-space write buffer, before its bytes reach the
	// kernel: RocketMQ's transientStorePoolEnable. A process crash then
	// loses acknowledged records still in the buffer (durability
	// "memory", see Durability), and consumers may read records a crash
	// takes back. Default false: every append is in the kernel (a stage,
	// see NoStage; or handed over: page cache, or the device for O_DIRECT)
	// before it is acknowledged or indexed (durability "process-crash").
	// With a stage it buys little (a staged append is in the kernel once
	// copied); without one it buys most on the O_DIRECT backends, whose
	// hand-over is a device write. mmap ignores it (its buffer is the page
	// cache); sync flush ignores it.
	AckBuffered bool
	// NoStage turns stages off. By default, with async and none flush
	// and a backend.Stager (pwrite, odirect, uring), each segment's write
	// buffer is a shared mapping of a stage file under Dir/stage
	// (backend/stage.go): an append is in the kernel once it is copied, so
	// it is acknowledged with no write call and no wait for one, at the
	// same durability (process-crash); the segment file still gets its
	// bytes in large writes (pwrite: a buffer at a time; odirect, uring:
	// aligned blocks written behind the appender, an eighth of
	// ODirectOptions.StagedRingSize at a time). Open replays the stages a process crash left (whatever the
	// Options say now); a stage made before a reboot is dropped (its bytes
	// were never synced). Stages need a file system that names its boot
	// (vfs.Booter) and maps files; sync flush, AckBuffered and the other
	// backends do without. Without a stage, appends are handed to the
	// kernel by write calls, batched under load (handoff.go).
	NoStage bool
	// ConsumeQueueEntries is the entries per ConsumeQueue file. Default
	// 300,000 (6 MB files, RocketMQ's).
	ConsumeQueueEntries int
	// ConsumeQueueMaxOpenFiles caps the ConsumeQueue files that keep a
	// descriptor open; the others are opened on use and the least
	// recently used idle one closed (synced first if written). Default
	// 1024 (consumequeue.DefaultMaxOpenFiles); Open lowers it to half the
	// process's RLIMIT_NOFILE if that is less, leaving the rest to the
	// CommitLog, the indexes and the connections. Higher holds more
	// descriptors; lower costs an open (and a sync) each time a queue
	// outside the hot set is touched.
	ConsumeQueueMaxOpenFiles int
	// ReadCacheSize is the bytes of the read block cache (blockcache.go),
	// which serves pulls whose records lie among other queues' records:
	// one read of a stretch of the log for every queue's pull over it.
	// Default DefaultReadCacheSize (64 MiB), allocated as reads need it;
	// negative turns it off (each pull then reads its own span).
	ReadCacheSize int64
	// DirectColdReads: a read block cache miss (blockcache.go) whose bytes
	// are not all in the page cache is read from the disk with O_DIRECT
	// (backend.ColdReader: pwrite segments on OS files), so a backlog
	// drain does not fill the page cache with bytes read once, and the
	// backlog read-ahead hints (readahead.go), which would, are off.
	// Bytes in the page cache are read from it as before.
	DirectColdReads bool
	// CheckpointInterval is how often the ConsumeQueues are flushed and
	// the checkpoint written. Default 1s (RocketMQ's
	// flushIntervalConsumeQueue). Recovery after a crash scans from the
	// segment the checkpoint names, and corruption below its durable
	// offset is an error rather than a torn tail: shorter means less to
	// scan and tighter corruption detection, for three small fsyncs a
	// time.
	CheckpointInterval time.Duration
	// ConsumeQueueFlushLeastEntries: the periodic checkpoint syncs a
	// ConsumeQueue once it holds this many entries not yet synced, and
	// leaves a quieter one for a later checkpoint (the checkpoint's
	// dispatched offset then stops below its first unsynced entry, and
	// recovery after a crash re-indexes from there). Default 400, about
	// two 4 KiB pages of entries (RocketMQ's flushConsumeQueueLeastPages
	// = 2). 1 syncs every queue written since the last checkpoint, every
	// time: at 10,000 busy queues, 10,000 fsyncs a second.
	ConsumeQueueFlushLeastEntries int
	// ConsumeQueueFlushMaxDelay bounds how long an entry stays unsynced
	// (RocketMQ's flushConsumeQueueThoroughInterval, 60 s there): so how
	// much of the CommitLog recovery may re-index after a crash. Within
	// it, each checkpoint syncs its share of the quiet queues, oldest
	// first, so the work is spread evenly. Default 10s; at least
	// CheckpointInterval.
	ConsumeQueueFlushMaxDelay time.Duration
	// Retention deletes old segments.
	Retention RetentionOptions
	// MessageIndex is the key index QueryByKey reads (keyindex.go): on
	// by default.
	MessageIndex MessageIndexOptions
	// Scrub re-reads sealed segments at rest to find damage recovery
	// never reads (scrub.go).
	Scrub ScrubOptions
	// VerifyOnOpen: after each Open, check every record written since the
	// verified mark (the point below which the log was read back and found
	// good, Dir/verified), in the background at full speed; Unverified
	// says how much is left (verified.go, verify_open.go). A clean Open
	// reads nothing and the scrubber reaches new bytes only hours later,
	// so without it damage done while the store was stopped goes unseen
	// by a replica that may be elected master. Default VerifyOn; VerifyOff
	// saves the disk reads (one pass over what was written since the last
	// check: after an upgrade from a version without the mark, the whole
	// log). Independent of Scrub.
	VerifyOnOpen VerifyMode
	// verifyPace is a test hook, run before each chunk Open's verification
	// reads (outside any lock); false stops the walk as Close does.
	verifyPace func(stop <-chan struct{}) bool
	// Logger receives recovery, retention and error notes. Default
	// slog.Default().
	Logger *slog.Logger
	// Clock gives store timestamps and retention's notion of now.
	// Default time.Now.
	Clock func() time.Time
}

// FlushOptions tune the flush policy. Fields not used by the chosen
// policy are ignored (but still validated).
type FlushOptions struct {
	// Policy: FlushAsync (default), FlushSync or FlushNone.
	Policy FlushPolicy
	// MaxBatchBytes (sync) ends a group's linger (MinInterval) early once
	// this many bytes wait. 0 (default) = no bound: linger the whole
	// MinInterval. Without MinInterval there is no linger and no effect:
	// a group is whatever was appended during the previous fsync.
	MaxBatchBytes int64
	// MinInterval (sync) is the least time between the end of one fsync
	// and the start of the next: a linger that trades latency for bigger
	// groups. 0 (default) = none; a lone writer waits for no timer.
	MinInterval time.Duration
	// MaxGather (sync) bounds how long a group-commit round waits, before
	// it starts, for the writers the previous round released to append
	// again. Without it closed-loop writers split into two alternating
	// cohorts (those released by one fsync miss the next round, which
	// started at once with the others), halving every group. The wait ends
	// as soon as as many appends wait as the writer population seen last
	// round, and never exceeds half the last fsync's duration (so on a
	// fast disk that, not MaxGather, is the bound); a lone writer never
	// waits, and after a wait that ends with few of the missing writers
	// back (open-loop traffic) the next rounds skip it, backing off.
	// Default 1ms; negative = off.
	MaxGather time.Duration
	// MaxPending (sync) bounds the appends waiting for durability; an
	// Append blocks (honouring its context) while the queue is full.
	// Default 16384.
	MaxPending int
	// Timeout (sync) is how long Append waits for durability before it
	// returns ErrFlushTimeout (the record is written and may yet become
	// durable). Default 5s. A lone writer that runs its own round
	// (lone.go) waits for its own fsync however long it takes; Timeout
	// bounds the waits of appends queued for the flusher.
	Timeout time.Duration
	// NoOwnRound (sync) hands every sync append's fsync to the flusher,
	// so that Timeout bounds every wait, a lone writer's too, at the cost
	// of two goroutine hand-offs per fsync for that writer (lone.go). The
	// broker sets it: RocketMQ answers FLUSH_DISK_TIMEOUT after
	// syncFlushTimeout while a disk hangs, to one producer as to many.
	NoOwnRound bool
	// Interval (async) is how often the flusher looks at the dirty bytes.
	// Default 500ms (RocketMQ's flushIntervalCommitLog).
	Interval time.Duration
	// DirtyPages (async): a look flushes only when at least this many
	// 4 KiB pages are dirty. Default 4 (RocketMQ's flushCommitLogLeastPages);
	// a negative value means 0 (flush whatever is dirty at every look).
	DirtyPages int
	// FullInterval (async) forces a flush of everything dirty at least
	// this often. Default 10s (RocketMQ's flushCommitLogThoroughInterval).
	FullInterval time.Duration
}

// RetentionOptions say when whole segments are deleted, oldest first. The
// active segment and any segment not yet durable or dispatched are never
// deleted.
type RetentionOptions struct {
	// MaxAge deletes segments whose newest record is older. Default 72h
	// (RocketMQ's fileReservedTime); negative = keep forever.
	MaxAge time.Duration
	// DiskRatio deletes segments while the file system's used share is
	// above it. Default 0.75 (RocketMQ's diskMaxUsedSpaceRatio); negative
	// = off.
	DiskRatio float64
	// CheckInterval is how often retention runs. Default 10s.
	CheckInterval time.Duration
}

// ScrubOptions tune the background scrubber: it re-reads the sealed,
// durable segments at rest, record by record (size, magic, physical
// offset, both CRCs), and reports damage with a Warn line, the metrics
// (ScrubCorrupt) and ScrubStatus. Recovery reads only the log after the
// last checkpoint, so without it a bad sector in an old segment is found
// by the consumer that reads it, or never.
type ScrubOptions struct {
	// BytesPerSecond bounds the scrubber's reads. Default 8 MiB/s: a
	// 1 GiB segment in about two minutes, 1 TiB in about 36 hours, little
	// beside the appends' and consumers' bandwidth. Higher finds damage
	// sooner for more disk reads and page-cache churn; negative = off.
	BytesPerSecond int64
	// Interval is the time from the start of one pass over the sealed
	// segments to the start of the next (a longer pass is followed at
	// once). The first pass starts min(Interval, 1 minute) after Open.
	// Default 24h: each byte is checked at least daily when the rate
	// allows.
	Interval time.Duration

	// Test hooks: the rate limiter's clock and sleep (nil: the real ones).
	now   func() time.Time
	sleep func(d time.Duration, stop <-chan struct{}) bool
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Backend == "" {
		o.Backend = DefaultBackend
		if o.SegmentBackend != nil {
			o.Backend = o.SegmentBackend.Name()
		}
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.IndexReserve == 0 {
		o.IndexReserve = min(max(o.SegmentSize/64, 1<<20), 16<<20)
	}
	if o.ReadCacheSize == 0 {
		o.ReadCacheSize = DefaultReadCacheSize
	}
	if o.ConsumeQueueMaxOpenFiles == 0 {
		o.ConsumeQueueMaxOpenFiles = consumequeue.DefaultMaxOpenFiles
	}
	if o.ConsumeQueueEntries == 0 {
		o.ConsumeQueueEntries = consumequeue.DefaultEntriesPerFile
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.ConsumeQueueFlushLeastEntries == 0 {
		o.ConsumeQueueFlushLeastEntries = DefaultConsumeQueueFlushLeastEntries
	}
	if o.ConsumeQueueFlushMaxDelay == 0 {
		o.ConsumeQueueFlushMaxDelay = max(DefaultConsumeQueueFlushMaxDelay, o.CheckpointInterval)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	f := &o.Flush
	if f.MaxPending == 0 {
		f.MaxPending = DefaultMaxPending
	}
	if f.MaxGather == 0 {
		f.MaxGather = DefaultMaxGather
	}
	if f.Timeout == 0 {
		f.Timeout = DefaultFlushTimeout
	}
	if f.Interval == 0 {
		f.Interval = DefaultFlushInterval
	}
	if f.DirtyPages == 0 {
		f.DirtyPages = DefaultDirtyPages
	}
	if f.FullInterval == 0 {
		f.FullInterval = DefaultFullFlushInterval
	}
	r := &o.Retention
	if r.MaxAge == 0 {
		r.MaxAge = DefaultRetentionMaxAge
	}
	if r.DiskRatio == 0 {
		r.DiskRatio = DefaultRetentionDiskRatio
	}
	if r.CheckInterval == 0 {
		r.CheckInterval = DefaultRetentionCheckEvery
	}
	if o.Scrub.BytesPerSecond == 0 {
		o.Scrub.BytesPerSecond = DefaultScrubBytesPerSecond
	}
	if o.Scrub.Interval == 0 {
		o.Scrub.Interval = DefaultScrubInterval
	}
	o.MessageIndex.ensureDefaults()
}

// Validate reports every invalid field at once (call EnsureDefaults first:
// zero values are invalid here).
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("storage: Options."+format, args...))
	}
	if o.Dir == "" {
		bad("Dir is required")
	}
	if o.FS == nil {
		bad("FS is nil")
	}
	if o.SegmentBackend == nil {
		if _, err := backend.Get(o.Backend); err != nil {
			bad("Backend: %v", err)
		}
	}
	if o.SegmentSize < MinSegmentSize || o.SegmentSize > MaxSegmentSize || o.SegmentSize%pageSize != 0 {
		bad("SegmentSize %d: want a multiple of 4096 in [%d, %d]", o.SegmentSize, int64(MinSegmentSize), int64(MaxSegmentSize))
	}
	if o.MaxMessageSize <= 0 {
		bad("MaxMessageSize %d must be positive", o.MaxMessageSize)
	}
	if o.ConsumeQueueMaxOpenFiles < 1 {
		bad("ConsumeQueueMaxOpenFiles %d must be at least 1", o.ConsumeQueueMaxOpenFiles)
	}
	if o.ConsumeQueueEntries < 1 || o.ConsumeQueueEntries > consumequeue.MaxEntriesPerFile {
		bad("ConsumeQueueEntries %d out of [1, %d]", o.ConsumeQueueEntries, consumequeue.MaxEntriesPerFile)
	}
	if o.CheckpointInterval <= 0 {
		bad("CheckpointInterval %v must be positive", o.CheckpointInterval)
	}
	if o.ConsumeQueueFlushLeastEntries < 1 {
		bad("ConsumeQueueFlushLeastEntries %d must be at least 1", o.ConsumeQueueFlushLeastEntries)
	}
	if o.ConsumeQueueFlushMaxDelay < o.CheckpointInterval {
		bad("ConsumeQueueFlushMaxDelay %v must be at least CheckpointInterval %v", o.ConsumeQueueFlushMaxDelay, o.CheckpointInterval)
	}
	if o.Logger == nil {
		bad("Logger is nil")
	}
	if o.Clock == nil {
		bad("Clock is nil")
	}
	f := o.Flush
	if f.Policy < FlushAsync || f.Policy > FlushNone {
		bad("Flush.Policy %d unknown", int(f.Policy))
	}
	if f.MaxBatchBytes < 0 {
		bad("Flush.MaxBatchBytes %d is negative", f.MaxBatchBytes)
	}
	if f.MinInterval < 0 {
		bad("Flush.MinInterval %v is negative", f.MinInterval)
	}
	if f.MaxPending < 1 {
		bad("Flush.MaxPending %d must be at least 1", f.MaxPending)
	}
	if f.Timeout <= 0 {
		bad("Flush.Timeout %v must be positive", f.Timeout)
	}
	if f.Interval <= 0 {
		bad("Flush.Interval %v must be positive", f.Interval)
	}
	if f.FullInterval <= 0 {
		bad("Flush.FullInterval %v must be positive", f.FullInterval)
	}
	r := o.Retention
	if r.DiskRatio >= 1 {
		bad("Retention.DiskRatio %v must be below 1", r.DiskRatio)
	}
	if r.CheckInterval <= 0 {
		bad("Retention.CheckInterval %v must be positive", r.CheckInterval)
	}
	if o.Scrub.Interval <= 0 {
		bad("Scrub.Interval %v must be positive", o.Scrub.Interval)
	}
	if o.VerifyOnOpen != VerifyOn && o.VerifyOnOpen != VerifyOff {
		bad("VerifyOnOpen %d unknown", int(o.VerifyOnOpen))
	}
	if err := o.MessageIndex.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// String is a stable one-line form (fields in a fixed order, no pointers)
// for result files and logs.
func (o Options) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "storage.Options{Dir: %q, FS: %T, Backend: %s, SegmentSize: %d, Preallocate: %t, MaxMessageSize: %d, ",
		o.Dir, o.FS, o.backendName(), o.SegmentSize, o.Preallocate, o.MaxMessageSize)
	f := o.Flush
	fmt.Fprintf(&b, "Flush: {Policy: %s, MaxBatchBytes: %d, MinInterval: %v, MaxGather: %v, MaxPending: %d, Timeout: %v, NoOwnRound: %t, Interval: %v, DirtyPages: %d, FullInterval: %v}, ",
		f.Policy, f.MaxBatchBytes, f.MinInterval, f.MaxGather, f.MaxPending, f.Timeout, f.NoOwnRound, f.Interval, f.DirtyPages, f.FullInterval)
	fmt.Fprintf(&b, "AckBuffered: %t, NoStage: %t, ConsumeQueueEntries: %d, ConsumeQueueMaxOpenFiles: %d, ReadCacheSize: %d, DirectColdReads: %t, CheckpointInterval: %v, ",
		o.AckBuffered, o.NoStage, o.ConsumeQueueEntries, o.ConsumeQueueMaxOpenFiles, o.ReadCacheSize, o.DirectColdReads, o.CheckpointInterval)
	r := o.Retention
	fmt.Fprintf(&b, "Retention: {MaxAge: %v, DiskRatio: %g, CheckInterval: %v}, ", r.MaxAge, r.DiskRatio, r.CheckInterval)
	fmt.Fprintf(&b, "Scrub: {BytesPerSecond: %d, Interval: %v}, VerifyOnOpen: %s, ", o.Scrub.BytesPerSecond, o.Scrub.Interval, o.VerifyOnOpen)
	fmt.Fprintf(&b, "MessageIndex: %s}", o.MessageIndex)
	return b.String()
}

// backendName is Backend, marked when SegmentBackend overrides it.
func (o Options) backendName() string {
	if o.SegmentBackend != nil {
		return o.SegmentBackend.Name() + "(custom)"
	}
	return o.Backend
}

// dirtyThreshold is the async flush's dirty-byte threshold.
func (f FlushOptions) dirtyThreshold() int64 {
	return int64(max(f.DirtyPages, 0)) * pageSize
}
