package loadgen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
)

const replJSON = `{
  "name": "r", "kind": "e2e", "repeats": 3, "quick_repeats": 1,
  "base": {"message_size": 64, "warmup": "50ms", "duration": "300ms"},
  "cells": [
    {"label": "none", "driver": "mem", "cluster": {"flush": "async"}},
    {"label": "sync", "driver": "mem", "cluster": {"flush": "async", "replication": "sync"}},
    {"label": "sync-2ms", "driver": "mem", "cluster": {"flush": "async", "replication": "sync", "link_delay_ms": 2},
     "workload": {"producers": 4}, "no_matrix": true}
  ],
  "matrix": {"producers": [1, 4, 16]},
  "quick_matrix": {"producers": [1, 4]},
  "compare": [
    {"name": "sync p99 at 16", "num": "sync/producers=16", "den": "none/producers=16", "metric": "send_p99", "kind": "additive", "plus_rtt": 2, "plus_ms": 1},
    {"name": "sync p99 at 4", "num": "sync/producers=4", "den": "none/producers=4", "metric": "send_p99", "kind": "additive", "plus_rtt": 2, "plus_ms": 1},
    {"name": "sync over none", "num": "sync/producers=4", "den": "none/producers=4", "metric": "msgs_per_sec", "target": 0.7}
  ]
}`

func loadExp(t *testing.T, text string) (*Experiment, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "e.json")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return LoadExperiment(p)
}

func TestReplicationExperimentExpand(t *testing.T) {
	e, err := loadExp(t, replJSON)
	require.NoError(t, err)
	full, err := e.Expand(false)
	require.NoError(t, err)
	require.Len(t, full, 7, "two cells × 3 producer counts, and one outside the matrix")
	quick, err := e.Expand(true)
	require.NoError(t, err)
	require.Len(t, quick, 5, "the quick matrix has 2 producer counts")
	require.Equal(t, 1, e.repeats(true))
	require.Equal(t, 3, e.repeats(false))

	byLabel := map[string]Cell{}
	for _, c := range full {
		byLabel[c.Label] = c
	}
	none, sync, delayed := byLabel["none/producers=1"].Cluster, byLabel["sync/producers=4"].Cluster, byLabel["sync-2ms"].Cluster
	require.Equal(t, ReplicationNone, none.Replication, "no replication is none")
	require.False(t, none.Replicated())
	require.Equal(t, 1, sync.Slaves, "a replicated cell has 1 slave by default")
	require.False(t, sync.Delayed(), "no delay: straight over loopback")
	require.Equal(t, LinkAuto, delayed.LinkMethod)
	require.True(t, delayed.Delayed())
	require.Equal(t, 2*time.Millisecond, delayed.LinkDelay())
	require.Equal(t, 4, byLabel["sync-2ms"].Workload.Producers, "no_matrix keeps the cell's own producers")
}

func TestReplicationExperimentRejects(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{`"replication": "sync"}`, `"replication": "semi"}`, `replication "semi"`},
		{`"flush": "async"}},`, `"flush": "async", "slaves": 2}},`, "need replication"},
		{`"link_delay_ms": 2`, `"link_delay_ms": -1`, "must be >= 0"},
		{`"link_delay_ms": 2`, `"link_delay_ms": 2, "link_method": "carrier-pigeon"`, "link_method"},
		{`"num": "sync/producers=16"`, `"num": "sync/producers=17"`, `no cell "sync/producers=17"`},
		{`"kind": "additive", "plus_rtt": 2`, `"kind": "additive", "target": 1, "plus_rtt": 2`, "additive compares a latency"},
		{`"metric": "msgs_per_sec", "target": 0.7`, `"metric": "msgs_per_sec", "kind": "additive"`, "additive compares a latency"},
		{`"metric": "msgs_per_sec", "target": 0.7`, `"metric": "msgs_per_sec", "target": 0.7, "plus_ms": 1`, "belong to kind additive"},
		{`"metric": "msgs_per_sec", "target": 0.7`, `"metric": "msgs", "target": 0.7`, `unknown metric "msgs"`},
	} {
		text := strings.Replace(replJSON, tc.from, tc.to, 1)
		require.NotEqual(t, replJSON, text, tc.from)
		_, err := loadExp(t, text)
		require.ErrorContains(t, err, tc.want, tc.to)
	}
	nats := strings.Replace(replJSON, `{"label": "sync", "driver": "mem"`, `{"label": "sync", "driver": "nats"`, 1)
	_, err := loadExp(t, nats)
	require.ErrorContains(t, err, "nats driver runs no Samsa cluster")
}

