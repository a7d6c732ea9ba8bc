package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/internal/resultfile"
)

// RunOptions are the plumbing of Run, apart from the experiment.
type RunOptions struct {
	// Dir is where data files go (on the disk to be measured). Required.
	Dir string
	// Quick uses the experiment's quick overrides.
	Quick bool
	// Progress gets "[i/n] ... ETA" lines and each run's summary;
	// default io.Discard.
	Progress io.Writer
	// Command is recorded in the result (how to reproduce it).
	Command string
	// Machine is recorded in the result; default resultfile.CollectMachine(Dir).
	Machine *resultfile.Machine
	// Storage, Disk and Probe run one cell, one reference and one fsync
	// probe; default RunStorage, RunDisk and ProbeFsync. Tests replace them.
	Storage func(context.Context, StorageOptions) (*StorageResult, error)
	Disk    func(context.Context, DiskOptions) (*DiskResult, error)
	Probe   func(ctx context.Context, dir string, block int, d time.Duration) (Latency, error)
	// RecordSize is the stored size of a message with a body of n bytes,
	// the disk reference's block when the experiment does not fix one;
	// default RecordSize.
	RecordSize func(n int) int
	// Settle runs before every measured run so the previous one's
	// write-back does not land in it; default sync(2).
	Settle func()
	// Now is the clock of the ETA; default time.Now.
	Now func() time.Time
	// ProfileCell, if set, is called before each measured storage run
	// with a name for it ("<label>_r<round>", slashes replaced); the
	// function it returns is called after the run.
	ProfileCell func(name string) (stop func())
}

