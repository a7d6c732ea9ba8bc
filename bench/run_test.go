package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
)

// fakeLab stands in for the disk and the engine: figures follow from the
// options and the round, so ratios are known in advance.
type fakeLab struct {
	round      map[string]int // runs so far per key
	diskCalls  []DiskOptions
	storeCalls []StorageOptions
}

func newFakeLab() *fakeLab { return &fakeLab{round: map[string]int{}} }

func (f *fakeLab) disk(_ context.Context, o DiskOptions) (*DiskResult, error) {
	f.diskCalls = append(f.diskCalls, o)
	k := "disk" + string(o.Fsync)
	f.round[k]++
	mb := 100.0 * float64(f.round[k]) // 100, 200, 300 MB/s by round
	if o.Fsync == FsyncEvery {
		mb = 2
	}
	return &DiskResult{Kind: "disk", Options: o, MBPerSec: mb, MsgsPerSec: mb * 1e6 / float64(o.Block),
		LatencyUs: Latency{P50: 200, P99: 800}, MeasuredSeconds: o.Duration.Seconds()}, nil
}

func (f *fakeLab) probe(_ context.Context, _ string, block int, _ time.Duration) (Latency, error) {
	f.round["probe"]++
	return Latency{Count: 100, P50: 200, P99: 500 * int64(f.round["probe"])}, nil // 500, 1000, 1500
}

func (f *fakeLab) storage(_ context.Context, o StorageOptions) (*StorageResult, error) {
	f.storeCalls = append(f.storeCalls, o)
	switch o.Backend {
	case "nope":
		return nil, fmt.Errorf("%w: nope: not registered", ErrUnavailable)
	case "broken":
		return nil, errors.New("fsync: input/output error")
	}
	k := fmt.Sprintf("%s/%s/%d", o.Backend, o.Flush, o.Writers)
	f.round[k]++
	n := float64(f.round[k])
	rec := RecordSizeFake(o.Size)
	res := &StorageResult{Kind: "storage", Options: o, Config: o.String(), StoreConfig: "store{" + o.Backend + "}",
		RecordBytes: rec, MeasuredSeconds: o.Duration.Seconds()}
	if o.Flush == "sync" {
		res.MsgsPerSec = 1000 * float64(o.Writers) * n
		res.LatencyUs = Latency{P50: 300, P99: 1000 * int64(n), P999: 2000, Max: 3000}
		res.AvgBatch = float64(o.Writers)
	} else {
		res.MsgsPerSec = 90_000 * n // 0.9 of the disk's 100 MB/s per round at 1000-byte records
		res.LatencyUs = Latency{P50: 2, P99: 10, P999: 50, Max: 900}
		res.AvgBatch = 5000
	}
	res.Appends = int64(res.MsgsPerSec * res.MeasuredSeconds)
	res.LogMBPerSec = res.MsgsPerSec * float64(rec) / 1e6
	res.MBPerSec = res.MsgsPerSec * float64(o.Size) / 1e6
	res.Fsyncs = int64(float64(res.Appends) / res.AvgBatch)
	res.SyscallsPer1000 = 1000 * float64(res.Appends+res.Fsyncs) / float64(res.Appends)
	if o.Writers == 1 {
		// The device: one write a sync append, 512 KiB writes under async;
		// not readable for 64 writers (a report says n/a).
		logBytes := res.LogMBPerSec * 1e6 * res.MeasuredSeconds
		ios := int64(logBytes / (512 << 10))
		if o.Flush == "sync" {
			ios = res.Appends
		}
		res.Device = &DeviceIO{Device: "vdz", WriteIOs: ios, WriteBytes: int64(logBytes * 1.5),
			WritesPerSec: float64(ios) / res.MeasuredSeconds, AvgWriteBytes: logBytes * 1.5 / float64(ios)}
	} else {
		res.DeviceNote = "n/a: no mount holds /fake"
	}
	return res, nil
}

// RecordSizeFake makes record sizes round: a 900-byte body stores 1000.
func RecordSizeFake(n int) int { return n + 100 }

// fakeClock advances a second every reading.
func fakeClock(start time.Time) func() time.Time {
	t := start
	return func() time.Time { t = t.Add(time.Second); return t }
}

var fakeMachine = resultfile.Machine{Hostname: "box", Kernel: "6.1.0", Arch: "x86_64", CPUModel: "Fake CPU", CPUs: 2,
	MemBytes: 8 << 30, FSType: "ext4", Device: "vda", DiskModel: "virtio_blk", GitCommit: "0123456789abcdef", GoVersion: "go1.26"}

