package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/samsamq/samsa/internal/resultfile"
)

// Experiment is a storage experiment file (experiments/*.json, kind
// "storage"): a matrix of engine configurations, fixed engine options, how
// long and how often each cell runs, and the raw-disk reference.
type Experiment struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"` // "storage"
	Description string `json:"description,omitempty"`
	// Repeats per cell; medians and spread are reported. Default 3.
	Repeats int `json:"repeats,omitempty"`
	// Duration is each run's measured time (default 5s), Warmup the
	// unrecorded time before it (default 500ms).
	Duration resultfile.Duration `json:"duration,omitempty"`
	Warmup   resultfile.Duration `json:"warmup,omitempty"`
	Matrix   Matrix              `json:"matrix"`
	// Options are the engine settings every cell shares.
	Options CellOptions `json:"options,omitempty"`
	Disk    DiskRef     `json:"disk"`
	// Quick replaces repeats and durations for --quick runs.
	Quick *QuickOverrides `json:"quick,omitempty"`
	// Targets are goals reports check the cells against.
	Targets []Target `json:"targets,omitempty"`
	// Interleave runs a round's cells configuration by configuration,
	// every backend of one (flush, size, writers, limits) back to back,
	// the backends in reverse order every other round, instead of
	// backend by backend: on a machine whose speed drifts over minutes,
	// backends compared with each other then ran in the same minute.
	// Results list the cells in the usual order either way.
	Interleave bool `json:"interleave,omitempty"`
}

// Matrix is the cartesian product of cells. Flush policies other than
// sync ignore the group-commit limits (their cells are not repeated per
// limit).
type Matrix struct {
	Backends []string `json:"backends"`
	Flush    []string `json:"flush"`   // sync | async | none
	Sizes    []int    `json:"sizes"`   // message body bytes
	Writers  []int    `json:"writers"` // concurrent appenders
	// MaxBatchBytes are group-commit limits (sync only); absent = [0],
	// unbounded, and cell labels do not mention it.
	MaxBatchBytes []int64 `json:"max_batch_bytes,omitempty"`
	// MinIntervals are group-commit lingers (sync only); absent = the
	// options' min_interval.
	MinIntervals []resultfile.Duration `json:"min_intervals,omitempty"`
	// MaxGathers are group-commit gather bounds (sync only; negative =
	// off, see storage.FlushOptions.MaxGather); absent = the options'
	// max_gather.
	MaxGathers []resultfile.Duration `json:"max_gathers,omitempty"`
}

// CellOptions are the storage options every cell of an experiment shares.
// Zero means the storage engine's default.
type CellOptions struct {
	SegmentSize int64               `json:"segment_size,omitempty"`
	Preallocate bool                `json:"preallocate,omitempty"`
	MinInterval resultfile.Duration `json:"min_interval,omitempty"`
	MaxGather   resultfile.Duration `json:"max_gather,omitempty"`
	MaxPending  int                 `json:"max_pending,omitempty"`
	Interval    resultfile.Duration `json:"interval,omitempty"`     // async flush interval
	DirtyPages  int                 `json:"dirty_pages,omitempty"`  // async flush threshold
	Queues      int                 `json:"queues,omitempty"`       // queues the writers spread over
	AckBuffered bool                `json:"ack_buffered,omitempty"` // storage Options.AckBuffered
}

// DiskRef says which raw-disk references run: one per distinct (block,
// fsync policy) the cells need, in every round, plus the fsync probe.
type DiskRef struct {
	// Run turns the reference on (a result without it has no ratios).
	Run bool `json:"run"`
	// Block is the write size; 0 = each cell's stored record size, so
	// the disk writes the same bytes per call as the store.
	Block int `json:"block,omitempty"`
	// Fsync maps a cell's flush policy to the reference's fsync policy;
	// default sync→every, async→interval (the async flush interval),
	// none→none.
	Fsync map[string]FsyncPolicy `json:"fsync,omitempty"`
	// Writers of the reference; default 1 (the disk's own sequential
	// limit, whatever the cell's concurrency).
	Writers int `json:"writers,omitempty"`
	// FileSize is the reference file's preallocation step (DiskOptions).
	FileSize int64 `json:"file_size,omitempty"`
	// Probe is how long the single-fsync probe runs; default 1s.
	Probe resultfile.Duration `json:"probe,omitempty"`
	// Groups are group-commit ceilings to measure: for each n, a sync
	// reference that writes n records per fdatasync (block = n × a sync
	// cell's record size). n × its writes/s over the one-record
	// reference's is the most n writers can gain over one on this disk
	// with perfect group commit, before any engine cost.
	Groups []int `json:"groups,omitempty"`
}

