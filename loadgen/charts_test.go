package loadgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
)

func TestWriteCharts(t *testing.T) {
	cell := func(label string, w Workload, s Summary) CellResult {
		return CellResult{Cell: Cell{Label: label, Driver: label, Workload: w}, Runs: []*Result{{}}, Median: s}
	}
	r := &ExperimentResult{Header: resultfile.Header{Experiment: "mix"}, Cells: []CellResult{
		cell("long-poll", Workload{Rate: 10000}, Summary{SendP99Us: 2000, E2EP50Us: 500, E2EP99Us: 3000, MsgsPerSec: 10000}),
		cell("max", Workload{NoConsumers: true}, Summary{SendP99Us: 9000, MsgsPerSec: 200000}),
		{Cell: Cell{Label: "gone"}, Skipped: "no nats-server"},
	}}
	dir := t.TempDir()
	charts, err := r.WriteCharts(filepath.Join(dir, "results", "mix"), dir)
	require.NoError(t, err)
	require.Len(t, charts, 2, "latency (a cell consumes) and throughput (a cell runs at max rate); no histograms, no spectrum")
	require.Equal(t, "results/mix/mix-latency.svg", charts[0].Link)
	require.Equal(t, "results/mix/mix-throughput.svg", charts[1].Link)
	for _, c := range charts {
		b, err := os.ReadFile(filepath.Join(dir, c.Link))
		require.NoError(t, err)
		require.Contains(t, string(b), "<svg")
		require.Contains(t, string(b), "long-poll")
		require.NotContains(t, string(b), "gone", "skipped cells are not drawn")
	}
	md := r.MarkdownCharts(charts)
	require.True(t, strings.Contains(md, "![mix: latency per cell (medians)](results/mix/mix-latency.svg)"), md)
}

// TestPercentileChart: a cell's runs' histograms make a line from 0 to
// 99.999% on the spectrum chart, for send and (a cell consumes) e2e.
func TestPercentileChart(t *testing.T) {
	h := newHist()
	for v := int64(1); v <= 100_000; v++ {
		require.NoError(t, h.RecordValue(100+v%1000+v/10_000*v/1000))
	}
	enc, err := encodeHist(h)
	require.NoError(t, err)
	run := &Result{SendHistogram: enc, E2EHistogram: enc}
	r := &ExperimentResult{Header: resultfile.Header{Experiment: "pct"}, Cells: []CellResult{
		{Cell: Cell{Label: "samsa-async", Driver: "samsa", Workload: Workload{Rate: 1000}}, Runs: []*Result{run, run}},
		{Cell: Cell{Label: "nats-default", Driver: "nats", Workload: Workload{Rate: 1000}}, Runs: []*Result{run}},
	}}
	dir := t.TempDir()
	charts, err := r.WriteCharts(dir, dir)
	require.NoError(t, err)
	var links []string
	for _, c := range charts {
		links = append(links, c.Link)
	}
	require.Contains(t, links, "pct-percentiles-send.svg")
	require.Contains(t, links, "pct-percentiles-e2e.svg")
	b, err := os.ReadFile(filepath.Join(dir, "pct-percentiles-e2e.svg"))
	require.NoError(t, err)
	for _, s := range []string{"99.999%", "99.9%", "samsa-async", "nats-default", "end-to-end latency by percentile"} {
		require.Contains(t, string(b), s)
	}
}
