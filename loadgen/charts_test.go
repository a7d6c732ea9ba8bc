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
		return CellResult{Cell: Cell{Label: label, Workload: w}, Runs: []*Result{{}}, Median: s}
	}
	r := &ExperimentResult{Header: resultfile.Header{Experiment: "mix"}, Cells: []CellResult{
		cell("long-poll", Workload{Rate: 10000}, Summary{SendP99Us: 2000, E2EP50Us: 500, E2EP99Us: 3000, MsgsPerSec: 10000}),
		cell("max", Workload{NoConsumers: true}, Summary{SendP99Us: 9000, MsgsPerSec: 200000}),
		{Cell: Cell{Label: "gone"}, Skipped: "no nats-server"},
	}}
	dir := t.TempDir()
	charts, err := r.WriteCharts(filepath.Join(dir, "results", "mix"), dir)
	require.NoError(t, err)
	require.Len(t, charts, 2, "latency (a cell consumes) and throughput (a cell runs at max rate)")
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
