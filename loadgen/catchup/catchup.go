// Package catchup is the lab's replication catch-up experiment: how fast a
// new, empty slave copies a master's CommitLog, against the raw disk's
// sequential write speed measured in the same run.
//
// A run fills a master with FillBytes of messages while no slave is
// attached, then starts an empty slave and times it until it holds the
// master's handed offset (the slave's start, handshake and every byte
// counted). Then bench.RunDisk writes the same disk sequentially under
// the fsync policy that matches the slave's store (async flush: an
// fdatasync every 500 ms). The figure is catch-up MB/s ÷ disk MB/s, per
// repeat; the target is a ratio (≥ 0.8 by default).
//
// The cluster is a Target the caller provides (cmd/samsa's embedded
// master and slave), so tests can drive the runner with a fake.
// RunExperiment runs one repeat at a time and is not safe for concurrent
// use with itself on one directory.
package catchup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/samsamq/samsa/bench"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
)

// Kind is the "kind" of a catch-up experiment file and its result.
const Kind = "replication-catchup"

// Experiment is an experiment file of kind "replication-catchup".
type Experiment struct {
	resultfile.Spec
	resultfile.Forms[Settings, *Settings]
	// Target is what catch-up MB/s ÷ disk MB/s should reach; default 0.8.
	Target float64 `json:"target,omitempty"`
}

// Settings are a run's parameters.
type Settings struct {
	// FillBytes is how much the master holds before the slave starts.
	FillBytes int64 `json:"fill_bytes,omitempty"`
	// MessageSize is each filled message's body; default 1024.
	MessageSize int `json:"message_size,omitempty"`
	// Repeats: runs, median reported; default 1.
	Repeats int `json:"repeats,omitempty"`
	// DiskBlock, DiskFsync and DiskDuration are the raw-disk reference's
	// (bench.DiskOptions); defaults 32 KiB (the replication link's
	// frame), interval (the slave's async flush) and 5s.
	DiskBlock    int                 `json:"disk_block,omitempty"`
	DiskFsync    bench.FsyncPolicy   `json:"disk_fsync,omitempty"`
	DiskDuration resultfile.Duration `json:"disk_duration,omitempty"`
	// Timeout bounds one catch-up; default 10m.
	Timeout resultfile.Duration `json:"timeout,omitempty"`
	// Settle is an idle pause before each timed phase (the slave's
	// catch-up and the raw-disk reference), so that neither writes into
	// page-cache pages the other just freed; default 5s ("0s" none). A VM
	// whose guest reports free memory to its host (virtio-balloon free
	// page reporting, a few seconds after the free) pays a host fault on
	// the first touch of such a page: on the lab's VM, 512 MiB written
	// into a new file took 0.17 s of system time right after another
	// file's pages were freed and 1.7 s eight seconds later. Without the
	// pause, the raw-disk run, which starts right after the master's and
	// the slave's files are deleted, wrote into warm pages while the
	// slave wrote into cold ones.
	Settle *resultfile.Duration `json:"settle,omitempty"`
}

// settle returns the pause before a timed phase.
func (s *Settings) settle() time.Duration {
	if s.Settle == nil {
		return 5 * time.Second
	}
	return time.Duration(*s.Settle)
}

// EnsureDefaults fills the zero fields with their defaults.
func (s *Settings) EnsureDefaults() {
	s.MessageSize, s.Repeats = cmp.Or(s.MessageSize, 1024), cmp.Or(s.Repeats, 1)
	s.DiskBlock, s.DiskFsync = cmp.Or(s.DiskBlock, 32<<10), cmp.Or(s.DiskFsync, bench.FsyncInterval)
	s.DiskDuration = cmp.Or(s.DiskDuration, resultfile.Duration(5*time.Second))
	s.Timeout = cmp.Or(s.Timeout, resultfile.Duration(10*time.Minute))
}

