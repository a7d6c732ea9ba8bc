package catchup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/bench"
	"github.com/samsamq/samsa/internal/resultfile"
)

func TestShippedExperimentParses(t *testing.T) {
	e, err := LoadExperiment("../../experiments/replication-catchup.json")
	require.NoError(t, err)
	full, err := e.Settings(false)
	require.NoError(t, err)
	quick, err := e.Settings(true)
	require.NoError(t, err)
	require.EqualValues(t, 4<<30, full.FillBytes)
	require.EqualValues(t, 512<<20, quick.FillBytes)
	require.Equal(t, 3, quick.Repeats) // a median, even in make bench
	require.Equal(t, bench.FsyncInterval, quick.DiskFsync)
	require.Equal(t, 0.8, e.Target)
}

func TestExperimentRejects(t *testing.T) {
	base := `{"name": "c", "kind": "replication-catchup", "base": {"fill_bytes": 1048576}, "quick": {"repeats": 1}}`
	for _, tc := range []struct{ from, to, want string }{
		{`"kind": "replication-catchup"`, `"kind": "e2e"`, `is not "replication-catchup"`},
		{`"fill_bytes": 1048576`, `"fill_bytes": 1000`, "at least 1 MiB"},
		{`"fill_bytes": 1048576`, `"fill_bytes": 1048576, "disk_fsync": "sometimes"`, "disk_fsync"},
		{`"fill_bytes": 1048576`, `"fill_bytes": 1048576, "settle": "-1s"`, "settle"},
		{`"repeats": 1`, `"repeats": -1`, "repeats -1"},
		{`"repeats": 1`, `"repeat": 1`, "unknown field"},
	} {
		p := filepath.Join(t.TempDir(), "e.json")
		text := strings.Replace(base, tc.from, tc.to, 1)
		require.NotEqual(t, base, text)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		_, err := LoadExperiment(p)
		require.ErrorContains(t, err, tc.want, tc.to)
	}
}

// fakeTarget's slave gains a quarter of the master each time it is read.
type fakeTarget struct {
	handed int64
	closed atomic.Bool
}

type fakeSlave struct {
	t   *fakeTarget
	off atomic.Int64
}

func (f *fakeTarget) Fill(_ context.Context, n int64, _ int) (int64, error) {
	f.handed = n + 100
	return f.handed, nil
}
func (f *fakeTarget) StartSlave() (Slave, error) { return &fakeSlave{t: f}, nil }
func (f *fakeTarget) Close() error               { f.closed.Store(true); return nil }
func (s *fakeSlave) Offset() int64               { return s.off.Add(s.t.handed/4 + 1) }
func (s *fakeSlave) Describe() string            { return "fake slave" }

func TestRunExperimentWithAFake(t *testing.T) {
	e := &Experiment{Spec: resultfile.Spec{Name: "c", Kind: Kind}, Target: 0.8,
		Forms: resultfile.Forms[Settings, *Settings]{Base: Settings{FillBytes: 1 << 20, DiskBlock: 4096, DiskDuration: resultfile.Duration(50e6), Settle: new(resultfile.Duration(0))}}}
	var targets []*fakeTarget
	var progress bytes.Buffer
	res, err := RunExperiment(context.Background(), e, Options{DiskDir: t.TempDir(), Progress: &progress,
		NewTarget: func(context.Context) (Target, error) {
			ft := &fakeTarget{}
			targets = append(targets, ft)
			return ft, nil
		}})
	require.NoError(t, err)
	require.Len(t, res.Runs, 1)
	require.Len(t, targets, 1)
	require.True(t, targets[0].closed.Load(), "the cluster is closed before the disk runs")
	r := res.Runs[0]
	require.EqualValues(t, 1<<20+100, r.FillBytes)
	require.Positive(t, r.CatchUpSeconds)
	require.Positive(t, r.CatchUpMBps)
	require.Positive(t, r.DiskMBps)
	require.InDelta(t, r.CatchUpMBps/r.DiskMBps, r.Ratio, 1e-9)
	require.Equal(t, r, res.Median)
	require.Equal(t, res.Median.Ratio >= 0.8, res.Met)
	require.Equal(t, "fake slave", r.Slave)
	md := res.Markdown()
	require.Contains(t, md, "| catch-up ≥ 0.80× disk sequential write |")
	require.Contains(t, progress.String(), "repeat 1/1")
}
