package bench

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Target is a goal an experiment states for some of its cells: a figure
// (optionally over the same figure of another cell) and a bound.
type Target struct {
	Name string `json:"name"`
	// Cells is a pattern over cell labels (path.Match: "*" stays within
	// one "/" part), e.g. "*/sync/1KiB/w64".
	Cells string `json:"cells"`
	// Metric is one of mb_ratio, p99_vs_fsync, avg_batch, msgs_per_sec,
	// mb_per_sec, p99_us, syscalls_per_1000.
	Metric string `json:"metric"`
	// Over, if set, names the denominator cell: a label with {backend},
	// {flush}, {size} and {writers} taken from the matched cell, e.g.
	// "{backend}/sync/1KiB/w1".
	Over string `json:"over,omitempty"`
	// Bounds: value >= Min, value <= Max, value < Below.
	Min   *float64 `json:"min,omitempty"`
	Max   *float64 `json:"max,omitempty"`
	Below *float64 `json:"below,omitempty"`
}

// TargetResult is a Target evaluated on one cell's medians.
type TargetResult struct {
	Name  string  `json:"name"`
	Cell  string  `json:"cell"`
	Over  string  `json:"over,omitempty"`
	Value float64 `json:"value"`
	Bound string  `json:"bound"`
	// Met is nil when the target could not be evaluated (Note says why).
	Met  *bool  `json:"met,omitempty"`
	Note string `json:"note,omitempty"`
}

var targetMetrics = map[string]func(c *CellResult) (float64, bool){
	"mb_ratio":          func(c *CellResult) (float64, bool) { return spreadMedian(c.Ratios.MB) },
	"p99_vs_fsync":      func(c *CellResult) (float64, bool) { return spreadMedian(c.Ratios.P99VsFsync) },
	"p50_vs_disk":       func(c *CellResult) (float64, bool) { return spreadMedian(c.Ratios.P50VsDisk) },
	"avg_batch":         func(c *CellResult) (float64, bool) { return c.Summary.AvgBatch.Median, true },
	"msgs_per_sec":      func(c *CellResult) (float64, bool) { return c.Summary.MsgsPerSec.Median, true },
	"mb_per_sec":        func(c *CellResult) (float64, bool) { return c.Summary.MBPerSec.Median, true },
	"p99_us":            func(c *CellResult) (float64, bool) { return c.Summary.P99Us.Median, true },
	"syscalls_per_1000": func(c *CellResult) (float64, bool) { return c.Summary.SyscallsPer1000.Median, true },
}

func spreadMedian(s *Spread) (float64, bool) {
	if s == nil {
		return 0, false
	}
	return s.Median, true
}

// validate reports what is wrong with t.
func (t Target) validate() error {
	var bad []string
	if _, err := path.Match(t.Cells, ""); err != nil || t.Cells == "" {
		bad = append(bad, fmt.Sprintf("cells pattern %q", t.Cells))
	}
	if _, ok := targetMetrics[t.Metric]; !ok {
		bad = append(bad, fmt.Sprintf("metric %q", t.Metric))
	}
	if t.Min == nil && t.Max == nil && t.Below == nil {
		bad = append(bad, "no bound (min, max or below)")
	}
	if bad != nil {
		return fmt.Errorf("target %q: %s", t.Name, strings.Join(bad, ", "))
	}
	return nil
}

func (t Target) bound() string {
	var b []string
	if t.Min != nil {
		b = append(b, "≥ "+strconv.FormatFloat(*t.Min, 'g', -1, 64))
	}
	if t.Max != nil {
		b = append(b, "≤ "+strconv.FormatFloat(*t.Max, 'g', -1, 64))
	}
	if t.Below != nil {
		b = append(b, "< "+strconv.FormatFloat(*t.Below, 'g', -1, 64))
	}
	s := strings.Join(b, ", ")
	if t.Over != "" {
		s += "×"
	}
	return s
}

// EvaluateTargets evaluates the experiment's targets on the result's cells
// (in cell order), each matched cell giving one TargetResult.
func EvaluateTargets(r *ExperimentResult) []TargetResult {
	if r.Spec == nil {
		return nil
	}
	var out []TargetResult
	for _, t := range r.Spec.Targets {
		matched := false
		for i := range r.Cells {
			c := &r.Cells[i]
			if ok, _ := path.Match(t.Cells, c.Label); !ok {
				continue
			}
			matched = true
			out = append(out, evalTarget(r, t, c))
		}
		if !matched {
			out = append(out, TargetResult{Name: t.Name, Cell: t.Cells, Bound: t.bound(), Note: "no cell matches"})
		}
	}
	return out
}

func evalTarget(r *ExperimentResult, t Target, c *CellResult) TargetResult {
	tr := TargetResult{Name: t.Name, Cell: c.Label, Bound: t.bound()}
	metric := targetMetrics[t.Metric]
	if c.Status != StatusOK {
		tr.Note = c.Status + ": " + oneLine(c.Reason)
		return tr
	}
	v, ok := metric(c)
	if !ok {
		tr.Note = t.Metric + " not measured (no raw-disk reference)"
		return tr
	}
	if t.Over != "" {
		tr.Over = strings.NewReplacer("{backend}", c.Backend, "{flush}", c.Flush,
			"{size}", sizeLabel(int64(c.Size)), "{writers}", strconv.Itoa(c.Writers)).Replace(t.Over)
		d := r.Cell(tr.Over)
		switch {
		case d == nil:
			tr.Note = "no cell " + tr.Over
			return tr
		case d.Status != StatusOK:
			tr.Note = tr.Over + " " + d.Status
			return tr
		}
		dv, ok := metric(d)
		if !ok || dv == 0 {
			tr.Note = tr.Over + ": " + t.Metric + " is zero or not measured"
			return tr
		}
		v /= dv
	}
	tr.Value = v
	met := (t.Min == nil || v >= *t.Min) && (t.Max == nil || v <= *t.Max) && (t.Below == nil || v < *t.Below)
	tr.Met = &met
	return tr
}

// oneLine makes s fit a table cell.
func oneLine(s string) string {
	s = strings.NewReplacer("\n", " ", "|", "/").Replace(s)
	if len(s) > 140 {
		s = s[:137] + "..."
	}
	return s
}
