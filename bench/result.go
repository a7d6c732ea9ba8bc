package bench

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/samsamq/samsa/internal/resultfile"
)

// ExperimentResult is what Run writes under results/<experiment>/.
type ExperimentResult struct {
	resultfile.Header         // Kind "storage"
	ElapsedSeconds    float64 `json:"elapsed_seconds"`
	// Spec is the experiment as it ran (defaults filled in).
	Spec     *Experiment         `json:"spec"`
	Repeats  int                 `json:"repeats"`
	Duration resultfile.Duration `json:"duration"`
	Warmup   resultfile.Duration `json:"warmup"`
	// DiskRefs are the raw-disk references, Probe the single-fsync probe,
	// each run once per round.
	DiskRefs []DiskRefResult `json:"disk_refs,omitempty"`
	Probe    *ProbeResult    `json:"fsync_probe,omitempty"`
	Cells    []CellResult    `json:"cells"`
}

// DiskRefResult is one raw-disk reference over the rounds.
type DiskRefResult struct {
	Key        string        `json:"key"`
	Block      int           `json:"block"`
	Fsync      FsyncPolicy   `json:"fsync"`
	Config     string        `json:"config"`
	Error      string        `json:"error,omitempty"`
	Runs       []*DiskResult `json:"runs"`
	MsgsPerSec Spread        `json:"msgs_per_sec"`
	MBPerSec   Spread        `json:"mb_per_sec"`
	P99Us      Spread        `json:"p99_us"`
	// Group (a DiskRef.Groups reference) is the records per write, Base
	// the key of the one-record reference, and Ceiling, round by round,
	// Group × this reference's writes/s ÷ Base's.
	Group   int     `json:"group,omitempty"`
	Base    string  `json:"base,omitempty"`
	Ceiling *Spread `json:"ceiling,omitempty"`
}

// ProbeResult is the single-fsync probe over the rounds.
type ProbeResult struct {
	Block int       `json:"block"`
	Error string    `json:"error,omitempty"`
	Runs  []Latency `json:"runs"`
	P50Us Spread    `json:"p50_us"`
	P99Us Spread    `json:"p99_us"`
}

// Cell statuses.
const (
	StatusOK      = "ok"
	StatusSkipped = "skipped" // the backend cannot run here
	StatusFailed  = "failed"  // it ran and failed
)

// CellResult is one cell over the rounds: every run, the medians and
// spreads, and the ratios to the raw disk of the same rounds.
type CellResult struct {
	Cell
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// DiskRef is the key of the reference the MB/s ratio is taken to.
	DiskRef     string           `json:"disk_ref,omitempty"`
	Config      string           `json:"config,omitempty"`
	StoreConfig string           `json:"store_config,omitempty"`
	Durability  string           `json:"durability,omitempty"`
	Runs        []*StorageResult `json:"runs,omitempty"`
	Summary     CellSummary      `json:"summary"`
	Ratios      Ratios           `json:"ratios"`
}

// CellSummary spreads a cell's figures over its runs.
type CellSummary struct {
	MsgsPerSec      Spread `json:"msgs_per_sec"`
	MBPerSec        Spread `json:"mb_per_sec"`
	LogMBPerSec     Spread `json:"log_mb_per_sec"`
	P50Us           Spread `json:"p50_us"`
	P99Us           Spread `json:"p99_us"`
	P999Us          Spread `json:"p999_us"`
	MaxUs           Spread `json:"max_us"`
	AvgBatch        Spread `json:"avg_batch"`
	FsyncsPerSec    Spread `json:"fsyncs_per_sec"`
	SyscallsPer1000 Spread `json:"syscalls_per_1000_appends"`
	Errors          int64  `json:"errors"`
	// The data dir's block device over the runs that could read it
	// (StorageResult.Device): write requests a second, their average
	// size, and the bytes it wrote per stored log byte. Nil where no run
	// could (DeviceNote says why) and in results from before them.
	DevWritesPerSec  *Spread `json:"device_writes_per_sec,omitempty"`
	DevAvgWriteBytes *Spread `json:"device_avg_write_bytes,omitempty"`
	DevBytesPerLog   *Spread `json:"device_bytes_per_log_byte,omitempty"`
	DeviceNote       string  `json:"device_note,omitempty"`
}

