package backlog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen"
)

// fakeTarget is a store of one file and a driver whose consumers deliver
// the filled messages and whose producers are answered at once.
type fakeTarget struct {
	dir    string
	filled atomic.Int64
	closed atomic.Bool
	reads  atomic.Int64 // read cache counts: each call reads a block more
}

func (t *fakeTarget) ReadCache() (hits, misses, direct int64) {
	n := t.reads.Add(8)
	return 7 * n, n, 0
}

func (t *fakeTarget) Driver() loadgen.Driver { return fakeDriver{t} }
func (t *fakeTarget) StoreDir() string       { return t.dir }
func (t *fakeTarget) Describe() string       { return "fake" }
func (t *fakeTarget) Close() error           { t.closed.Store(true); return nil }
func (t *fakeTarget) Fill(_ context.Context, topic string, queues int, n int64, size int) (int64, int64, error) {
	if err := os.WriteFile(filepath.Join(t.dir, "commitlog"), make([]byte, n), 0o644); err != nil {
		return 0, 0, err
	}
	msgs := n / int64(size)
	t.filled.Store(msgs)
	return msgs, n, nil
}

type fakeDriver struct{ t *fakeTarget }

func (fakeDriver) Name() string                                   { return "fake" }
func (fakeDriver) Describe() map[string]any                       { return nil }
func (fakeDriver) Close() error                                   { return nil }
func (fakeDriver) CreateTopic(context.Context, string, int) error { return nil }
func (fakeDriver) NewProducer(context.Context, string, loadgen.ProducerOptions) (loadgen.Producer, error) {
	return fakeProducer{}, nil
}

func (d fakeDriver) NewConsumer(_ context.Context, _, _ string, o loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	c := &fakeConsumer{stop: make(chan struct{})}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		body := make([]byte, 1024)
		for i := int64(o.Member); i < d.t.filled.Load(); i += int64(o.Members) {
			select {
			case <-c.stop:
				return
			default:
			}
			h(body)
		}
	}()
	return c, nil
}

type fakeProducer struct{}

func (fakeProducer) Send(_ context.Context, _ string, _ []byte, done func(error)) { done(nil) }
func (fakeProducer) Close() error                                                 { return nil }

type fakeConsumer struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

func (c *fakeConsumer) Close() error { close(c.stop); c.wg.Wait(); return nil }

func TestRunExperimentFake(t *testing.T) {
	e := &Experiment{Spec: resultfile.Spec{Name: "backlog-test", Kind: Kind}, DrainTarget: 0.8, P99Target: 2,
		Forms: resultfile.Forms[Settings, *Settings]{Base: Settings{BacklogBytes: 2 << 20, ReadSize: 1 << 20, Before: resultfile.Duration(200 * time.Millisecond),
			DrainTimeout: resultfile.Duration(30 * time.Second), SteadyRate: 200, WarmReference: true}}}
	var targets []*fakeTarget
	res, err := RunExperiment(context.Background(), e, Options{DiskDir: t.TempDir(),
		NewTarget: func(_ context.Context, to TargetOptions) (Target, error) {
			require.Equal(t, TargetOptions{Flush: "async"}, to)
			ft := &fakeTarget{dir: t.TempDir()}
			targets = append(targets, ft)
			return ft, nil
		}})
	require.NoError(t, err)
	require.Len(t, res.Runs, 1)
	r := res.Runs[0]
	require.EqualValues(t, 2048, r.BacklogMsgs)
	require.Equal(t, r.BacklogMsgs, r.Received)
	require.Equal(t, "fadvise", r.Drop.Method)
	require.Equal(t, 1, r.Drop.Files)
	require.Positive(t, r.DrainMBps)
	require.Positive(t, r.ReadMBps)
	require.Positive(t, r.LoopbackMBps)
	require.InDelta(t, r.DrainMBps/r.LoopbackMBps, r.LoopbackRatio, 1e-9)
	require.Positive(t, r.SendBefore.Count)
	require.Len(t, targets, 2, "a cold repeat and the warm reference")
	require.True(t, targets[0].closed.Load())
	require.NotNil(t, res.Warm)
	require.Equal(t, "none (warm)", res.Warm.Drop.Method)
	require.Equal(t, r.BacklogMsgs, res.Warm.Received)
	md := res.Markdown()
	require.Contains(t, md, "drain ≥ 0.80× raw sequential read")
	require.Contains(t, md, "posix_fadvise(DONTNEED)")
	require.Contains(t, md, "| warm |")
	require.Contains(t, md, "Cold over warm drain")
	require.Contains(t, md, "Loopback ceiling: 2 TCP connections on 127.0.0.1")
	require.EqualValues(t, 8, r.ReadCacheMisses, "the counts over the drain: the second reading less the first")
	require.EqualValues(t, 56, r.ReadCacheHits)
	require.Contains(t, md, "Read block cache (storage/blockcache.go) during the drains: repeat 1 8 block reads for 8 blocks of backlog (1.00 each), 56 hits; warm 8 block reads")
}

