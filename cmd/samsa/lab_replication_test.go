package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/loadgen/catchup"
	"github.com/samsamq/samsa/protocol"
)

// A short embedded run of replicated cells: a SYNC_MASTER with one slave
// behind a 0.5 ms link (auto: the proxy on this machine or, where netem
// works, still the proxy, saying why), and a netem cell that must be
// skipped saying netem is not implemented for embedded cells. Only what
// the result holds and how it is labelled is checked, never a timing.
func TestLabReplicatedCellSmoke(t *testing.T) {
	const exp = `{
  "name": "repl-smoke", "kind": "e2e", "repeats": 1,
  "base": {"message_size": 1024, "queues_per_topic": 2, "producers": 2, "consumers": 1, "send_mode": "sync",
           "warmup": "200ms", "duration": "1s", "report_interval": "1s", "drain": "5s"},
  "cells": [
    {"label": "none", "driver": "samsa", "cluster": {"flush": "async"}},
    {"label": "sync-0.5ms", "driver": "samsa", "cluster": {"flush": "async", "replication": "sync", "link_delay_ms": 0.5}},
    {"label": "netem", "driver": "samsa", "cluster": {"flush": "async", "replication": "async", "link_delay_ms": 1, "link_method": "netem"}}
  ],
  "compare": [{"name": "p99", "num": "sync-0.5ms", "den": "none", "metric": "send_p99", "kind": "additive", "plus_rtt": 2, "plus_ms": 1}]
}`
	dir := t.TempDir()
	p := filepath.Join(dir, "e.json")
	require.NoError(t, os.WriteFile(p, []byte(exp), 0o644))
	e, err := loadgen.LoadExperiment(p)
	require.NoError(t, err)
	lab := labSettings{embedded: true, dataDir: filepath.Join(dir, "data")}
	var progress bytes.Buffer
	res, err := loadgen.RunExperiment(context.Background(), e, false, lab.driver, &progress)
	require.NoError(t, err, progress.String())
	require.Len(t, res.Cells, 3)

	none, sync, netem := res.Cells[0], res.Cells[1], res.Cells[2]
	require.Empty(t, none.Skipped)
	require.Nil(t, none.Replication, "no slave, no replication")
	require.Equal(t, "process-crash", none.Durability)

	require.Empty(t, sync.Skipped, progress.String())
	require.Len(t, sync.Runs, 1)
	require.Positive(t, sync.Median.MsgsPerSec)
	require.Zero(t, sync.Median.Errors)
	rp := sync.Replication
	require.NotNil(t, rp)
	require.Equal(t, "SYNC_MASTER", rp.Role)
	require.Equal(t, 1, rp.Slaves)
	require.Equal(t, loadgen.LinkProxy, rp.LinkMethod)
	require.Equal(t, "500µs one-way (proxy)", rp.Link)
	require.Contains(t, rp.LinkWhy, "netem", "auto says why the proxy ran")
	require.Positive(t, rp.LinkRTTUs)
	lag := sync.Runs[0].Replication.Lag
	require.NotNil(t, lag, "lag sampled during the measured window")
	require.Positive(t, lag.Samples)
	require.Equal(t, "process-crash", sync.Durability)

	require.Contains(t, netem.Skipped, "not implemented for embedded cells")

	require.Len(t, res.Comparisons, 1)
	require.Positive(t, res.Comparisons[0].RTTUs)
	require.NotNil(t, res.Comparisons[0].Met)

	md := res.Markdown()
	require.Contains(t, md, "| sync-0.5ms | async | process-crash + slave | SYNC_MASTER ×1 | 500µs one-way (proxy) |")
	require.Contains(t, md, "proxy: auto: netem")
	entries, err := os.ReadDir(lab.dataDir)
	require.NoError(t, err)
	require.Empty(t, entries, "cell data dirs removed")
}