// Validate reports every bad field at once.
func (s *Settings) Validate() error {
	var errs []error
	if s.FillBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("fill_bytes %d: want at least 1 MiB", s.FillBytes))
	}
	if s.MessageSize < 8 || s.Repeats < 1 || s.DiskBlock < 512 || s.DiskDuration <= 0 || s.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("message_size %d (>= 8), repeats %d (>= 1), disk_block %d (>= 512), disk_duration and timeout (> 0)",
			s.MessageSize, s.Repeats, s.DiskBlock))
	}
	if s.Settle != nil && *s.Settle < 0 {
		errs = append(errs, fmt.Errorf("settle %v: want >= 0", time.Duration(*s.Settle)))
	}
	switch s.DiskFsync {
	case bench.FsyncEvery, bench.FsyncInterval, bench.FsyncNone:
	default:
		errs = append(errs, fmt.Errorf("disk_fsync %q: want every, interval or none", s.DiskFsync))
	}
	return errors.Join(errs...)
}

// LoadExperiment reads and checks a catch-up experiment file.
func LoadExperiment(path string) (*Experiment, error) {
	e, err := resultfile.ReadExperiment[Experiment](path, Kind)
	if err != nil {
		return nil, err
	}
	e.Target = cmp.Or(e.Target, 0.8)
	if err := resultfile.CheckForms(path, e.Settings); err != nil {
		return nil, err
	}
	return e, nil
}

// Target is the cluster a run fills and a slave joins.
type Target interface {
	// Fill appends messages of size bytes to the master, with no slave
	// attached, until it holds at least n bytes; it returns the master's
	// handed offset.
	Fill(ctx context.Context, n int64, size int) (int64, error)
	// StartSlave starts a new, empty slave of the master.
	StartSlave() (Slave, error)
	// Close stops the master and the slave and removes their data.
	Close() error
}

// Slave is a started slave.
type Slave interface {
	// Offset is the end of the slave's CommitLog.
	Offset() int64
	// Describe names the slave's store for the result (durability, backend).
	Describe() string
}

// Options are a run's plumbing.
type Options struct {
	Quick bool
	// NewTarget starts a fresh master per repeat.
	NewTarget func(ctx context.Context) (Target, error)
	// DiskDir is where the raw-disk reference writes: the disk the
	// slave's store is on.
	DiskDir  string
	Progress io.Writer
	// Poll is how often the slave's offset is read; default 2ms.
	Poll time.Duration
}

// Run is one repeat.
type Run struct {
	FillBytes      int64   `json:"fill_bytes"` // the master's handed offset
	FillSeconds    float64 `json:"fill_seconds"`
	CatchUpSeconds float64 `json:"catch_up_seconds"`
	CatchUpMBps    float64 `json:"catch_up_mb_per_sec"` // 10^6 B/s
	DiskMBps       float64 `json:"disk_mb_per_sec"`
	Ratio          float64 `json:"ratio"`
	Slave          string  `json:"slave"`
	DiskConfig     string  `json:"disk_config"`
}

// Result is what a catch-up run writes under results/.
type Result struct {
	resultfile.Header
	Settings Settings `json:"settings"`
	Runs     []Run    `json:"runs"`
	// Median is the median run by ratio; Met whether its ratio reached
	// Target.
	Median Run     `json:"median"`
	Target float64 `json:"target"`
	Met    bool    `json:"met"`
}

// RunExperiment runs the repeats: fill, catch up, raw disk.
func RunExperiment(ctx context.Context, e *Experiment, opts Options) (*Result, error) {
	s, err := e.Settings(opts.Quick)
	if err != nil {
		return nil, err
	}
	opts.Progress, opts.Poll = cmp.Or(opts.Progress, io.Discard), cmp.Or(opts.Poll, 2*time.Millisecond)
	res := &Result{Header: e.Header(opts.Quick), Settings: s, Target: e.Target}
	if res.Runs, err = lab.Repeat(lab.Repeats[Run]{N: s.Repeats, What: "catchup", Progress: opts.Progress,
		Title: func(i int) string {
			return fmt.Sprintf("%s: repeat %d/%d: fill %d MiB, then an empty slave", e.Name, i, s.Repeats, s.FillBytes>>20)
		},
		Done: func(r Run) string {
			return fmt.Sprintf("filled %d MiB in %.1fs; caught up in %.2fs: %.1f MB/s; disk %.1f MB/s; ratio %.2f",
				r.FillBytes>>20, r.FillSeconds, r.CatchUpSeconds, r.CatchUpMBps, r.DiskMBps, r.Ratio)
		}}, func(int) (Run, error) { return runOnce(ctx, s, opts) }); err != nil {
		return nil, err
	}
	res.Median = lab.Median(res.Runs, func(r Run) float64 { return r.Ratio })
	res.Met = res.Median.Ratio >= res.Target
	return res, nil
}