func TestAdditiveComparison(t *testing.T) {
	cells := []CellResult{
		{Cell: Cell{Label: "none"}, Median: Summary{SendP99Us: 3000}},
		{Cell: Cell{Label: "sync"}, Median: Summary{SendP99Us: 4500}, Replication: &Replication{LinkRTTUs: 500}},
		{Cell: Cell{Label: "slow"}, Median: Summary{SendP99Us: 6000}, Replication: &Replication{LinkRTTUs: 500}},
	}
	add := func(num string) Comparison {
		return Comparison{Name: num, Num: num, Den: "none", Metric: "send_p99", Kind: "additive", PlusRTT: 2, PlusMs: 1}
	}
	res := compare([]Comparison{add("sync"), add("slow"), add("none")}, cells)
	require.Len(t, res, 3)
	require.Equal(t, 1500.0, res[0].Value, "num − den")
	require.Equal(t, 2000.0, res[0].Bound, "2 × 500 µs + 1 ms")
	require.Equal(t, 500.0, res[0].RTTUs)
	require.True(t, *res[0].Met)
	require.False(t, *res[1].Met, "3 ms above the no-slave p99 is more than 2 ms")
	require.Nil(t, res[2].Met, "no slave: no round trip to allow for")
	require.Contains(t, res[2].Note, "no link round trip")

	md := (&ExperimentResult{Header: resultfile.Header{Experiment: "x"}, Cells: cells[:2], Comparisons: res[:2]}).Markdown()
	require.Contains(t, md, "| sync (sync − none) | send_p99 | +1.50 ms | ≤ +2.00 ms (2 × RTT 0.500 ms + 1 ms) | yes |")
	require.Contains(t, md, "| slow (slow − none) | send_p99 | +3.00 ms | ≤ +2.00 ms (2 × RTT 0.500 ms + 1 ms) | **no** |")
}

func TestQuickComparisonsLeaveOutCellsNotRun(t *testing.T) {
	e, err := loadExp(t, replJSON)
	require.NoError(t, err)
	cells, err := e.Expand(true)
	require.NoError(t, err)
	cs := quickComparisons(e.Compare, cells, true)
	require.Len(t, cs, 2, "producers=16 is not in the quick form")
	require.Len(t, quickComparisons(e.Compare, cells, false), 3)
}

// fakeProbe returns scripted readings, one per call (the last one
// repeats), and signals each call.
type fakeProbe struct {
	mu       sync.Mutex
	calls    int
	readings []LagReading
	fail     map[int]bool
	call     chan int
}

func (f *fakeProbe) Source() string { return "fake" }

func (f *fakeProbe) Read(context.Context) (LagReading, error) {
	f.mu.Lock()
	n := f.calls
	f.calls++
	f.mu.Unlock()
	if f.call != nil {
		select {
		case f.call <- n:
		default:
		}
	}
	if f.fail[n] {
		return LagReading{}, errors.New("probe failed")
	}
	return f.readings[min(n, len(f.readings)-1)], nil
}

// TestLagSamplerInterpolates: on a fake clock, the handed offset grows
// 1000 bytes a millisecond; a slave's lag is how long ago the handed
// offset passed its acknowledgement, read between the samples around it.
func TestLagSamplerInterpolates(t *testing.T) {
	p := &fakeProbe{readings: []LagReading{
		{Handed: 0},
		{Handed: 5000, Slaves: []SlaveLag{{Slave: "a", Ack: 5000}}},
		{Handed: 10000, Slaves: []SlaveLag{{Slave: "a", Ack: 7500}, {Slave: "b", Ack: 5000}}},
		{},
		{Handed: 15000, Slaves: []SlaveLag{{Slave: "far", Ack: -1, MasterTime: 100 * time.Millisecond}}},
	}, fail: map[int]bool{3: true}}
	s := NewLagSampler(p, 5*time.Millisecond)
	clock := time.Unix(1000, 0)
	s.now = func() time.Time { return clock }
	for range 5 {
		s.sample(context.Background())
		clock = clock.Add(5 * time.Millisecond)
	}
	lag := s.Stop()
	require.Equal(t, "fake", lag.Source)
	require.EqualValues(t, 4, lag.Samples, "the failed reading is no sample")
	require.EqualValues(t, 1, lag.Errors)
	require.EqualValues(t, 4, lag.TimeUs.Count, "one value per slave per sample")
	// caught up: 0; a at 7500, passed 2.5 ms before the third sample;
	// b at 5000, passed 5 ms before it; far is below every mark: the
	// master's own 100 ms.
	require.EqualValues(t, 0, s.timeUs.ValueAtQuantile(10))
	require.InDelta(t, 2500, s.timeUs.ValueAtQuantile(40), 5)
	require.InDelta(t, 5000, s.timeUs.ValueAtQuantile(70), 5)
	require.InDelta(t, 100_000, lag.TimeUs.Max, 100)
	require.InDelta(t, 15001, lag.BehindBytes.Max, 16)
}

