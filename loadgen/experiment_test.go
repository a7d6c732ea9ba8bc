package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const expJSON = `{
  "name": "t", "kind": "e2e", "repeats": 3,
  "base": {"message_size": 64, "warmup": "50ms", "duration": "300ms", "report_interval": "1s", "drain": "1s"},
  "quick": {"duration": "200ms"},
  "cells": [
    {"label": "a", "driver": "mem", "cluster": {"flush": "sync"}},
    {"label": "b", "driver": "mem", "cluster": {"flush": "async"}, "workload": {"producers": 2}},
    {"label": "broken", "driver": "none", "cluster": {}}
  ],
  "matrix": {"queues_per_topic": [2, 4]},
  "compare": [{"name": "b over a", "num": "b/queues_per_topic=2", "den": "a/queues_per_topic=2", "metric": "msgs_per_sec", "target": 0.1}]
}`

func TestExperimentExpandAndRun(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.json")
	require.NoError(t, os.WriteFile(p, []byte(expJSON), 0o644))
	e, err := LoadExperiment(p)
	require.NoError(t, err)
	cells, err := e.Expand(true)
	require.NoError(t, err)
	require.Len(t, cells, 6)
	require.Equal(t, "a/queues_per_topic=2", cells[0].Label)
	require.Equal(t, 200*time.Millisecond, cells[0].Workload.Duration, "quick overrides the base")
	require.Equal(t, 2, cells[2].Workload.Producers)
	require.Equal(t, 4, cells[3].Workload.QueuesPerTopic)

	wd, err := os.Getwd()
	require.NoError(t, err)
	factory := func(_ context.Context, c Cell) (Driver, error) {
		if c.Driver == "none" {
			return nil, errors.New("no such driver here (see " + filepath.Join(wd, ".benchdata", "x.log") + ")")
		}
		return dirDriver{newMemDriver(), filepath.Join(wd, ".benchdata", "e2e", "s-1")}, nil
	}
	var prog bytes.Buffer
	res, err := RunExperiment(context.Background(), e, true, factory, &prog)
	require.NoError(t, err)
	require.Contains(t, prog.String(), "run 1/18")
	require.Contains(t, prog.String(), "ETA")
	require.Len(t, res.Cells, 6)
	require.Len(t, res.Cells[0].Runs, 3)
	require.NotEmpty(t, res.Cells[4].Skipped)
	require.Equal(t, "store=.benchdata/e2e/s-1", res.Cells[0].Runs[0].DriverConfig["cluster"], "paths under the working directory recorded relative")
	require.LessOrEqual(t, res.Cells[0].Min.MsgsPerSec, res.Cells[0].Median.MsgsPerSec)
	require.GreaterOrEqual(t, res.Cells[0].Max.MsgsPerSec, res.Cells[0].Median.MsgsPerSec)
	require.Len(t, res.Comparisons, 1)
	require.NotNil(t, res.Comparisons[0].Met)
	require.True(t, *res.Comparisons[0].Met)

	path, err := WriteResult(t.TempDir(), res)
	require.NoError(t, err)
	back, err := ReadResult(path)
	require.NoError(t, err)
	require.Equal(t, res.Cells[0].Median, back.Cells[0].Median)
	md := back.Markdown()
	require.Contains(t, md, "| a/queues_per_topic=2 | mem | sync |")
	require.Contains(t, md, "skipped: no such driver here (see .benchdata/x.log)")
	require.Contains(t, md, "b over a")
}

// dirDriver is a memDriver whose config names a data dir, as an embedded
// cluster's does.
type dirDriver struct {
	*memDriver
	dir string
}

func (d dirDriver) Describe() map[string]any { return map[string]any{"cluster": "store=" + d.dir} }

func TestSummarizeRunsMedian(t *testing.T) {
	runs := []*Result{{MsgsPerSec: 3}, {MsgsPerSec: 1}, {MsgsPerSec: 10}}
	med, lo, hi := summarizeRuns(runs)
	require.Equal(t, 3.0, med.MsgsPerSec)
	require.Equal(t, 1.0, lo.MsgsPerSec)
	require.Equal(t, 10.0, hi.MsgsPerSec)
	med, _, _ = summarizeRuns(runs[:2])
	require.Equal(t, 2.0, med.MsgsPerSec)
}

