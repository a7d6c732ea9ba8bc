package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/loadgen/catchup"
)

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
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