func TestLagSamplerRunsUntilStopped(t *testing.T) {
	p := &fakeProbe{readings: []LagReading{{Handed: 42, Slaves: []SlaveLag{{Slave: "a", Ack: 0}}}}, call: make(chan int, 1)}
	s := StartLagSampler(context.Background(), p, time.Millisecond)
	s.SetMeasuring(true)
	deadline := time.After(10 * time.Second)
	for s.samples.Load() < 3 {
		select {
		case <-p.call:
		case <-deadline:
			t.Fatal("the sampler did not sample 3 times in 10s")
		}
	}
	lag := s.Stop()
	require.GreaterOrEqual(t, lag.Samples, int64(3))
	require.EqualValues(t, 42, lag.BehindBytes.P99)
	p.mu.Lock()
	calls := p.calls
	p.mu.Unlock()
	require.LessOrEqual(t, lag.Samples, int64(calls), "no sample after Stop returned")
}

// replDriver is a memDriver whose cluster claims to replicate.
type replDriver struct {
	*memDriver
	probe LagProbe
}

func (d replDriver) Replication() (*Replication, LagProbe) {
	return &Replication{Role: "SYNC_MASTER", Slaves: 1, Link: "loopback", LinkMethod: LinkLoopback, LinkRTTUs: 20}, d.probe
}

func TestRunSamplesReplicationLag(t *testing.T) {
	p := &fakeProbe{readings: []LagReading{{Handed: 4096, Slaves: []SlaveLag{{Slave: "a", Ack: 0, MasterTime: 2 * time.Millisecond}}}}}
	w := Workload{MessageSize: 64, Warmup: 20 * time.Millisecond, Duration: 200 * time.Millisecond, NoConsumers: true,
		ReportInterval: time.Second}
	res, err := Run(context.Background(), replDriver{newMemDriver(), p}, w, Options{Out: &strings.Builder{}})
	require.NoError(t, err)
	require.NotNil(t, res.Replication)
	require.NotNil(t, res.Replication.Lag, "sampled during the measured window")
	require.Positive(t, res.Replication.Lag.Samples)
	s := summarize(res)
	require.Positive(t, s.ReplLagP99Us)
	require.InDelta(t, 4096, s.ReplBehindP99, 8)
}

// Before SetMeasuring(true) the sampler keeps the handed offsets'
// history but records nothing: the first measured sample of a slave
// behind the window's start is still read from that history.
func TestLagSamplerWarmUpKeepsHistory(t *testing.T) {
	p := &fakeProbe{readings: []LagReading{
		{Handed: 0},
		{Handed: 1000, Slaves: []SlaveLag{{Slave: "a", Ack: 0}}},
		{Handed: 2000, Slaves: []SlaveLag{{Slave: "a", Ack: 500, MasterTime: time.Second}}},
	}}
	s := NewLagSampler(p, time.Millisecond)
	s.SetMeasuring(false)
	clock := time.Unix(1000, 0)
	s.now = func() time.Time { return clock }
	for i := range 3 {
		if i == 2 {
			s.SetMeasuring(true)
		}
		s.sample(context.Background())
		clock = clock.Add(time.Millisecond)
	}
	lag := s.Stop()
	require.EqualValues(t, 1, lag.Samples, "warm-up samples are not figures")
	require.InDelta(t, 1500, lag.TimeUs.Max, 5, "500 passed 1.5 ms before the third sample, not the master's 1 s")
}
