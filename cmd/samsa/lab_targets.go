package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/loadgen/backlog"
	"github.com/samsamq/samsa/loadgen/catchup"
	"github.com/samsamq/samsa/loadgen/samsadriver"
)

// The embedded clusters the backlog-drain and replication-catchup kinds
// run on (labKinds), each in a fresh directory under the run's data dir.

// backlogTarget is an embedded cluster in a fresh directory under the
// run's, with our driver.
type backlogTarget struct {
	w *withCluster
}

func newBacklogTarget(parent string, to backlog.TargetOptions) (backlog.Target, error) {
	cfg := broker.Config{FlushDiskType: broker.AsyncFlush, DiskMaxUsedSpaceRatio: backlogDiskRatio, DirectColdReads: to.DirectColdReads,
		TransferMsgByHeap: to.TransferMsgByHeap}
	if to.Flush == "sync" {
		cfg.FlushDiskType = broker.SyncFlush
	}
	dir, err := os.MkdirTemp(parent, "backlog-")
	if err != nil {
		return nil, err
	}
	dev, err := devcluster.Start(devcluster.Options{Dir: dir, Broker: cfg, Logger: slog.New(slog.DiscardHandler)})
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

// catchupTarget is an embedded master (no slave until StartSlave) in a
// fresh directory under the run's.
type catchupTarget struct {
	dir string
	dev *devcluster.Cluster
}

func newCatchupTarget(parent string) (catchup.Target, error) {
	dir, err := os.MkdirTemp(parent, "catchup-")
	if err != nil {
		return nil, err
	}
	cfg := broker.Config{BrokerRole: broker.AsyncMaster, FlushDiskType: broker.AsyncFlush}
	dev, err := devcluster.Start(devcluster.Options{Dir: filepath.Join(dir, "master"), Broker: cfg,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("embedded master: %w", err), os.RemoveAll(dir))
	}
	return &catchupTarget{dir: dir, dev: dev}, nil
}

// Fill writes the master's log up to n bytes over 8 queues of one topic,
// straight into its store (the fill's speed is not measured, so it skips
// the network), and flushes it before the slave starts: master and slave
// share this machine's one disk, where in production they do not, and the
// master's write-back of the fill would otherwise be timed as the slave's
// catch-up (and the slave's first fsyncs queue behind it in the file
// system's journal).
func (t *catchupTarget) Fill(ctx context.Context, n int64, size int) (int64, error) {
	st := t.dev.Broker.Store()
	if _, _, err := t.dev.Fill(ctx, devcluster.FillOptions{Topic: "catchup", Queues: 8, Bytes: n - st.HandedOffset(),
		Size: size, Tag: "catchup"}); err != nil {
		return 0, err
	}
	return st.HandedOffset(), nil
}

func (t *catchupTarget) StartSlave() (catchup.Slave, error) {
	s, err := t.dev.AddSlave(filepath.Join(t.dir, "slave"))
	if err != nil {
		return nil, err
	}
	return catchupSlave{s}, nil
}

func (t *catchupTarget) Close() error {
	return errors.Join(t.dev.Close(), os.RemoveAll(t.dir))
}

type catchupSlave struct{ b *broker.Broker }

func (s catchupSlave) Offset() int64 { return s.b.Store().WrittenOffset() }

func (s catchupSlave) Describe() string {
	o := s.b.Store().Options()
	return fmt.Sprintf("%s, durability %s", s.b.Config().FlushDiskType, o.Durability())
}