// EnsureDefaults fills zero fields with their defaults.
func (o *RunOptions) EnsureDefaults() {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Storage == nil {
		o.Storage = RunStorage
	}
	if o.Disk == nil {
		o.Disk = RunDisk
	}
	if o.Probe == nil {
		o.Probe = ProbeFsync
	}
	if o.RecordSize == nil {
		o.RecordSize = RecordSize
	}
	if o.Settle == nil {
		o.Settle = unix.Sync
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Machine == nil {
		o.Machine = resultfile.CollectMachine(o.Dir)
	}
}

// runner is one Run in progress.
type runner struct {
	e     *Experiment
	opts  RunOptions
	plan  Plan
	res   *ExperimentResult
	refs  map[string]*DiskRefResult
	cellK []string // each cell's reference key ("" without reference)
	steps int      // measured runs in all
	done  int
	began time.Time
}

// Run runs the experiment: Repeats rounds, each running every raw-disk
// reference the cells need, the fsync probe, then every cell once. A cell
// whose backend cannot run here is skipped (with the reason) from then on,
// one that fails is marked failed; neither stops the run. Cancelling ctx
// stops it with ctx's error.
func Run(ctx context.Context, e *Experiment, opts RunOptions) (*ExperimentResult, error) {
	if opts.Dir == "" {
		return nil, errors.New("bench: run: no data dir")
	}
	opts.EnsureDefaults()
	r := &runner{e: e, opts: opts, plan: e.Expand(opts.Quick), refs: map[string]*DiskRefResult{}, began: opts.Now()}
	r.res = &ExperimentResult{
		Header: resultfile.Header{Experiment: e.Name, Kind: "storage", Description: e.Description, Command: opts.Command,
			Quick: opts.Quick, Start: r.began.UTC(), Machine: opts.Machine},
		Spec: e, Repeats: r.plan.Repeats, Duration: resultfile.Duration(r.plan.Duration), Warmup: resultfile.Duration(r.plan.Warmup),
	}
	r.setup()
	for round := 0; round < r.plan.Repeats; round++ {
		if err := r.round(ctx, round); err != nil {
			return nil, err
		}
	}
	r.finish()
	r.res.ElapsedSeconds = opts.Now().Sub(r.began).Seconds()
	return r.res, nil
}

// setup lays out the cells and the references they need.
func (r *runner) setup() {
	r.res.Cells = make([]CellResult, len(r.plan.Cells))
	r.cellK = make([]string, len(r.plan.Cells))
	for i, c := range r.plan.Cells {
		r.res.Cells[i] = CellResult{Cell: c, Status: StatusOK}
		if !r.e.Disk.Run {
			continue
		}
		block := r.e.Disk.Block
		if block == 0 {
			block = r.opts.RecordSize(c.Size)
		}
		fs := r.e.Disk.diskFsyncFor(c.Flush)
		key := fmt.Sprintf("block=%d/fsync=%s", block, fs)
		if _, ok := r.refs[key]; !ok {
			ref := &DiskRefResult{Key: key, Block: block, Fsync: fs}
			ref.Config = r.diskOptions(ref).String()
			r.refs[key] = ref
		}
		r.cellK[i] = key
		r.res.Cells[i].DiskRef = key
		if c.Flush == "sync" && fs == FsyncEvery {
			for _, n := range r.e.Disk.Groups {
				gk := fmt.Sprintf("block=%d/fsync=%s", n*block, fs)
				if _, ok := r.refs[gk]; !ok && n > 1 {
					ref := &DiskRefResult{Key: gk, Block: n * block, Fsync: fs, Group: n, Base: key}
					ref.Config = r.diskOptions(ref).String()
					r.refs[gk] = ref
				}
			}
		}
	}
	perRound := len(r.plan.Cells) + len(r.refs)
	if r.e.Disk.Run && len(r.plan.Cells) > 0 {
		block := r.e.Disk.Block
		if block == 0 {
			block = r.opts.RecordSize(r.plan.Cells[0].Size)
		}
		r.res.Probe = &ProbeResult{Block: block}
		perRound++
	}
	r.steps = perRound * r.plan.Repeats
}

func (r *runner) diskOptions(ref *DiskRefResult) DiskOptions {
	return DiskOptions{
		Dir: r.opts.Dir, Block: ref.Block, Fsync: ref.Fsync, Writers: r.e.Disk.Writers,
		Duration: r.plan.Duration, Warmup: r.plan.Warmup, Interval: time.Duration(r.e.Options.Interval),
		FileSize: r.e.Disk.FileSize, ProbeDuration: -1,
	}
}

func (r *runner) storageOptions(c Cell) StorageOptions {
	o := r.e.Options
	return StorageOptions{
		Dir: r.opts.Dir, Backend: c.Backend, Flush: c.Flush, Size: c.Size, Writers: c.Writers,
		Duration: r.plan.Duration, Warmup: r.plan.Warmup, Queues: o.Queues,
		SegmentSize: o.SegmentSize, Preallocate: o.Preallocate, MaxBatchBytes: c.MaxBatchBytes,
		MinInterval: time.Duration(c.MinInterval), MaxGather: time.Duration(c.MaxGather), MaxPending: o.MaxPending,
		Interval: time.Duration(o.Interval), DirtyPages: o.DirtyPages, AckBuffered: o.AckBuffered,
	}
}

// progress writes a line to Progress. A failed write is dropped: the
// lines are for a person watching, the result file is the record, and a
// closed terminal must not end a run of hours.
func (r *runner) progress(format string, args ...any) {
	_, _ = fmt.Fprintf(r.opts.Progress, format, args...)
}

// step prints the progress line of the next measured run.
func (r *runner) step(round int, what string) {
	eta := "?"
	if r.done > 0 {
		per := r.opts.Now().Sub(r.began) / time.Duration(r.done)
		eta = (per * time.Duration(r.steps-r.done)).Round(time.Second).String()
	}
	r.done++
	r.progress("[%d/%d] %s round %d/%d: %s (ETA %s)\n",
		r.done, r.steps, r.e.Name, round+1, r.plan.Repeats, what, eta)
}

func (r *runner) round(ctx context.Context, round int) error {
	for _, key := range sortedKeys(r.refs) {
		ref := r.refs[key]
		r.step(round, "raw disk "+key)
		if ref.Error != "" {
			r.progress("    (failed before: %s)\n", ref.Error)
			continue
		}
		r.opts.Settle()
		d, err := r.opts.Disk(ctx, r.diskOptions(ref))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			ref.Error = err.Error()
			r.progress("    failed: %v\n", err)
			continue
		}
		ref.Runs = append(ref.Runs, d)
		r.progress("    %.0f writes/s  %.1f MB/s  p50 %dµs  p99 %dµs  fsyncs %d\n",
			d.MsgsPerSec, d.MBPerSec, d.LatencyUs.P50, d.LatencyUs.P99, d.Fsyncs)
	}
	if p := r.res.Probe; p != nil {
		r.step(round, fmt.Sprintf("fsync probe block=%d", p.Block))
		if p.Error == "" {
			r.opts.Settle()
			lat, err := r.opts.Probe(ctx, r.opts.Dir, p.Block, time.Duration(r.e.Disk.Probe))
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				p.Error = err.Error()
				r.progress("    failed: %v\n", err)
			} else {
				p.Runs = append(p.Runs, lat)
				r.progress("    fdatasync p50 %dµs  p99 %dµs  (%d samples)\n", lat.P50, lat.P99, lat.Count)
			}
		}
	}
	for _, i := range r.plan.RoundOrder(round, r.e.Interleave) {
		cr := &r.res.Cells[i]
		r.step(round, cr.Label)
		if cr.Status != StatusOK {
			r.progress("    %s: %s\n", cr.Status, cr.Reason)
			continue
		}
		r.opts.Settle()
		stop := func() {}
		if r.opts.ProfileCell != nil {
			stop = r.opts.ProfileCell(fmt.Sprintf("%s_r%d", strings.ReplaceAll(cr.Label, "/", "_"), round+1))
		}
		sr, err := r.opts.Storage(ctx, r.storageOptions(cr.Cell))
		stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			cr.Status, cr.Reason = StatusFailed, err.Error()
			if errors.Is(err, ErrUnavailable) {
				cr.Status = StatusSkipped
			}
			r.progress("    %s: %v\n", cr.Status, err)
			continue
		}
		sr.Machine = nil
		cr.Runs = append(cr.Runs, sr)
		cr.Config, cr.StoreConfig, cr.Durability = sr.Config, sr.StoreConfig, sr.Durability
		r.progress("    %s\n", sr.Line())
	}
	return nil
}