// TestRunExperimentPaced: paced consumers take at least the time their
// pace gives the backlog's bodies, the target the options ask for reaches
// NewTarget, and the drain target is marked as not applying.
func TestRunExperimentPaced(t *testing.T) {
	e := &Experiment{Spec: resultfile.Spec{Name: "backlog-paced", Kind: Kind}, DrainTarget: 0.8, P99Target: 2,
		Forms: resultfile.Forms[Settings, *Settings]{Base: Settings{BacklogBytes: 2 << 20, ReadSize: 1 << 20, Before: resultfile.Duration(200 * time.Millisecond),
			DrainTimeout: resultfile.Duration(30 * time.Second), SteadyRate: 200, PaceMBps: 8, DirectColdReads: true}}}
	res, err := RunExperiment(context.Background(), e, Options{DiskDir: t.TempDir(),
		NewTarget: func(_ context.Context, to TargetOptions) (Target, error) {
			require.Equal(t, TargetOptions{Flush: "async", DirectColdReads: true}, to)
			return &fakeTarget{dir: t.TempDir()}, nil
		}})
	require.NoError(t, err)
	r := res.Runs[0]
	require.Equal(t, r.BacklogMsgs, r.Received)
	require.GreaterOrEqual(t, r.DrainSeconds, float64(2048*1024)/8e6*0.99, "2 MiB of bodies at 8 MB/s")
	require.True(t, res.DrainNA)
	md := res.Markdown()
	require.Contains(t, md, "not applicable (paced)")
	require.NotContains(t, md, "no consumer that receives the backlog over TCP", "the drain target does not apply to a paced run")
	require.Contains(t, md, "paced together at 8 MB/s of message bodies, the broker reading what the page cache lacks with O_DIRECT")
	_, err = (&Experiment{Spec: resultfile.Spec{Name: "x", Kind: Kind}, Forms: resultfile.Forms[Settings, *Settings]{Base: Settings{BacklogBytes: 2 << 20, PaceMBps: -1}}}).Settings(false)
	require.ErrorContains(t, err, "pace_mb_per_sec -1")
}

func TestShippedExperimentLoads(t *testing.T) {
	e, err := LoadExperiment("../../experiments/backlog-drain.json")
	require.NoError(t, err)
	q, err := e.Settings(true)
	require.NoError(t, err)
	f, err := e.Settings(false)
	require.NoError(t, err)
	require.EqualValues(t, 1<<30, q.BacklogBytes)
	require.Greater(t, f.BacklogBytes, q.BacklogBytes)
	require.Equal(t, 0.8, e.DrainTarget)
	require.Equal(t, 2.0, e.P99Target)
}

