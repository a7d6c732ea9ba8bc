package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/backlog"
)

// TestBacklogSmoke runs a tiny backlog drain on an embedded cluster: the
// fill goes through the store, the consumers get every message, the
// drop and the raw read ran.
func TestBacklogSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded cluster")
	}
	dir := t.TempDir()
	e := &backlog.Experiment{Spec: resultfile.Spec{Name: "backlog-smoke", Kind: backlog.Kind}, DrainTarget: 0.8, P99Target: 2,
		Forms: resultfile.Forms[backlog.Settings, *backlog.Settings]{Base: backlog.Settings{BacklogBytes: 8 << 20, ReadSize: 4 << 20, Queues: 4, SteadyRate: 200,
			Before: resultfile.Duration(300 * time.Millisecond), DrainTimeout: resultfile.Duration(60 * time.Second)}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := backlog.RunExperiment(ctx, e, backlog.Options{DiskDir: dir,
		NewTarget: func(_ context.Context, to backlog.TargetOptions) (backlog.Target, error) {
			return newBacklogTarget(dir, to)
		}})
	require.NoError(t, err)
	r := res.Runs[0]
	require.Positive(t, r.BacklogMsgs)
	require.GreaterOrEqual(t, r.Received, r.BacklogMsgs)
	require.GreaterOrEqual(t, r.BacklogBytes, int64(8<<20))
	require.Positive(t, r.Drop.Files)
	require.Contains(t, r.Store, "diskMaxUsedSpaceRatio 95")
	require.Positive(t, r.ReadMBps)
	require.Zero(t, r.SendErrors)
}
