package bench

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/samsamq/samsa/internal/resultfile"
)

// Verdicts of a CheckRow.
const (
	VerdictOK         = "ok"         // within tolerance
	VerdictImproved   = "improved"   // better by more than the tolerance
	VerdictRegression = "REGRESSION" // worse by more than the tolerance, beyond the repeats' spread
	VerdictNoisy      = "worse?"     // worse by more than the tolerance, but the repeats overlap
	VerdictMissing    = "missing"    // the figure is in only one of the files
)

// CheckOptions configure Check.
type CheckOptions struct {
	// Tolerance is the relative change of a ratio's median allowed
	// before it counts (0.15 = 15%).
	Tolerance float64
	// Strict counts every change beyond the tolerance as a regression.
	// By default one whose repeats overlap the baseline's (the result's
	// best repeat is no worse than the baseline's worst) is reported as
	// "worse?" and not counted: on a noisy machine the median alone
	// flaps. A side with a single repeat has no spread: strict there.
	Strict bool
}

// CheckRow is one cell's figure compared with the baseline.
type CheckRow struct {
	Label  string
	Metric string // "mb_ratio" (higher is better) or "p99_vs_fsync" (lower is better)
	Base   float64
	Cur    float64
	// Change is Cur/Base - 1.
	Change  float64
	Verdict string
	Note    string
}

// CheckReport is the outcome of Check.
type CheckReport struct {
	CheckOptions
	Rows []CheckRow
	// OnlyBaseline and OnlyCurrent list cells found in one file only,
	// NotComparable cells that did not run (skipped, failed, no
	// reference) in either: reported, never failed.
	OnlyBaseline  []string
	OnlyCurrent   []string
	NotComparable []string
	Notes         []string
}

// Regressions counts the rows that regressed.
func (r *CheckReport) Regressions() int {
	n := 0
	for _, row := range r.Rows {
		if row.Verdict == VerdictRegression {
			n++
		}
	}
	return n
}

// Check compares each cell's ratios to the raw disk (cell ÷ raw disk of
// the same run) in cur with the same cell's in base. A ratio whose median
// is worse than the baseline's by more than the tolerance is a regression
// (see CheckOptions.Strict for the repeats' spread). Ratios rather than
// raw figures are compared so a baseline taken on one machine of a kind
// still means something on another.
func Check(base, cur *ExperimentResult, opts CheckOptions) *CheckReport {
	rep := &CheckReport{CheckOptions: opts}
	if base.Experiment != cur.Experiment {
		rep.Notes = append(rep.Notes, fmt.Sprintf("experiments differ: baseline %q, result %q", base.Experiment, cur.Experiment))
	}
	if bm, cm := machineKind(base.Machine), machineKind(cur.Machine); bm != cm {
		rep.Notes = append(rep.Notes, fmt.Sprintf("machines differ: baseline %s, result %s", base.MachineLine(), cur.MachineLine()))
	}
	if base.Quick != cur.Quick {
		rep.Notes = append(rep.Notes, fmt.Sprintf("quick differs: baseline %t, result %t", base.Quick, cur.Quick))
	}
	for _, cc := range cur.Cells {
		bc := base.Cell(cc.Label)
		if bc == nil {
			rep.OnlyCurrent = append(rep.OnlyCurrent, cc.Label)
			continue
		}
		if bc.Status != StatusOK || cc.Status != StatusOK {
			rep.NotComparable = append(rep.NotComparable, fmt.Sprintf("%s (baseline %s, result %s)", cc.Label, bc.Status, cc.Status))
			continue
		}
		rep.compare(cc.Label, "mb_ratio", true, bc.Ratios.MB, cc.Ratios.MB)
		rep.compare(cc.Label, "p99_vs_fsync", false, bc.Ratios.P99VsFsync, cc.Ratios.P99VsFsync)
		rep.compare(cc.Label, "p50_vs_disk", false, bc.Ratios.P50VsDisk, cc.Ratios.P50VsDisk)
	}
	for _, bc := range base.Cells {
		if cur.Cell(bc.Label) == nil {
			rep.OnlyBaseline = append(rep.OnlyBaseline, bc.Label)
		}
	}
	return rep
}

// machineKind is what makes two machines comparable: CPU and disk model.
func machineKind(m *resultfile.Machine) string {
	if m == nil {
		return "/"
	}
	return m.CPUModel + "/" + m.DiskModel
}

func (rep *CheckReport) compare(label, metric string, higherBetter bool, b, c *Spread) {
	switch {
	case b == nil && c == nil:
		return
	case b == nil || c == nil:
		row := CheckRow{Label: label, Metric: metric, Verdict: VerdictMissing}
		if b != nil {
			row.Base, row.Note = b.Median, "not in the result"
		} else {
			row.Cur, row.Note = c.Median, "not in the baseline"
		}
		rep.Rows = append(rep.Rows, row)
		return
	}
	row := CheckRow{Label: label, Metric: metric, Base: b.Median, Cur: c.Median, Verdict: VerdictOK}
	if b.Median == 0 {
		row.Verdict, row.Note = VerdictMissing, "baseline ratio is zero"
		rep.Rows = append(rep.Rows, row)
		return
	}
	row.Change = c.Median/b.Median - 1
	worse, better := row.Change < -rep.Tolerance, row.Change > rep.Tolerance
	beyondSpread := c.Max < b.Min // even the best repeat is below the baseline's worst
	if !higherBetter {
		worse, better = row.Change > rep.Tolerance, row.Change < -rep.Tolerance
		beyondSpread = c.Min > b.Max
	}
	switch {
	case worse && (rep.Strict || beyondSpread || b.N < 2 || c.N < 2):
		row.Verdict = VerdictRegression
	case worse:
		row.Verdict = VerdictNoisy
	case better:
		row.Verdict = VerdictImproved
	}
	if s := c.RelSpread(); s > rep.Tolerance {
		row.Note = fmt.Sprintf("noisy: repeats spread %.0f%%", 100*s)
	}
	rep.Rows = append(rep.Rows, row)
}

// Print writes the report as an aligned table and a summary line; it
// returns the first write error.
func (rep *CheckReport) Print(w io.Writer) error {
	p := &printer{w: w}
	for _, n := range rep.Notes {
		p.printf("note: %s\n", n)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	t := &printer{w: tw}
	t.printf("cell\tmetric\tbaseline\tresult\tchange\tverdict\tnote\n")
	for _, r := range rep.Rows {
		change := "–"
		if r.Verdict != VerdictMissing {
			change = fmt.Sprintf("%+.1f%%", 100*r.Change)
		}
		t.printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Label, r.Metric, fmtRatio(r.Base), fmtRatio(r.Cur), change, r.Verdict, r.Note)
	}
	if p.err == nil {
		p.err = t.err
	}
	if p.err == nil {
		p.err = tw.Flush()
	}
	for _, l := range rep.OnlyBaseline {
		p.printf("only in the baseline: %s\n", l)
	}
	for _, l := range rep.OnlyCurrent {
		p.printf("only in the result: %s\n", l)
	}
	for _, l := range rep.NotComparable {
		p.printf("not comparable: %s\n", l)
	}
	noisy := 0
	for _, r := range rep.Rows {
		if r.Verdict == VerdictNoisy {
			noisy++
		}
	}
	p.printf("%d figures compared, %d regressions beyond ±%.0f%%", len(rep.Rows), rep.Regressions(), 100*rep.Tolerance)
	if noisy > 0 {
		p.printf(" (and %d worse medians within the repeats' spread, not counted; --strict counts them)", noisy)
	}
	p.printf("\n")
	return p.err
}

func fmtRatio(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f×", v)
}
