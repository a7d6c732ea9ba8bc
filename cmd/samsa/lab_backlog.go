package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/loadgen/backlog"
	"github.com/samsamq/samsa/loadgen/samsadriver"
)

// backlogTarget is an embedded cluster in a fresh directory under the
// run's, with our driver.
type backlogTarget struct {
	w *withCluster
}

func newBacklogTarget(parent string, to backlog.TargetOptions) (backlog.Target, error) {
	cfg := broker.Config{FlushDiskType: broker.AsyncFlush, DiskMaxUsedSpaceRatio: backlogDiskRatio, DirectColdReads: to.DirectColdReads}
	if to.Flush == "sync" {
		cfg.FlushDiskType = broker.SyncFlush
	}
	dir, err := os.MkdirTemp(parent, "backlog-")
	if err != nil {
		return nil, err
	}
	dev, err := devcluster.Start(devcluster.Options{Dir: dir, Broker: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("embedded cluster: %w", err), os.RemoveAll(dir))
	}
	d, err := samsadriver.New(samsadriver.Options{NameServers: []string{dev.NamesrvAddr()}})
	if err != nil {
		return nil, errors.Join(err, dev.Close(), os.RemoveAll(dir))
	}
	return &backlogTarget{w: &withCluster{Driver: d, dev: dev}}, nil
}

// backlogDiskRatio is the broker's diskMaxUsedSpaceRatio for the backlog
// (the highest it takes): at the default 75 a shared disk's other tenants
// can make retention delete the backlog before the consumers read it.
const backlogDiskRatio = 95

func (t *backlogTarget) Driver() loadgen.Driver { return t.w }

func (t *backlogTarget) StoreDir() string { return t.w.dev.Dir }

// ReadCache implements backlog.ReadCacheCounter.
func (t *backlogTarget) ReadCache() (hits, misses, direct int64) {
	m := t.w.dev.Broker.Store().Metrics()
	return m.ReadCacheHits, m.ReadCacheMisses, m.ReadCacheDirect
}

func (t *backlogTarget) Describe() string {
	o := t.w.dev.Broker.Store().Options()
	c := t.w.dev.Broker.Config()
	return fmt.Sprintf("%s, durability %s, diskMaxUsedSpaceRatio %d", c.FlushDiskType, o.Durability(), c.DiskMaxUsedSpaceRatio)
}

func (t *backlogTarget) Close() error {
	dir := t.w.dev.Dir
	return errors.Join(t.w.Close(), os.RemoveAll(dir))
}

// Fill writes the backlog straight into the store (the fill is not
// measured, so it skips the network) and flushes it: the backlog is on
// disk before it is dropped from the page cache.
func (t *backlogTarget) Fill(ctx context.Context, topic string, queues int, n int64, size int) (msgs, bytes int64, err error) {
	return t.w.dev.Fill(ctx, devcluster.FillOptions{Topic: topic, Queues: queues, Bytes: n, Size: size, Tag: "backlog"})
}