// The catch-up experiment on an embedded master, tiny: the slave added
// after the fill copies it all and the result is filled in.
func TestLabCatchupSmoke(t *testing.T) {
	dir := t.TempDir()
	e := &catchup.Experiment{Spec: resultfile.Spec{Name: "catchup-smoke", Kind: catchup.Kind}, Target: 0.8,
		Forms: resultfile.Forms[catchup.Settings, *catchup.Settings]{Base: catchup.Settings{FillBytes: 2 << 20, DiskBlock: 32 << 10, DiskDuration: resultfile.Duration(100 * time.Millisecond)}}}
	res, err := catchup.RunExperiment(context.Background(), e, catchup.Options{DiskDir: dir,
		NewTarget: func(context.Context) (catchup.Target, error) { return newCatchupTarget(dir) }})
	require.NoError(t, err)
	r := res.Median
	require.GreaterOrEqual(t, r.FillBytes, int64(2<<20))
	require.Positive(t, r.CatchUpMBps)
	require.Positive(t, r.DiskMBps)
	require.Equal(t, "ASYNC_FLUSH, durability process-crash", r.Slave)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the master's, the slave's and the disk's files removed")
}

func TestParseHAStats(t *testing.T) {
	st := []protocol.Stat{{Name: "ha_role", Value: "SYNC_MASTER"}, {Name: "ha_slaves", Value: "2"},
		{Name: "slave:127.0.0.1:5000:ack_offset", Value: "900"}, {Name: "slave:127.0.0.1:5000:behind_bytes", Value: "100"},
		{Name: "slave:127.0.0.1:5000:lag_ms", Value: "100"}, {Name: "slave:127.0.0.1:5000:in_sync", Value: "1"},
		{Name: "slave:[::1]:6000:ack_offset", Value: "1000"}, {Name: "slave:[::1]:6000:behind_bytes", Value: "0"},
		{Name: "slave:[::1]:6000:lag_ms", Value: "0"}}
	r, err := parseHAStats(st)
	require.NoError(t, err)
	require.EqualValues(t, 1000, r.Handed)
	require.Equal(t, []loadgen.SlaveLag{{Slave: "127.0.0.1:5000", Ack: 900, MasterTime: 100 * time.Millisecond},
		{Slave: "[::1]:6000", Ack: 1000}}, r.Slaves)
	_, err = parseHAStats(st[:2])
	require.ErrorContains(t, err, "no slave lines")
	_, err = parseHAStats([]protocol.Stat{{Name: "slave:a:1:ack_offset", Value: "x"}})
	require.ErrorContains(t, err, "ack_offset")
}

// A live cluster (here a dev cluster with a slave, driven by name-server
// address): the lab sets nothing, reads the master's stats ha, and the
// result says the link is the cluster's own.
func TestLabLiveClusterLag(t *testing.T) {
	dev, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Slaves: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Broker: broker.Config{BrokerRole: broker.AsyncMaster}})
	require.NoError(t, err)
	defer dev.Close()
	require.NoError(t, dev.WaitSlavesInSync(context.Background(), slavesInSyncTimeout))
	lab := labSettings{namesrv: dev.NamesrvAddr()}
	w := loadgen.Workload{MessageSize: 256, Producers: 2, NoConsumers: true, Warmup: 100 * time.Millisecond,
		Duration: 500 * time.Millisecond, ReportInterval: time.Second}
	d, err := lab.driver(context.Background(), loadgen.Cell{Label: "live", Driver: "samsa", Workload: w})
	require.NoError(t, err)
	defer d.Close()
	res, err := loadgen.Run(context.Background(), d, w, loadgen.Options{Out: io.Discard})
	require.NoError(t, err)
	rp := res.Replication
	require.NotNil(t, rp, "the cluster's master reports a slave")
	require.Equal(t, "ASYNC_MASTER", rp.Role)
	require.Equal(t, loadgen.LinkLive, rp.LinkMethod)
	require.NotNil(t, rp.Lag)
	require.Positive(t, rp.Lag.Samples)
	require.Contains(t, rp.Lag.Source, "stats ha of ")
}
