package loadgen

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
)

// DriverFactory makes a fresh driver (and whatever cluster it needs) for
// one run of a cell. The driver's Close tears that cluster down.
type DriverFactory func(ctx context.Context, c Cell) (Driver, error)

// ExperimentResult is what an e2e experiment run writes under results/.
type ExperimentResult struct {
	resultfile.Header
	// OMBWorkload is the OpenMessaging Benchmark workload file the cells
	// ran (Experiment.OMBWorkload); its figures get a table of their own.
	OMBWorkload string             `json:"omb_workload,omitempty"`
	Cells       []CellResult       `json:"cells"`
	Comparisons []ComparisonResult `json:"comparisons,omitempty"`
}

// CellResult holds a cell's repeats and their medians.
type CellResult struct {
	Cell
	Skipped string    `json:"skipped,omitempty"` // why the cell could not run
	Runs    []*Result `json:"runs,omitempty"`
	// Durability is what the cell's server promised for an acknowledged
	// message (its driver's "durability": memory, process-crash,
	// power-loss), so that a ratio compares equal guarantees.
	Durability string `json:"durability,omitempty"`
	// Replication is the runs' replication with the median link round
	// trip (the lag's p99 is in the summaries); nil without slaves.
	Replication *Replication `json:"replication,omitempty"`
	Median      Summary      `json:"median"`
	Min         Summary      `json:"min"`
	Max         Summary      `json:"max"`
}