const runTestExperiment = `{
  "name": "fake", "kind": "storage", "description": "A fake lab.", "repeats": 3, "duration": "2s", "warmup": "100ms",
  "matrix": {"backends": ["pwrite", "nope", "broken"], "flush": ["sync", "async"], "sizes": [900], "writers": [1, 64]},
  "options": {"interval": "200ms"},
  "disk": {"run": true},
  "targets": [
    {"name": "async ≥ 90% of disk", "cells": "*/async/900B/w1", "metric": "mb_ratio", "min": 0.9},
    {"name": "sync w64 ≥ 30× w1", "cells": "*/sync/900B/w64", "metric": "msgs_per_sec", "over": "{backend}/sync/900B/w1", "min": 30},
    {"name": "sync p99 ≤ 3× fsync", "cells": "*/sync/900B/w64", "metric": "p99_vs_fsync", "max": 3},
    {"name": "nobody", "cells": "zfs/*/*/*", "metric": "avg_batch", "min": 1}
  ]
}`

func runFake(t *testing.T) (*ExperimentResult, *fakeLab, string) {
	t.Helper()
	e, err := ParseExperiment([]byte(runTestExperiment))
	require.NoError(t, err)
	lab := newFakeLab()
	var progress bytes.Buffer
	m := fakeMachine
	res, err := Run(context.Background(), e, RunOptions{
		Dir: "/data", Progress: &progress, Command: "samsa bench run fake.json", Machine: &m,
		Storage: lab.storage, Disk: lab.disk, Probe: lab.probe, RecordSize: RecordSizeFake,
		Settle: func() {}, Now: fakeClock(time.Date(2025, 12, 2, 12, 0, 0, 0, time.UTC)),
	})
	require.NoError(t, err)
	return res, lab, progress.String()
}

func TestRunRoundsRatiosAndSkips(t *testing.T) {
	res, lab, progress := runFake(t)

	// Two references (sync → every, async → interval at the async flush
	// interval), one probe, 12 cells: 15 steps a round, 45 in all.
	require.Len(t, res.DiskRefs, 2)
	require.Equal(t, "block=1000/fsync=every", res.DiskRefs[0].Key)
	require.Equal(t, "block=1000/fsync=interval", res.DiskRefs[1].Key)
	require.Len(t, lab.diskCalls, 6)
	for _, d := range lab.diskCalls {
		require.Equal(t, 1000, d.Block, "the disk writes what the store writes per record")
		require.Equal(t, 1, d.Writers)
		require.Equal(t, 2*time.Second, d.Duration)
		if d.Fsync == FsyncInterval {
			require.Equal(t, 200*time.Millisecond, d.Interval)
		}
	}
	require.Contains(t, progress, "[1/45] fake round 1/3: raw disk block=1000/fsync=every (ETA ?)")
	require.Contains(t, progress, "[45/45] fake round 3/3: broken/async/900B/w64")
	require.Equal(t, 3, res.Repeats)
	require.Equal(t, "samsa bench run fake.json", res.Command)

	// Unavailable backends are skipped, failing ones failed: both only tried once.
	nope, broken := res.Cell("nope/sync/900B/w1"), res.Cell("broken/async/900B/w64")
	require.Equal(t, StatusSkipped, nope.Status)
	require.Contains(t, nope.Reason, "not registered")
	require.Equal(t, StatusFailed, broken.Status)
	tries := 0
	for _, c := range lab.storeCalls {
		if c.Backend == "nope" && c.Flush == "sync" && c.Writers == 1 {
			tries++
		}
	}
	require.Equal(t, 1, tries)

	// Async: the cell makes 0.9 of the disk in every round, whatever the
	// round's level, so the ratio is exact though both drift.
	a := res.Cell("pwrite/async/900B/w1")
	require.Equal(t, StatusOK, a.Status)
	require.Len(t, a.Runs, 3)
	require.Equal(t, "block=1000/fsync=interval", a.DiskRef)
	require.InDelta(t, 0.9, a.Ratios.MB.Median, 1e-9)
	require.InDelta(t, 0.9, a.Ratios.MB.Min, 1e-9)
	require.Nil(t, a.Ratios.P99VsFsync, "only sync cells are held against the fsync probe")
	require.Equal(t, 180_000.0, a.Summary.MsgsPerSec.Median)
	require.Equal(t, 90_000.0, a.Summary.MsgsPerSec.Min)

	// Sync: p99 1000·n over probe 500·n is 2 in every round.
	s := res.Cell("pwrite/sync/900B/w64")
	require.InDelta(t, 2, s.Ratios.P99VsFsync.Median, 1e-9)
	require.InDelta(t, 1.5, s.Ratios.P50VsDisk.Median, 1e-9, "p50 300 µs over the write+fdatasync's 200")
	require.Nil(t, a.Ratios.P50VsDisk, "only sync cells are held against the disk's p50")
	require.InDelta(t, 64*2.0/2, s.Ratios.MB.Median, 1e-9) // 128k msgs/s × 1000 B = 128 MB/s over 2
	require.Equal(t, 64.0, s.Summary.AvgBatch.Median)
	require.Equal(t, 3, res.Probe.P99Us.N)
	require.Equal(t, 1000.0, res.Probe.P99Us.Median)

	// Targets.
	tr := EvaluateTargets(res)
	byCell := map[string]TargetResult{}
	for _, x := range tr {
		byCell[x.Name+"|"+x.Cell] = x
	}
	got := byCell["async ≥ 90% of disk|pwrite/async/900B/w1"]
	require.True(t, *got.Met)
	got = byCell["sync w64 ≥ 30× w1|pwrite/sync/900B/w64"]
	require.Equal(t, "pwrite/sync/900B/w1", got.Over)
	require.InDelta(t, 64, got.Value, 1e-9)
	require.True(t, *got.Met)
	got = byCell["sync p99 ≤ 3× fsync|nope/sync/900B/w64"]
	require.Nil(t, got.Met)
	require.Contains(t, got.Note, "skipped")
	require.Equal(t, "no cell matches", byCell["nobody|zfs/*/*/*"].Note)
}

