package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/catchup"
)

// TestLabKindsRegistersEveryKind: every kind of the shipped experiment
// files has a runner, and each file loads through it.
func TestLabKindsRegistersEveryKind(t *testing.T) {
	kinds := labKinds(labSettings{}, profileFlags{})
	files, err := filepath.Glob(filepath.Join("..", "..", "experiments", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name, err := resultfile.Kind(f)
		require.NoError(t, err)
		k, ok := kinds[name]
		require.True(t, ok, "%s: kind %q has no runner", f, name)
		_, err = k.Load(f)
		require.NoError(t, err, f)
	}
}

// TestLabCatchupGate runs a tiny catch-up experiment file through the
// pipeline with the gate on and a target no disk reaches: the result
// file (with the machine and the command) and the section are written,
// and the miss is the run's error.
func TestLabCatchupGate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded master and slave")
	}
	dir := t.TempDir()
	exp := filepath.Join(dir, "catchup.json")
	require.NoError(t, os.WriteFile(exp, []byte(`{"name": "catchup-gate", "kind": "`+catchup.Kind+`", "target": 1000,
		"base": {"fill_bytes": 2097152, "disk_duration": "100ms", "settle": "0s"}}`), 0o644))
	perf := filepath.Join(dir, "PERFORMANCE.md")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	path, err := labKinds(labSettings{}, profileFlags{}).Run(ctx, exp, lab.Options{
		Env: lab.Env{DataDir: filepath.Join(dir, "data"), Command: "samsa loadgen --experiment catchup.json --gate"},
		Out: filepath.Join(dir, "results"), Performance: perf, Gate: true, Stdout: &out})
	require.ErrorContains(t, err, "replication-catchup: target missed")
	require.FileExists(t, path)
	res, err := catchup.LabKind(nil).Read(path)
	require.NoError(t, err)
	h := res.Head()
	require.Equal(t, "samsa loadgen --experiment catchup.json --gate", h.Command)
	require.NotNil(t, h.Machine)
	require.Contains(t, out.String(), "result: "+path)
	doc, err := os.ReadFile(perf)
	require.NoError(t, err)
	require.Contains(t, string(doc), "<!-- BEGIN GENERATED: catchup-gate -->")
	require.Contains(t, string(doc), "Machine: "+h.Machine.String())
}