// Summary is the figures a cell is compared by.
type Summary struct {
	MsgsPerSec float64 `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	SendP50Us  float64 `json:"send_p50_us"`
	SendP99Us  float64 `json:"send_p99_us"`
	SendP999Us float64 `json:"send_p999_us,omitempty"`
	E2EP50Us   float64 `json:"e2e_p50_us"`
	E2EP99Us   float64 `json:"e2e_p99_us"`
	E2EP999Us  float64 `json:"e2e_p999_us"`
	E2EMaxUs   float64 `json:"e2e_max_us,omitempty"`
	// LagP99Us is the open-loop schedule lag's p99 (Result.SendLagUs).
	LagP99Us float64 `json:"lag_p99_us,omitempty"`
	// PubP50Us to PubMaxUs are the open-loop send latency from the actual
	// send (Result.ServiceLatencyUs: OMB's publish latency).
	PubP50Us  float64 `json:"pub_p50_us,omitempty"`
	PubP99Us  float64 `json:"pub_p99_us,omitempty"`
	PubP999Us float64 `json:"pub_p999_us,omitempty"`
	PubMaxUs  float64 `json:"pub_max_us,omitempty"`
	// ConsumedPerSec is the consumers' rate over the window; DrainMsgsPerSec
	// the backlog phase's drain rate (Result.Backlog).
	ConsumedPerSec  float64 `json:"consumed_per_sec,omitempty"`
	DrainMsgsPerSec float64 `json:"drain_msgs_per_sec,omitempty"`
	// ReplLagP99Us and ReplBehindP99 are the slaves' replication lag
	// p99, in time and in bytes (Replication.Lag).
	ReplLagP99Us  float64 `json:"repl_lag_p99_us,omitempty"`
	ReplBehindP99 float64 `json:"repl_behind_p99_bytes,omitempty"`
	Errors        float64 `json:"errors"`
	// Duplicates and NeverReceived are the runs' redeliveries and
	// acknowledged messages never received (Result's).
	Duplicates    float64 `json:"duplicates,omitempty"`
	NeverReceived float64 `json:"never_received,omitempty"`
	// OpenFiles and RSSMB are the server's at the window's end
	// (Result.Server); 0 when not read.
	OpenFiles float64 `json:"open_files,omitempty"`
	RSSMB     float64 `json:"rss_mb,omitempty"`
}

// ComparisonResult is one evaluated Comparison.
type ComparisonResult struct {
	Comparison
	// Value is the ratio, or for an additive comparison Num minus Den.
	Value float64 `json:"value"`
	// Bound is an additive comparison's allowance (PlusRTT × RTTUs +
	// PlusMs), in the metric's unit; RTTUs the Num cell's link round trip.
	Bound float64 `json:"bound,omitempty"`
	RTTUs float64 `json:"rtt_us,omitempty"`
	Met   *bool   `json:"met,omitempty"`
	Note  string  `json:"note,omitempty"`
}

// RunExperiment runs every cell Repeats times, each run on a fresh driver.
// The repeats go round the cells (every cell once, then every cell
// again), so cells compared side by side meet the same spells of a noisy
// machine rather than one cell getting all of a quiet one. progress gets
// "run i/n" lines with an ETA.
func RunExperiment(ctx context.Context, e *Experiment, quick bool, factory DriverFactory, progress io.Writer) (*ExperimentResult, error) {
	cells, err := e.Expand(quick)
	if err != nil {
		return nil, err
	}
	res := &ExperimentResult{Header: e.Header(quick), OMBWorkload: e.OMBWorkload}
	crs := make([]CellResult, len(cells))
	for i, c := range cells {
		crs[i].Cell = c
	}
	repeats := e.repeats(quick)
	total := len(cells) * repeats
	done := 0
	began := time.Now()
	for rep := 0; rep < repeats; rep++ {
		for k := range crs {
			i := k
			if e.Alternate && rep%2 == 1 {
				i = len(crs) - 1 - k
			}
			cr := &crs[i]
			if cr.Skipped != "" {
				done++
				continue
			}
			eta := "?"
			if done > 0 {
				eta = (time.Duration(float64(time.Since(began)) / float64(done) * float64(total-done))).Round(time.Second).String()
			}
			lab.Progressf(progress, "== %s: run %d/%d: %s (repeat %d/%d), ETA %s\n", e.Name, done+1, total, cr.Cell.Label, rep+1, repeats, eta)
			if d := e.settle(); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			r, err := runCell(ctx, cr.Cell, factory, progress)
			done++
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				cr.Skipped = resultfile.RelativePaths(err.Error())
				lab.Progressf(progress, "   skipped: %v\n", err)
				continue
			}
			cr.Runs = append(cr.Runs, r)
		}
	}
	for i := range crs {
		crs[i].Median, crs[i].Min, crs[i].Max = summarizeRuns(crs[i].Runs)
		crs[i].Durability = runsDurability(crs[i].Runs)
		crs[i].Replication = runsReplication(crs[i].Runs)
	}
	res.Cells = crs
	res.Comparisons = compare(quickComparisons(e.Compare, cells, quick), res.Cells)
	return res, nil
}

// quickComparisons leaves out, in a quick run, the comparisons whose
// cells only the full form runs (LoadExperiment checked the full form
// has them all).
func quickComparisons(cs []Comparison, cells []Cell, quick bool) []Comparison {
	if !quick {
		return cs
	}
	has := map[string]bool{}
	for _, c := range cells {
		has[c.Label] = true
	}
	var out []Comparison
	for _, c := range cs {
		if has[c.Num] && has[c.Den] {
			out = append(out, c)
		}
	}
	return out
}

func runCell(ctx context.Context, c Cell, factory DriverFactory, progress io.Writer) (*Result, error) {
	d, err := factory(ctx, c)
	if err != nil {
		return nil, err
	}
	defer func() {
		// The run's figures stand (the run is over); the failed close
		// (its embedded cluster, a peer's server) is shown with them.
		if cerr := d.Close(); cerr != nil {
			lab.Progressf(progress, "   closing the %s driver: %v\n", c.Driver, cerr)
		}
	}()
	r, err := Run(ctx, d, c.Workload, Options{Out: lab.Indent(progress, "   ")})
	if r != nil {
		for k, v := range r.DriverConfig { // an embedded cluster's config names its data dir
			if s, ok := v.(string); ok {
				r.DriverConfig[k] = resultfile.RelativePaths(s)
			}
		}
	}
	return r, err
}

func summarize(r *Result) Summary {
	s := Summary{MsgsPerSec: r.MsgsPerSec, MBPerSec: r.MBPerSec,
		SendP50Us: float64(r.SendLatencyUs.P50), SendP99Us: float64(r.SendLatencyUs.P99),
		SendP999Us: float64(r.SendLatencyUs.P999),
		E2EP50Us:   float64(r.E2ELatencyUs.P50), E2EP99Us: float64(r.E2ELatencyUs.P99), E2EP999Us: float64(r.E2ELatencyUs.P999),
		Errors: float64(r.Errors), Duplicates: float64(r.Duplicates), NeverReceived: float64(r.NeverReceived)}
	s.E2EMaxUs, s.ConsumedPerSec = float64(r.E2ELatencyUs.Max), r.ConsumedPerSec
	if r.SendLagUs != nil {
		s.LagP99Us = float64(r.SendLagUs.P99)
	}
	if p := r.ServiceLatencyUs; p != nil {
		s.PubP50Us, s.PubP99Us, s.PubP999Us, s.PubMaxUs = float64(p.P50), float64(p.P99), float64(p.P999), float64(p.Max)
	}
	if r.Backlog != nil {
		s.DrainMsgsPerSec = r.Backlog.DrainMsgsPerSec
	}
	if r.Server != nil && r.Server.Error == "" {
		s.OpenFiles, s.RSSMB = float64(r.Server.OpenFiles), float64(r.Server.RSSBytes)/1e6
	}
	if r.Replication != nil && r.Replication.Lag != nil {
		s.ReplLagP99Us, s.ReplBehindP99 = float64(r.Replication.Lag.TimeUs.P99), float64(r.Replication.Lag.BehindBytes.P99)
	}
	return s
}

// summarizeRuns returns the per-field median, min and max over runs.
func summarizeRuns(runs []*Result) (med, lo, hi Summary) {
	if len(runs) == 0 {
		return
	}
	fields := func(s *Summary) []*float64 {
		return []*float64{&s.MsgsPerSec, &s.MBPerSec, &s.SendP50Us, &s.SendP99Us, &s.SendP999Us, &s.E2EP50Us, &s.E2EP99Us, &s.E2EP999Us,
			&s.LagP99Us, &s.ReplLagP99Us, &s.ReplBehindP99, &s.Errors, &s.Duplicates, &s.NeverReceived, &s.OpenFiles, &s.RSSMB,
			&s.E2EMaxUs, &s.PubP50Us, &s.PubP99Us, &s.PubP999Us, &s.PubMaxUs, &s.ConsumedPerSec, &s.DrainMsgsPerSec}
	}
	ss := make([]Summary, len(runs))
	for i, r := range runs {
		ss[i] = summarize(r)
	}
	mf, lf, hf := fields(&med), fields(&lo), fields(&hi)
	for fi := range mf {
		vals := make([]float64, len(ss))
		for i := range ss {
			vals[i] = *fields(&ss[i])[fi]
		}
		sort.Float64s(vals)
		*lf[fi], *hf[fi] = vals[0], vals[len(vals)-1]
		*mf[fi] = median(vals)
	}
	return
}

// metrics are the figures a comparison may name: each one's value in a
// Summary, and whether higher is better.
var metrics = map[string]struct {
	of     func(Summary) float64
	higher bool
}{
	"msgs_per_sec":       {func(s Summary) float64 { return s.MsgsPerSec }, true},
	"drain_msgs_per_sec": {func(s Summary) float64 { return s.DrainMsgsPerSec }, true},
	"e2e_p50":            {func(s Summary) float64 { return s.E2EP50Us }, false},
	"e2e_p99":            {func(s Summary) float64 { return s.E2EP99Us }, false},
	"send_p99":           {func(s Summary) float64 { return s.SendP99Us }, false},
	"send_p999":          {func(s Summary) float64 { return s.SendP999Us }, false},
	"pub_p99":            {func(s Summary) float64 { return s.PubP99Us }, false},
}

func metric(s Summary, name string) (float64, bool, error) {
	m, ok := metrics[name]
	if !ok {
		return 0, false, fmt.Errorf("unknown metric %q", name)
	}
	return m.of(s), m.higher, nil
}

// compare evaluates each comparison on the cells' medians.
func compare(cs []Comparison, cells []CellResult) []ComparisonResult {
	byLabel := map[string]*CellResult{}
	for i := range cells {
		byLabel[cells[i].Label] = &cells[i]
	}
	var out []ComparisonResult
	for _, c := range cs {
		cr := ComparisonResult{Comparison: c}
		num, den := byLabel[c.Num], byLabel[c.Den]
		switch {
		case num == nil || den == nil:
			cr.Note = "cell missing"
		case num.Skipped != "" || den.Skipped != "":
			cr.Note = "cell skipped"
		default:
			a, higherBetter, err := metric(num.Median, c.Metric)
			b, _, _ := metric(den.Median, c.Metric)
			if err != nil {
				cr.Note = err.Error()
				break
			}
			if c.Kind == "additive" {
				cr.additive(a, b, num)
				break
			}
			if b == 0 {
				cr.Note = "denominator is zero"
				break
			}
			cr.Value = a / b
			if c.Target != 0 {
				met := cr.Value >= c.Target
				if !higherBetter {
					met = cr.Value <= c.Target
				}
				cr.Met = &met
			}
		}
		out = append(out, cr)
	}
	return out
}

// WriteResult writes res as results/<experiment>/<host>-<UTC time>.json
// under dir and returns the path.
func WriteResult(dir string, res *ExperimentResult) (string, error) {
	return res.Header.WriteResult(dir, res)
}

// ReadResult reads a file written by WriteResult.
func ReadResult(path string) (*ExperimentResult, error) {
	return resultfile.Read[ExperimentResult](path)
}

// runsDurability is the durability the runs' drivers report ("" if none
// does).
func runsDurability(runs []*Result) string {
	for _, r := range runs {
		if d, ok := r.DriverConfig["durability"].(string); ok && d != "" {
			return d
		}
	}
	return ""
}

// additive evaluates an additive comparison: num − den against PlusRTT ×
// the num cell's link round trip + PlusMs (latencies in µs).
func (cr *ComparisonResult) additive(num, den float64, numCell *CellResult) {
	cr.Value = num - den
	if rp := numCell.Replication; rp != nil {
		cr.RTTUs = rp.LinkRTTUs
	} else if cr.PlusRTT != 0 {
		cr.Note = "no link round trip: the cell has no slave"
		return
	}
	cr.Bound = cr.PlusRTT*cr.RTTUs + cr.PlusMs*1000
	met := cr.Value <= cr.Bound
	cr.Met = &met
}

// runsReplication is the runs' replication with the median of their link
// round trips, or nil when no run had slaves. The lag is left out: the
// summaries carry its p99.
func runsReplication(runs []*Result) *Replication {
	var out *Replication
	var rtts []float64
	for _, r := range runs {
		if r.Replication == nil {
			continue
		}
		if out == nil {
			cp := *r.Replication
			cp.Lag = nil
			out = &cp
		}
		rtts = append(rtts, r.Replication.LinkRTTUs)
	}
	if out != nil {
		sort.Float64s(rtts)
		out.LinkRTTUs = median(rtts)
	}
	return out
}

// median of sorted values.
func median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// MissedTargets names the comparisons with a target that missed it, or
// that could not be evaluated (a cell skipped or missing): the regression
// gate's list.
func (r *ExperimentResult) MissedTargets() []string {
	var out []string
	for _, c := range r.Comparisons {
		if c.Kind == "additive" || c.Target != 0 {
			switch {
			case c.Met == nil:
				out = append(out, fmt.Sprintf("%s (%s)", c.Name, c.Note))
			case !*c.Met:
				out = append(out, fmt.Sprintf("%s (%.2f, target %.2f)", c.Name, c.Value, c.Target))
			}
		}
	}
	return out
}