func TestExperimentRejectsTypos(t *testing.T) {
	var e Experiment
	err := json.Unmarshal([]byte(strings.Replace(expJSON, `"message_size"`, `"mesage_size"`, 1)), &e)
	require.Error(t, err)
}

// TestMissedTargets: a comparison with a target that missed, or whose
// cell was skipped, is the gate's; one without a target is not.
func TestMissedTargets(t *testing.T) {
	yes, no := true, false
	r := &ExperimentResult{Comparisons: []ComparisonResult{
		{Comparison: Comparison{Name: "met", Target: 0.8}, Value: 1, Met: &yes},
		{Comparison: Comparison{Name: "missed", Target: 0.8}, Value: 0.5, Met: &no},
		{Comparison: Comparison{Name: "skipped", Target: 0.8}, Note: "cell skipped"},
		{Comparison: Comparison{Name: "no target"}, Value: 0.1},
	}}
	m := r.MissedTargets()
	require.Len(t, m, 2)
	require.Contains(t, m[0], "missed (0.50, target 0.80)")
	require.Contains(t, m[1], "skipped (cell skipped)")
}

// TestNotComparable: a comparison marked not comparable prints its ratio
// and the reason, is never a missed target, and may not carry a target.
func TestNotComparable(t *testing.T) {
	r := &ExperimentResult{Comparisons: []ComparisonResult{
		{Comparison: Comparison{Name: "e2e", Num: "a", Den: "b", Metric: "e2e_p99",
			NotComparable: "the peer's server used 1.4 of 2 cores"}, Value: 0.1},
	}}
	require.Empty(t, r.MissedTargets())
	md := r.Markdown()
	require.Contains(t, md, "| 0.10× | – | not comparable |")
	require.Contains(t, md, "Not comparable, e2e: the peer's server used 1.4 of 2 cores")

	js := strings.Replace(expJSON, `"compare": [`, `"compare": [{"name": "x", "num": "b/queues_per_topic=2", "den": "a/queues_per_topic=2", "metric": "msgs_per_sec", "target": 1, "not_comparable": "why"},`, 1)
	require.NotEqual(t, expJSON, js, "expJSON has a compare list")
	dir := t.TempDir()
	p := filepath.Join(dir, "nc.json")
	require.NoError(t, os.WriteFile(p, []byte(js), 0o644))
	_, err := LoadExperiment(p)
	require.ErrorContains(t, err, "not_comparable takes no target")
}

// TestExperimentAlternateAndSettle: with alternate, every second repeat
// runs the cells in reverse order; settle pauses before each run; a bad
// settle is refused at load.
func TestExperimentAlternateAndSettle(t *testing.T) {
	const js = `{
  "name": "alt", "kind": "e2e", "repeats": 2, "settle": "20ms", "alternate": true,
  "base": {"message_size": 64, "warmup": "0s", "duration": "100ms", "report_interval": "1s", "drain": "1s"},
  "cells": [
    {"label": "a", "driver": "mem", "cluster": {"flush": "sync"}},
    {"label": "b", "driver": "mem", "cluster": {"flush": "async"}}
  ]
}`
	dir := t.TempDir()
	p := filepath.Join(dir, "alt.json")
	require.NoError(t, os.WriteFile(p, []byte(js), 0o644))
	e, err := LoadExperiment(p)
	require.NoError(t, err)
	var order []string
	factory := func(_ context.Context, c Cell) (Driver, error) {
		order = append(order, c.Label)
		return newMemDriver(), nil
	}
	began := time.Now()
	_, err = RunExperiment(context.Background(), e, false, factory, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "b", "a"}, order)
	require.GreaterOrEqual(t, time.Since(began), 4*20*time.Millisecond, "four settle pauses at least")

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(js, `"20ms"`, `"soon"`, 1)), 0o644))
	_, err = LoadExperiment(bad)
	require.ErrorContains(t, err, "settle")
}