func runOnce(ctx context.Context, s Settings, opts Options) (r Run, err error) {
	t, err := opts.NewTarget(ctx)
	if err != nil {
		return r, err
	}
	closed := false
	defer func() {
		if !closed { // an early return: its error, with the Close's
			err = errors.Join(err, t.Close())
		}
	}()
	t0 := time.Now()
	handed, err := t.Fill(ctx, s.FillBytes, s.MessageSize)
	if err != nil {
		return r, fmt.Errorf("fill: %w", err)
	}
	r.FillBytes, r.FillSeconds = handed, time.Since(t0).Seconds()
	if err := lab.Sleep(ctx, s.settle()); err != nil {
		return r, err
	}
	t0 = time.Now()
	sl, err := t.StartSlave()
	if err != nil {
		return r, fmt.Errorf("slave: %w", err)
	}
	r.Slave = sl.Describe()
	deadline := t0.Add(time.Duration(s.Timeout))
	tick := time.NewTicker(opts.Poll)
	defer tick.Stop()
	for sl.Offset() < handed {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("the slave holds %d of %d bytes after %v", sl.Offset(), handed, time.Duration(s.Timeout))
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-tick.C:
		}
	}
	r.CatchUpSeconds = time.Since(t0).Seconds()
	r.CatchUpMBps = float64(handed) / 1e6 / r.CatchUpSeconds
	closed = true
	if err := t.Close(); err != nil {
		return r, err
	}
	if err := lab.Sleep(ctx, s.settle()); err != nil {
		return r, err
	}
	d, err := bench.RunDisk(ctx, bench.DiskOptions{Dir: opts.DiskDir, Block: s.DiskBlock, Fsync: s.DiskFsync,
		Duration: time.Duration(s.DiskDuration), ProbeDuration: -1})
	if err != nil {
		return r, fmt.Errorf("raw disk: %w", err)
	}
	r.DiskMBps, r.DiskConfig = d.MBPerSec, d.Config
	if r.DiskMBps > 0 {
		r.Ratio = r.CatchUpMBps / r.DiskMBps
	}
	return r, nil
}

// WriteResult writes res as results/<experiment>/<host>-<UTC time>.json
// under dir and returns the path.
func WriteResult(dir string, res *Result) (string, error) {
	return res.Header.WriteResult(dir, res)
}

// Markdown renders the result: one row per repeat, the median and the
// target.
func (r *Result) Markdown() string {
	var b strings.Builder
	r.Heading(&b)
	fmt.Fprintf(&b, "Run %s; MB = 10⁶ B; catch-up = the master's handed offset ÷ the time from starting the empty slave until it held that offset; disk = `bench disk` (%s) on the same disk right after; an idle pause of %v before each timed phase (settle: neither writes into page-cache pages the other just freed).\n\n",
		r.Start.Format("2006-01-02 15:04 UTC"), r.Median.DiskConfig, r.Settings.settle())
	b.WriteString("| repeat | filled (MiB) | fill s | catch-up s | catch-up MB/s | disk MB/s | ratio | slave |\n|---|---|---|---|---|---|---|---|\n")
	for i, run := range r.Runs {
		fmt.Fprintf(&b, "| %d | %d | %.1f | %.2f | %.1f | %.1f | %.2f | %s |\n", i+1, run.FillBytes>>20, run.FillSeconds,
			run.CatchUpSeconds, run.CatchUpMBps, run.DiskMBps, run.Ratio, run.Slave)
	}
	met := map[bool]string{true: "yes", false: "**no**"}[r.Met]
	fmt.Fprintf(&b, "\n| target | measured (median) | met |\n|---|---|---|\n| catch-up ≥ %.2f× disk sequential write | %.2f× (%.1f ÷ %.1f MB/s) | %s |\n",
		r.Target, r.Median.Ratio, r.Median.CatchUpMBps, r.Median.DiskMBps, met)
	return b.String()
}
