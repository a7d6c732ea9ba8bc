package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
)

const testExperiment = `{
  "name": "t", "kind": "storage", "repeats": 3, "duration": "4s", "warmup": "1s",
  "matrix": {"backends": ["pwrite", "uring"], "flush": ["sync", "async"], "sizes": [1024],
             "writers": [1, 64], "max_batch_bytes": [65536, 1048576]},
  "options": {"min_interval": "1ms", "segment_size": 67108864},
  "disk": {"run": true},
  "quick": {"repeats": 1, "duration": "1s"},
  "targets": [{"name": "batch", "cells": "*/sync/1KiB/w64/*", "metric": "avg_batch", "min": 32}]
}`

func TestExpandMatrix(t *testing.T) {
	e, err := ParseExperiment([]byte(testExperiment))
	require.NoError(t, err)
	p := e.Expand(false)
	require.Equal(t, 3, p.Repeats)
	require.Equal(t, 4*time.Second, p.Duration)
	require.Equal(t, time.Second, p.Warmup)
	var labels []string
	for _, c := range p.Cells {
		labels = append(labels, c.Label)
	}
	// sync cells once per batch limit, async once (the limits mean nothing there).
	require.Equal(t, []string{
		"pwrite/sync/1KiB/w1/batch=64KiB", "pwrite/sync/1KiB/w1/batch=1MiB",
		"pwrite/sync/1KiB/w64/batch=64KiB", "pwrite/sync/1KiB/w64/batch=1MiB",
		"pwrite/async/1KiB/w1", "pwrite/async/1KiB/w64",
		"uring/sync/1KiB/w1/batch=64KiB", "uring/sync/1KiB/w1/batch=1MiB",
		"uring/sync/1KiB/w64/batch=64KiB", "uring/sync/1KiB/w64/batch=1MiB",
		"uring/async/1KiB/w1", "uring/async/1KiB/w64",
	}, labels)
	c := p.Cells[3]
	require.Equal(t, Cell{Label: c.Label, Backend: "pwrite", Flush: "sync", Size: 1024, Writers: 64,
		MaxBatchBytes: 1 << 20, MinInterval: resultfile.Duration(time.Millisecond)}, c)
	require.Zero(t, p.Cells[4].MaxBatchBytes)
	require.Zero(t, p.Cells[4].MinInterval, "async cells carry no group-commit settings")

	q := e.Expand(true)
	require.Equal(t, 1, q.Repeats)
	require.Equal(t, time.Second, q.Duration)
	require.Equal(t, time.Second, q.Warmup, "quick keeps what it does not override")
	require.Len(t, q.Cells, 12)
}

func TestExpandWithoutBatchLimitsHasPlainLabels(t *testing.T) {
	e, err := ParseExperiment([]byte(`{"name": "q", "kind": "storage",
	  "matrix": {"backends": ["mmap"], "flush": ["sync", "none"], "sizes": [100, 4096], "writers": [16]},
	  "disk": {"run": false}}`))
	require.NoError(t, err)
	p := e.Expand(false)
	require.Equal(t, 3, p.Repeats)
	require.Equal(t, 5*time.Second, p.Duration)
	var labels []string
	for _, c := range p.Cells {
		labels = append(labels, c.Label)
	}
	require.Equal(t, []string{"mmap/sync/100B/w16", "mmap/sync/4KiB/w16", "mmap/none/100B/w16", "mmap/none/4KiB/w16"}, labels)
}

func TestExperimentValidateReportsEverything(t *testing.T) {
	_, err := ParseExperiment([]byte(`{"name": "e", "kind": "e2e", "base": {}}`))
	require.ErrorContains(t, err, `kind "e2e" is not a storage experiment`)
	_, err = ParseExperiment([]byte(`{"name": "a b", "kind": "storage", "repeats": -1,
	  "matrix": {"backends": [], "flush": ["fast"], "sizes": [0], "writers": [-2], "max_batch_bytes": [-1]},
	  "disk": {"run": true, "fsync": {"sync": "sometimes"}},
	  "targets": [{"name": "x", "cells": "[", "metric": "speed"}]}`))
	require.Error(t, err)
	for _, want := range []string{"name", "repeats", "matrix needs", `flush "fast"`, "size 0", "writers -2",
		"max_batch_bytes -1", "sometimes", `metric "speed"`, "no bound"} {
		require.ErrorContains(t, err, want)
	}
	_, err = ParseExperiment([]byte(`{"name": "a", "kind": "storage", "bogus": 1}`))
	require.ErrorContains(t, err, "unknown field")
}

func TestShippedExperimentsParse(t *testing.T) {
	files, err := filepath.Glob("../experiments/*.json")
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if !isStorageKind(b) {
			continue // end-to-end experiments belong to loadgen
		}
		n++
		e, err := LoadExperiment(f)
		require.NoError(t, err, f)
		require.NotEmpty(t, e.Expand(false).Cells, f)
	}
	if n == 0 {
		t.Skip("no storage experiments shipped yet")
	}
}

func TestDiskFsyncFor(t *testing.T) {
	r := DiskRef{}
	require.Equal(t, FsyncEvery, r.diskFsyncFor("sync"))
	require.Equal(t, FsyncInterval, r.diskFsyncFor("async"))
	require.Equal(t, FsyncNone, r.diskFsyncFor("none"))
	r.Fsync = map[string]FsyncPolicy{"async": FsyncNone}
	require.Equal(t, FsyncNone, r.diskFsyncFor("async"))
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int64]string{0: "unbounded", 100: "100B", 1024: "1KiB", 1536: "1536B", 65536: "64KiB", 4 << 20: "4MiB", 1 << 30: "1GiB"} {
		require.Equal(t, want, sizeLabel(n))
	}
}

// TestRoundOrderInterleaves: with interleave, a round runs every backend
// of one configuration back to back, the backends reversed every other
// round; without, the plan's order.
func TestRoundOrderInterleaves(t *testing.T) {
	e := &Experiment{Name: "x", Kind: "storage", Matrix: Matrix{Backends: []string{"a", "b", "c"},
		Flush: []string{"sync"}, Sizes: []int{128, 1024}, Writers: []int{1}}}
	e.EnsureDefaults()
	p := e.Expand(false)
	labels := func(order []int) []string {
		var out []string
		for _, i := range order {
			out = append(out, p.Cells[i].Label)
		}
		return out
	}
	require.Equal(t, []string{"a/sync/128B/w1", "a/sync/1KiB/w1", "b/sync/128B/w1", "b/sync/1KiB/w1", "c/sync/128B/w1", "c/sync/1KiB/w1"},
		labels(p.RoundOrder(0, false)))
	require.Equal(t, []string{"a/sync/128B/w1", "b/sync/128B/w1", "c/sync/128B/w1", "a/sync/1KiB/w1", "b/sync/1KiB/w1", "c/sync/1KiB/w1"},
		labels(p.RoundOrder(0, true)))
	require.Equal(t, []string{"c/sync/128B/w1", "b/sync/128B/w1", "a/sync/128B/w1", "c/sync/1KiB/w1", "b/sync/1KiB/w1", "a/sync/1KiB/w1"},
		labels(p.RoundOrder(1, true)))
}