// finish computes the spreads and the round-by-round ratios.
func (r *runner) finish() {
	for _, key := range sortedKeys(r.refs) {
		ref := r.refs[key]
		mb, msgs, p99 := make([]float64, len(ref.Runs)), make([]float64, len(ref.Runs)), make([]float64, len(ref.Runs))
		for i, d := range ref.Runs {
			mb[i], msgs[i], p99[i] = d.MBPerSec, d.MsgsPerSec, float64(d.LatencyUs.P99)
		}
		ref.MBPerSec, ref.MsgsPerSec, ref.P99Us = SpreadOf(mb), SpreadOf(msgs), SpreadOf(p99)
		if base := r.refs[ref.Base]; ref.Group > 0 && base != nil {
			var c []float64
			for i, d := range ref.Runs {
				if i < len(base.Runs) && base.Runs[i].MsgsPerSec > 0 {
					c = append(c, float64(ref.Group)*d.MsgsPerSec/base.Runs[i].MsgsPerSec)
				}
			}
			if len(c) > 0 {
				s := SpreadOf(c)
				ref.Ceiling = &s
			}
		}
		r.res.DiskRefs = append(r.res.DiskRefs, *ref)
	}
	if p := r.res.Probe; p != nil {
		p50, p99 := make([]float64, len(p.Runs)), make([]float64, len(p.Runs))
		for i, l := range p.Runs {
			p50[i], p99[i] = float64(l.P50), float64(l.P99)
		}
		p.P50Us, p.P99Us = SpreadOf(p50), SpreadOf(p99)
	}
	for i := range r.res.Cells {
		cr := &r.res.Cells[i]
		cr.Summary = summarizeCell(cr.Runs)
		var refRuns []*DiskResult
		if ref := r.refs[r.cellK[i]]; ref != nil && ref.Error == "" {
			refRuns = ref.Runs
		}
		var probe []Latency
		if r.res.Probe != nil && r.res.Probe.Error == "" && cr.Flush == "sync" {
			probe = r.res.Probe.Runs
		}
		cr.Ratios = roundRatios(cr.Runs, refRuns, probe, cr.Flush == "sync")
	}
}

// roundRatios pairs the i-th cell run with the i-th reference and probe
// run (they ran in the same round). A cell that ran fewer rounds than the
// references pairs from the first.
func roundRatios(runs []*StorageResult, refs []*DiskResult, probe []Latency, sync bool) Ratios {
	var mb, p99, p50 []float64
	for i, s := range runs {
		if i < len(refs) && refs[i].MBPerSec > 0 {
			mb = append(mb, s.LogMBPerSec/refs[i].MBPerSec)
		}
		if sync && i < len(refs) && refs[i].LatencyUs.P50 > 0 {
			p50 = append(p50, float64(s.LatencyUs.P50)/float64(refs[i].LatencyUs.P50))
		}
		if i < len(probe) && probe[i].P99 > 0 {
			p99 = append(p99, float64(s.LatencyUs.P99)/float64(probe[i].P99))
		}
	}
	var rt Ratios
	if len(mb) > 0 {
		s := SpreadOf(mb)
		rt.MB = &s
	}
	if len(p99) > 0 {
		s := SpreadOf(p99)
		rt.P99VsFsync = &s
	}
	if len(p50) > 0 {
		s := SpreadOf(p50)
		rt.P50VsDisk = &s
	}
	return rt
}

// Line is a run's one-line human summary.
func (s *StorageResult) Line() string {
	line := fmt.Sprintf("%.0f msgs/s  %.1f MB/s (log %.1f)  p50 %dµs  p99 %dµs  p99.9 %dµs  max %dµs  fsyncs %d  batch %.1f  syscalls/1k %s  errors %d",
		s.MsgsPerSec, s.MBPerSec, s.LogMBPerSec, s.LatencyUs.P50, s.LatencyUs.P99, s.LatencyUs.P999, s.LatencyUs.Max,
		s.Fsyncs, s.AvgBatch, fmtSyscalls(s.SyscallsPer1000), s.Errors)
	if s.Gathers > 0 {
		line += fmt.Sprintf("  gathers %d (unfilled %d, avg %.0fµs)", s.Gathers, s.GatherMisses, s.GatherAvgUs)
	}
	if s.OwnRounds > 0 {
		line += fmt.Sprintf("  own rounds %d", s.OwnRounds)
	}
	if d := s.Device; d != nil {
		line += fmt.Sprintf("  %s %.0f writes/s of %s avg", d.Device, d.WritesPerSec, fmtBytes(d.AvgWriteBytes))
	}
	return line
}