// Ratios compare a cell with the raw disk of the same run, round by round
// (each round's cell run over that round's reference), so slow drift of
// the machine cancels out.
type Ratios struct {
	// MB is stored bytes per second over the reference's (same bytes per
	// write, the matching fsync policy). Higher is better.
	MB *Spread `json:"mb,omitempty"`
	// P99VsFsync (sync cells) is the append p99 over the probe's lone
	// fdatasync p99. Lower is better.
	P99VsFsync *Spread `json:"p99_vs_fsync,omitempty"`
	// P50VsDisk (sync cells) is the append p50 over the reference's
	// write+fdatasync p50: what the engine adds to one durable write (a
	// lone writer's hand-offs, encoding, indexing). Lower is better.
	P50VsDisk *Spread `json:"p50_vs_disk,omitempty"`
}

func summarizeCell(runs []*StorageResult) CellSummary {
	var s CellSummary
	pick := func(f func(r *StorageResult) float64) Spread {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return SpreadOf(v)
	}
	s.MsgsPerSec = pick(func(r *StorageResult) float64 { return r.MsgsPerSec })
	s.MBPerSec = pick(func(r *StorageResult) float64 { return r.MBPerSec })
	s.LogMBPerSec = pick(func(r *StorageResult) float64 { return r.LogMBPerSec })
	s.P50Us = pick(func(r *StorageResult) float64 { return float64(r.LatencyUs.P50) })
	s.P99Us = pick(func(r *StorageResult) float64 { return float64(r.LatencyUs.P99) })
	s.P999Us = pick(func(r *StorageResult) float64 { return float64(r.LatencyUs.P999) })
	s.MaxUs = pick(func(r *StorageResult) float64 { return float64(r.LatencyUs.Max) })
	s.AvgBatch = pick(func(r *StorageResult) float64 { return r.AvgBatch })
	s.FsyncsPerSec = pick(func(r *StorageResult) float64 { return float64(r.Fsyncs) / max(r.MeasuredSeconds, 1e-9) })
	s.SyscallsPer1000 = pick(func(r *StorageResult) float64 { return r.SyscallsPer1000 })
	for _, r := range runs {
		s.Errors += r.Errors
	}
	s.DevWritesPerSec, s.DevAvgWriteBytes, s.DevBytesPerLog, s.DeviceNote = summarizeDevice(runs)
	return s
}

// summarizeDevice spreads the device figures over the runs that have
// them; with none, the first run's reason.
func summarizeDevice(runs []*StorageResult) (perSec, avg, perLog *Spread, note string) {
	var ps, av, pl []float64
	for _, r := range runs {
		d := r.Device
		if d == nil {
			if note == "" {
				note = r.DeviceNote
			}
			continue
		}
		ps = append(ps, d.WritesPerSec)
		if d.WriteIOs > 0 {
			av = append(av, d.AvgWriteBytes)
		}
		if logBytes := r.LogMBPerSec * 1e6 * r.MeasuredSeconds; logBytes > 0 {
			pl = append(pl, float64(d.WriteBytes)/logBytes)
		}
	}
	spread := func(v []float64) *Spread {
		if len(v) == 0 {
			return nil
		}
		s := SpreadOf(v)
		return &s
	}
	if len(ps) > 0 {
		note = ""
	}
	return spread(ps), spread(av), spread(pl), note
}

// Cell returns the result cell with the label, or nil.
func (r *ExperimentResult) Cell(label string) *CellResult {
	for i := range r.Cells {
		if r.Cells[i].Label == label {
			return &r.Cells[i]
		}
	}
	return nil
}

// WriteResult writes res as <dir>/<experiment>/<host>-<UTC time>.json and
// returns the path.
func WriteResult(dir string, res *ExperimentResult) (string, error) {
	return res.WriteResult(dir, res)
}

// ReadResult reads a file written by WriteResult.
func ReadResult(path string) (*ExperimentResult, error) {
	r, err := resultfile.Read[ExperimentResult](path)
	if err != nil {
		return nil, err
	}
	if r.Kind != "storage" {
		return nil, fmt.Errorf("%s: kind %q is not a storage result", path, r.Kind)
	}
	return r, nil
}

// writeJSON writes v indented to path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteJSON writes the run as indented JSON (the --json flag).
func (r *DiskResult) WriteJSON(path string) error { return writeJSON(path, r) }

// WriteJSON writes the run as indented JSON (the --json flag).
func (r *StorageResult) WriteJSON(path string) error { return writeJSON(path, r) }