// QuickOverrides shorten an experiment for --quick.
type QuickOverrides struct {
	Repeats  int                 `json:"repeats,omitempty"`
	Duration resultfile.Duration `json:"duration,omitempty"`
	Warmup   resultfile.Duration `json:"warmup,omitempty"`
}

// Cell is one configuration of the matrix.
type Cell struct {
	Label         string              `json:"label"`
	Backend       string              `json:"backend"`
	Flush         string              `json:"flush"`
	Size          int                 `json:"size"`
	Writers       int                 `json:"writers"`
	MaxBatchBytes int64               `json:"max_batch_bytes"`
	MinInterval   resultfile.Duration `json:"min_interval"`
	MaxGather     resultfile.Duration `json:"max_gather,omitempty"`
}

// LoadExperiment reads and checks an experiment file.
func LoadExperiment(path string) (*Experiment, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	e, err := ParseExperiment(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

// ParseExperiment decodes an experiment (unknown fields are errors), fills
// defaults and validates it.
func ParseExperiment(b []byte) (*Experiment, error) {
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &k); err == nil && k.Kind != "storage" {
		return nil, fmt.Errorf("kind %q is not a storage experiment (end-to-end ones run with samsa loadgen --experiment)", k.Kind)
	}
	var e Experiment
	if err := resultfile.DecodeStrict(b, &e); err != nil {
		return nil, err
	}
	e.EnsureDefaults()
	return &e, e.Validate()
}

// EnsureDefaults fills zero fields with their defaults.
func (e *Experiment) EnsureDefaults() {
	if e.Repeats == 0 {
		e.Repeats = 3
	}
	if e.Duration == 0 {
		e.Duration = resultfile.Duration(5 * time.Second)
	}
	if e.Warmup == 0 {
		e.Warmup = resultfile.Duration(500 * time.Millisecond)
	}
	if e.Disk.Writers == 0 {
		e.Disk.Writers = 1
	}
	if e.Disk.Probe == 0 {
		e.Disk.Probe = resultfile.Duration(time.Second)
	}
}

// Validate reports every problem at once.
func (e *Experiment) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if e.Name == "" || strings.ContainsAny(e.Name, "/ ") {
		bad("name %q: want a non-empty name without / or spaces", e.Name)
	}
	if e.Kind != "storage" {
		bad("kind %q is not a storage experiment (end-to-end ones run with samsa loadgen --experiment)", e.Kind)
	}
	if e.Repeats < 1 || e.Duration <= 0 || e.Warmup < 0 {
		bad("repeats %d, duration %s, warmup %s: want >= 1, > 0, >= 0", e.Repeats, time.Duration(e.Duration), time.Duration(e.Warmup))
	}
	m := e.Matrix
	if len(m.Backends) == 0 || len(m.Flush) == 0 || len(m.Sizes) == 0 || len(m.Writers) == 0 {
		bad("matrix needs backends, flush, sizes and writers")
	}
	for _, f := range m.Flush {
		if f != "sync" && f != "async" && f != "none" {
			bad("flush %q: want sync, async or none", f)
		}
	}
	for _, s := range m.Sizes {
		if s <= 0 {
			bad("size %d must be > 0", s)
		}
	}
	for _, w := range m.Writers {
		if w <= 0 {
			bad("writers %d must be > 0", w)
		}
	}
	for _, b := range m.MaxBatchBytes {
		if b < 0 {
			bad("max_batch_bytes %d must be >= 0", b)
		}
	}
	for k, v := range e.Disk.Fsync {
		if k != "sync" && k != "async" && k != "none" {
			bad("disk.fsync key %q: want a flush policy", k)
		}
		if v != FsyncEvery && v != FsyncInterval && v != FsyncNone {
			bad("disk.fsync[%s] %q: want every, interval or none", k, v)
		}
	}
	for _, t := range e.Targets {
		if err := t.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if e.Disk.Block < 0 || e.Disk.Writers < 1 {
		bad("disk block %d, writers %d: want >= 0, >= 1", e.Disk.Block, e.Disk.Writers)
	}
	return errors.Join(errs...)
}

// Plan is what one run of an experiment does: the cells, how often, how long.
type Plan struct {
	Cells    []Cell
	Repeats  int
	Duration time.Duration
	Warmup   time.Duration
}

// Expand returns the cells in a stable order (backend, flush, size,
// writers, min interval, max batch bytes) and the repeats and durations
// (--quick's where quick is set).
func (e *Experiment) Expand(quick bool) Plan {
	p := Plan{Repeats: e.Repeats, Duration: time.Duration(e.Duration), Warmup: time.Duration(e.Warmup)}
	if quick && e.Quick != nil {
		if e.Quick.Repeats > 0 {
			p.Repeats = e.Quick.Repeats
		}
		if e.Quick.Duration > 0 {
			p.Duration = time.Duration(e.Quick.Duration)
		}
		if e.Quick.Warmup > 0 {
			p.Warmup = time.Duration(e.Quick.Warmup)
		}
	}
	m := e.Matrix
	batches, labelBatch := m.MaxBatchBytes, len(m.MaxBatchBytes) > 0
	if !labelBatch {
		batches = []int64{0}
	}
	lingers, labelLinger := m.MinIntervals, len(m.MinIntervals) > 0
	if !labelLinger {
		lingers = []resultfile.Duration{e.Options.MinInterval}
	}
	gathers, labelGather := m.MaxGathers, len(m.MaxGathers) > 0
	if !labelGather {
		gathers = []resultfile.Duration{e.Options.MaxGather}
	}
	for _, be := range m.Backends {
		for _, fl := range m.Flush {
			for _, sz := range m.Sizes {
				for _, w := range m.Writers {
					for gi, ga := range gathers {
						for li, lg := range lingers {
							for bi, mb := range batches {
								if fl != "sync" && (gi > 0 || li > 0 || bi > 0) {
									continue // the limits mean nothing without group commit
								}
								c := Cell{Backend: be, Flush: fl, Size: sz, Writers: w}
								parts := []string{be, fl, sizeLabel(int64(sz)), fmt.Sprintf("w%d", w)}
								if fl == "sync" {
									c.MaxBatchBytes, c.MinInterval, c.MaxGather = mb, lg, ga
									if labelGather {
										parts = append(parts, "gather="+gatherLabel(ga))
									}
									if labelLinger {
										parts = append(parts, "linger="+time.Duration(lg).String())
									}
									if labelBatch {
										parts = append(parts, "batch="+sizeLabel(mb))
									}
								}
								c.Label = strings.Join(parts, "/")
								p.Cells = append(p.Cells, c)
							}
						}
					}
				}
			}
		}
	}
	return p
}

// RoundOrder is the order in which round (from 0) runs the plan's cells,
// as indices into p.Cells: the plan's own order, or with interleave every
// backend of one configuration back to back, the backends reversed in
// odd rounds (Experiment.Interleave).
func (p Plan) RoundOrder(round int, interleave bool) []int {
	order := make([]int, len(p.Cells))
	for i := range order {
		order[i] = i
	}
	if !interleave {
		return order
	}
	// A configuration is a label without its backend; its first
	// appearance in the plan orders it.
	rank := map[string]int{}
	backendRank := map[string]int{}
	conf := make([]string, len(p.Cells))
	for i, c := range p.Cells {
		conf[i] = strings.TrimPrefix(c.Label, c.Backend+"/")
		if _, ok := rank[conf[i]]; !ok {
			rank[conf[i]] = len(rank)
		}
		if _, ok := backendRank[c.Backend]; !ok {
			backendRank[c.Backend] = len(backendRank)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		ca, cb := p.Cells[order[a]], p.Cells[order[b]]
		if ra, rb := rank[conf[order[a]]], rank[conf[order[b]]]; ra != rb {
			return ra < rb
		}
		if round%2 == 1 {
			return backendRank[ca.Backend] > backendRank[cb.Backend]
		}
		return backendRank[ca.Backend] < backendRank[cb.Backend]
	})
	return order
}

// gatherLabel writes a gather bound: "off" when negative, "default" at 0.
func gatherLabel(d resultfile.Duration) string {
	switch {
	case d < 0:
		return "off"
	case d == 0:
		return "default"
	}
	return time.Duration(d).String()
}

// sizeLabel writes bytes as 512B, 1KiB, 64KiB, 4MiB (exact units only),
// 0 as "unbounded".
func sizeLabel(n int64) string {
	switch {
	case n == 0:
		return "unbounded"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// diskFsyncFor is the reference fsync policy for a cell's flush policy.
func (r DiskRef) diskFsyncFor(flush string) FsyncPolicy {
	if p, ok := r.Fsync[flush]; ok {
		return p
	}
	switch flush {
	case "sync":
		return FsyncEvery
	case "async":
		return FsyncInterval
	}
	return FsyncNone
}

// isStorageKind reports whether an experiment file's kind is "storage".
func isStorageKind(b []byte) bool {
	var k struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(b, &k) == nil && k.Kind == "storage"
}