func TestSettingsErrors(t *testing.T) {
	s := Settings{Flush: "maybe", BacklogBytes: 10, SteadyRate: -1}
	s.EnsureDefaults()
	err := s.Validate()
	require.Error(t, err)
	for _, want := range []string{`flush "maybe"`, "backlog_bytes 10", "steady_rate -1", "read_size"} {
		require.True(t, strings.Contains(err.Error(), want), "%q lacks %q", err, want)
	}
}

// TestRunCellsFake: a matrix runs each cell's settings (its pull path and
// queue count reach NewTarget), a cold repeat and a warm reference each,
// and holds the zero-copy cells against the heap cell of their queue
// count and against the loopback ceiling.
func TestRunCellsFake(t *testing.T) {
	e := &Experiment{Spec: resultfile.Spec{Name: "read-path-test", Kind: Kind}, DrainTarget: 0.8, P99Target: 2,
		Forms: resultfile.Forms[Settings, *Settings]{Base: Settings{BacklogBytes: 2 << 20, ReadSize: 1 << 20, Before: resultfile.Duration(100 * time.Millisecond),
			DrainTimeout: resultfile.Duration(30 * time.Second), SteadyRate: 200}},
		Cells: []Cell{{Name: "heap-1q", TransferMsgByHeap: true, Queues: 1}, {Name: "sendfile-1q", Queues: 1}, {Name: "sendfile-4q", Queues: 4}}}
	e.CellTargets.ensureDefaults()
	var heap []bool
	res, err := RunExperiment(context.Background(), e, Options{DiskDir: t.TempDir(),
		NewTarget: func(_ context.Context, to TargetOptions) (Target, error) {
			heap = append(heap, to.TransferMsgByHeap)
			return &fakeTarget{dir: t.TempDir()}, nil
		}})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, false, false, false, false}, heap, "a cold repeat and a warm one a cell")
	require.Len(t, res.Cells, 3)
	require.Equal(t, 1, res.Cells[0].Queues)
	require.Equal(t, 4, res.Cells[2].Queues)
	require.NotNil(t, res.Cells[1].Warm)
	var targets []string
	for _, c := range res.CellChecks {
		require.NotEqual(t, "heap-1q", c.Cell, "heap cells are the reference")
		targets = append(targets, c.Cell+": "+c.Target)
	}
	require.Contains(t, targets, "sendfile-4q: warm drain ÷ loopback ceiling ≥")
	// CPU: each zero-copy cell against the heap cell of its queue count.
	cells := []CellResult{{Cell: Cell{Name: "h1", TransferMsgByHeap: true}, Queues: 1, Median: Run{CPUPerGiB: 4}},
		{Cell: Cell{Name: "z1"}, Queues: 1, Median: Run{CPUPerGiB: 1.5}}, {Cell: Cell{Name: "z4"}, Queues: 4, Median: Run{CPUPerGiB: 1}}}
	var cpu []CellCheck
	for _, c := range cellChecks(cells, e.CellTargets) {
		if strings.HasPrefix(c.Target, "CPU") {
			cpu = append(cpu, c)
		}
	}
	require.Len(t, cpu, 1)
	require.Equal(t, "z1", cpu[0].Cell)
	require.InDelta(t, 0.375, cpu[0].Measured, 1e-9)
	require.True(t, cpu[0].Met)
	md := res.Markdown()
	require.Contains(t, md, "| sendfile-1q | files (sendfile; runs < 16 KiB read, unchecked) | 1 |")
	require.Contains(t, md, "| heap-1q | memory (transferMsgByHeap) | 1 |")
	require.Contains(t, md, "| sendfile-4q | cold drain ÷ loopback ceiling ≥ 0.50 |")
}

func TestShippedReadPathLoads(t *testing.T) {
	e, err := LoadExperiment("../../experiments/read-path.json")
	require.NoError(t, err)
	q, err := e.Settings(true)
	require.NoError(t, err)
	require.EqualValues(t, 256<<20, q.BacklogBytes)
	require.Len(t, e.Cells, 6)
	require.Equal(t, 0.5, e.CellTargets.CPURatio)
}
