package bench

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
)

// checkResult builds a result with one ok cell per (label, mb ratio, p99 ratio).
func checkResult(cells ...CellResult) *ExperimentResult {
	m := fakeMachine
	return &ExperimentResult{Header: resultfile.Header{Experiment: "x", Kind: "storage", Machine: &m}, Cells: cells}
}

func okCell(label string, mb, p99 float64) CellResult {
	c := CellResult{Cell: Cell{Label: label}, Status: StatusOK}
	if mb != 0 {
		s := SpreadOf([]float64{mb})
		c.Ratios.MB = &s
	}
	if p99 != 0 {
		s := SpreadOf([]float64{p99})
		c.Ratios.P99VsFsync = &s
	}
	return c
}

func TestCheckDetectsRegression(t *testing.T) {
	base := checkResult(okCell("a", 0.9, 0), okCell("s", 30, 2))
	cur := checkResult(okCell("a", 0.7, 0), okCell("s", 31, 2.1))
	rep := Check(base, cur, CheckOptions{Tolerance: 0.15})
	require.Equal(t, 1, rep.Regressions())
	require.Len(t, rep.Rows, 3)
	row := rep.Rows[0]
	require.InDelta(t, 0.7/0.9-1, row.Change, 1e-9)
	row.Change = 0
	require.Equal(t, CheckRow{Label: "a", Metric: "mb_ratio", Base: 0.9, Cur: 0.7, Verdict: VerdictRegression}, row)
	require.Equal(t, VerdictOK, rep.Rows[1].Verdict)
	require.Equal(t, VerdictOK, rep.Rows[2].Verdict, "p99 5%% worse is within 15%%")
}

func TestCheckLatencyRatioIsLowerBetter(t *testing.T) {
	base := checkResult(okCell("s", 30, 2))
	rep := Check(base, checkResult(okCell("s", 30, 2.5)), CheckOptions{Tolerance: 0.15})
	require.Equal(t, 1, rep.Regressions())
	require.Equal(t, "p99_vs_fsync", rep.Rows[1].Metric)
	require.Equal(t, VerdictRegression, rep.Rows[1].Verdict)

	rep = Check(base, checkResult(okCell("s", 40, 1.0)), CheckOptions{Tolerance: 0.15})
	require.Zero(t, rep.Regressions())
	require.Equal(t, VerdictImproved, rep.Rows[0].Verdict)
	require.Equal(t, VerdictImproved, rep.Rows[1].Verdict)
}

func TestCheckWithinTolerancePasses(t *testing.T) {
	base := checkResult(okCell("a", 1.0, 0))
	for _, v := range []float64{0.86, 1.0, 1.14} {
		rep := Check(base, checkResult(okCell("a", v, 0)), CheckOptions{Tolerance: 0.15})
		require.Zero(t, rep.Regressions(), "%v", v)
		require.Equal(t, VerdictOK, rep.Rows[0].Verdict)
	}
}

func TestCheckReportsMissingCellsWithoutFailing(t *testing.T) {
	skipped := CellResult{Cell: Cell{Label: "u"}, Status: StatusSkipped, Reason: "no io_uring"}
	base := checkResult(okCell("a", 1, 0), okCell("gone", 1, 0), okCell("u", 1, 0), okCell("noref", 1, 0))
	cur := checkResult(okCell("a", 1, 0), okCell("new", 1, 0), skipped, okCell("noref", 0, 0))
	cur.Machine.DiskModel = "nvme"
	rep := Check(base, cur, CheckOptions{Tolerance: 0.15})
	require.Zero(t, rep.Regressions())
	require.Equal(t, []string{"gone"}, rep.OnlyBaseline)
	require.Equal(t, []string{"new"}, rep.OnlyCurrent)
	require.Equal(t, []string{"u (baseline ok, result skipped)"}, rep.NotComparable)
	require.Equal(t, VerdictMissing, rep.Rows[1].Verdict)
	require.Equal(t, "not in the result", rep.Rows[1].Note)
	require.Len(t, rep.Notes, 1)
	require.Contains(t, rep.Notes[0], "machines differ")

	var out bytes.Buffer
	require.NoError(t, rep.Print(&out))
	for _, want := range []string{"only in the baseline: gone", "only in the result: new", "not comparable: u",
		"2 figures compared, 0 regressions beyond ±15%", "noref"} {
		require.Contains(t, out.String(), want)
	}
}

func TestCheckNotesNoise(t *testing.T) {
	base := checkResult(okCell("a", 1, 0))
	cur := checkResult(okCell("a", 1, 0))
	s := SpreadOf([]float64{0.7, 1, 1.3})
	cur.Cells[0].Ratios.MB = &s
	rep := Check(base, cur, CheckOptions{Tolerance: 0.15})
	require.Contains(t, rep.Rows[0].Note, "noisy")
}

// spreadCell has an mb ratio with three repeats.
func spreadCell(label string, vals ...float64) CellResult {
	c := CellResult{Cell: Cell{Label: label}, Status: StatusOK}
	s := SpreadOf(vals)
	c.Ratios.MB = &s
	return c
}

func TestCheckSpreadDecidesWhenRepeatsOverlap(t *testing.T) {
	base := checkResult(spreadCell("a", 0.9, 1.0, 1.1), spreadCell("b", 0.9, 1.0, 1.1))
	// a: median -20% but its best repeat reaches the baseline's worst: noise.
	// b: median -20% and every repeat below the baseline's worst: regression.
	cur := checkResult(spreadCell("a", 0.6, 0.8, 0.95), spreadCell("b", 0.7, 0.8, 0.85))
	rep := Check(base, cur, CheckOptions{Tolerance: 0.15})
	require.Equal(t, VerdictNoisy, rep.Rows[0].Verdict)
	require.Equal(t, VerdictRegression, rep.Rows[1].Verdict)
	require.Equal(t, 1, rep.Regressions())
	var out bytes.Buffer
	require.NoError(t, rep.Print(&out))
	require.Contains(t, out.String(), "1 regressions beyond ±15% (and 1 worse medians within the repeats' spread")

	strict := Check(base, cur, CheckOptions{Tolerance: 0.15, Strict: true})
	require.Equal(t, 2, strict.Regressions())
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// Print hands back the writer's error instead of dropping it.
func TestCheckPrintWriteError(t *testing.T) {
	rep := Check(checkResult(okCell("a", 1, 0)), checkResult(okCell("a", 1, 0)), CheckOptions{Tolerance: 0.15})
	boom := errors.New("boom")
	require.ErrorIs(t, rep.Print(failWriter{boom}), boom)
	rep.Notes = []string{"a note"}
	require.ErrorIs(t, rep.Print(failWriter{boom}), boom)
}

// TestCommittedBaselineStillChecks: the committed baseline predates the
// device figures; it still reads, renders ("–" where it has no device
// figures, never "n/a") and checks against a result that has them.
func TestCommittedBaselineStillChecks(t *testing.T) {
	base, err := ReadResult("../results/baseline/storage-quick.json")
	require.NoError(t, err)
	md := Markdown(base, nil, "")
	require.Contains(t, md, "| device writes/s | avg device write | device ÷ log bytes |")
	require.NotContains(t, md, "n/a")
	cur := *base
	cur.Cells = append([]CellResult(nil), base.Cells...)
	for i := range cur.Cells {
		s := SpreadOf([]float64{100})
		cur.Cells[i].Summary.DevWritesPerSec = &s
	}
	rep := Check(base, &cur, CheckOptions{Tolerance: 0.15})
	require.Zero(t, rep.Regressions())
	require.NotEmpty(t, rep.Rows)
}