func TestRunCancelled(t *testing.T) {
	e, err := ParseExperiment([]byte(runTestExperiment))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	lab := newFakeLab()
	m := fakeMachine
	_, err = Run(ctx, e, RunOptions{Dir: "/data", Machine: &m, Settle: func() {}, RecordSize: RecordSizeFake,
		Storage: lab.storage, Probe: lab.probe,
		Disk: func(ctx context.Context, o DiskOptions) (*DiskResult, error) { cancel(); return nil, ctx.Err() }})
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunProfilesEachCell(t *testing.T) {
	e, err := ParseExperiment([]byte(`{"name": "p", "kind": "storage", "repeats": 2,
	  "matrix": {"backends": ["pwrite"], "flush": ["async"], "sizes": [10], "writers": [2]}, "disk": {"run": false}}`))
	require.NoError(t, err)
	lab := newFakeLab()
	m := fakeMachine
	var names []string
	res, err := Run(context.Background(), e, RunOptions{Dir: "/d", Machine: &m, Settle: func() {}, Storage: lab.storage,
		ProfileCell: func(name string) func() { names = append(names, name); return func() { names = append(names, "stop") } }})
	require.NoError(t, err)
	require.Equal(t, []string{"pwrite_async_10B_w2_r1", "stop", "pwrite_async_10B_w2_r2", "stop"}, names)
	require.Nil(t, res.Probe)
	require.Empty(t, res.DiskRefs)
	require.Nil(t, res.Cells[0].Ratios.MB)
	require.False(t, strings.Contains(res.Cells[0].DiskRef, "block"))
}

// TestRunGroupCeiling: disk.groups adds a sync reference writing n records
// per fdatasync, and the result says n × its rate over one record's.
func TestRunGroupCeiling(t *testing.T) {
	e, err := ParseExperiment([]byte(`{"name": "g", "kind": "storage", "repeats": 2, "duration": "1s",
	  "matrix": {"backends": ["pwrite"], "flush": ["sync", "async"], "sizes": [900], "writers": [1, 64]},
	  "disk": {"run": true, "groups": [64]}}`))
	require.NoError(t, err)
	lab := newFakeLab()
	m := fakeMachine
	res, err := Run(context.Background(), e, RunOptions{
		Dir: "/data", Progress: &bytes.Buffer{}, Machine: &m,
		Storage: lab.storage, Disk: lab.disk, Probe: lab.probe, RecordSize: RecordSizeFake,
		Settle: func() {}, Now: fakeClock(time.Date(2025, 12, 2, 12, 0, 0, 0, time.UTC)),
	})
	require.NoError(t, err)
	require.Len(t, res.DiskRefs, 3, "every, interval, and the 64-record group")
	var g *DiskRefResult
	for i := range res.DiskRefs {
		if res.DiskRefs[i].Group > 0 {
			g = &res.DiskRefs[i]
		}
	}
	require.NotNil(t, g)
	require.Equal(t, "block=64000/fsync=every", g.Key)
	require.Equal(t, "block=1000/fsync=every", g.Base)
	require.Len(t, g.Runs, 2)
	// The fake disk's fsync-every MB/s is the same at any block: 64
	// records per write are 1/64 the writes, so the ceiling is 1×.
	require.NotNil(t, g.Ceiling)
	require.InDelta(t, 1.0, g.Ceiling.Median, 1e-9)
	require.Contains(t, Markdown(res, nil, ""), "64 writers can make at most **1.0×**")
	for _, c := range res.Cells {
		require.NotEqual(t, g.Key, c.DiskRef, "cells keep their own reference")
	}
}
