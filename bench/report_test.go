package bench

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./bench -run %s -update to create it", t.Name())
	require.Equal(t, string(want), got, "golden %s differs; rerun with -update and review the diff", path)
}

func TestMarkdownGolden(t *testing.T) {
	res, _, _ := runFake(t)
	md := Markdown(res, []Chart{{Title: "fake: sync flush", Link: "results/fake/fake-throughput.svg"}},
		"samsa bench report results/fake/box.json --out PERFORMANCE.md")
	golden(t, "report.md", md)
}

func TestReportWritesChartsAndKeepsHandWrittenText(t *testing.T) {
	res, _, _ := runFake(t)
	dir := t.TempDir()
	resPath, err := WriteResult(filepath.Join(dir, "results"), res)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "results", "fake", "box-20251202T120001Z.json"), resPath)
	back, err := ReadResult(resPath)
	require.NoError(t, err)
	require.Equal(t, res.Cells[0].Summary, back.Cells[0].Summary)

	perf := filepath.Join(dir, "PERFORMANCE.md")
	hand := "# Performance\n\nHand-written intro.\n\n<!-- BEGIN GENERATED: fake -->\nold stuff\n<!-- END GENERATED: fake -->\n\nHand-written notes after.\n"
	require.NoError(t, os.WriteFile(perf, []byte(hand), 0o644))

	kinds := lab.Kinds{"storage": LabKind(nil)}
	order, sections, err := kinds.Report([]string{resPath}, lab.ReportOptions{Out: perf, Command: "samsa bench report"})
	require.NoError(t, err)
	require.Equal(t, []string{"fake"}, order)
	doc, err := os.ReadFile(perf)
	require.NoError(t, err)
	s := string(doc)
	require.True(t, strings.HasPrefix(s, "# Performance\n\nHand-written intro.\n\n<!-- BEGIN GENERATED: fake -->\n### fake\n"))
	require.True(t, strings.HasSuffix(s, "<!-- END GENERATED: fake -->\n\nHand-written notes after.\n"))
	require.NotContains(t, s, "old stuff")
	require.Contains(t, s, sections["fake"])

	// Charts: throughput per flush policy (two writer counts), backend bars
	// need two backends that ran (only pwrite did), no batch limits.
	svgs, err := filepath.Glob(filepath.Join(dir, "results", "fake", "*.svg"))
	require.NoError(t, err)
	require.Len(t, svgs, 2, "%v", svgs)
	for _, p := range svgs {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(b), "<svg")
		rel, _ := filepath.Rel(dir, p)
		require.Contains(t, s, "]("+filepath.ToSlash(rel)+")", "linked relative to PERFORMANCE.md")
	}

	// A second report of the same section replaces it in place, once.
	_, _, err = kinds.Report([]string{resPath}, lab.ReportOptions{Out: perf, NoCharts: true})
	require.NoError(t, err)
	doc, _ = os.ReadFile(perf)
	require.Equal(t, 1, strings.Count(string(doc), "<!-- BEGIN GENERATED: fake -->"))
	require.Contains(t, string(doc), "Hand-written notes after.")
}

func TestChartsForBatchAndBackends(t *testing.T) {
	res := &ExperimentResult{Header: resultfile.Header{Experiment: "gc", Kind: "storage"}}
	add := func(be string, w int, mb int64, msgs, p99 float64) {
		c := CellResult{Cell: Cell{Label: be + "x", Backend: be, Flush: "sync", Size: 1024, Writers: w, MaxBatchBytes: mb}, Status: StatusOK,
			Runs: []*StorageResult{{}}}
		c.Summary.MsgsPerSec = SpreadOf([]float64{msgs, msgs * 1.1})
		c.Summary.P50Us, c.Summary.P99Us, c.Summary.P999Us = SpreadOf([]float64{p99 / 3}), SpreadOf([]float64{p99}), SpreadOf([]float64{p99 * 2})
		res.Cells = append(res.Cells, c)
	}
	for _, be := range []string{"pwrite", "uring"} {
		for _, mb := range []int64{64 << 10, 1 << 20} {
			for _, w := range []int{1, 64} {
				add(be, w, mb, float64(1000*w), float64(100*w))
			}
		}
	}
	dir := t.TempDir()
	charts, err := WriteCharts(res, dir, dir)
	require.NoError(t, err)
	var links []string
	for _, c := range charts {
		links = append(links, c.Link)
	}
	require.ElementsMatch(t, []string{
		"gc-throughput-sync-1KiB-batch64KiB.svg", "gc-throughput-sync-1KiB-batch1MiB.svg",
		"gc-latency-vs-batch-pwrite-1KiB.svg", "gc-latency-vs-batch-uring-1KiB.svg",
		"gc-backends-sync.svg",
	}, links)
}
