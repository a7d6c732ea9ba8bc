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
	"github.com/samsamq/samsa/loadgen/metascale"
)

// metaTarget is the metadata-scale experiment's cluster: an embedded name
// server and broker (async flush) in a fresh directory.
type metaTarget struct {
	dir string
	dev *devcluster.Cluster
}

func newMetaTarget(parent string) (metascale.Target, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "metadata-")
	if err != nil {
		return nil, err
	}
	cfg := broker.Config{FlushDiskType: broker.AsyncFlush}
	dev, err := devcluster.Start(devcluster.Options{Dir: filepath.Join(dir, "cluster"), Broker: cfg,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("embedded cluster: %w", err), os.RemoveAll(dir))
	}
	return &metaTarget{dir: dir, dev: dev}, nil
}

func (t *metaTarget) NamesrvAddr() string { return t.dev.NamesrvAddr() }
func (t *metaTarget) BrokerAddr() string  { return t.dev.BrokerAddr() }

// RestartBroker closes the broker and starts one on its config and data:
// Start returns once the topic table is loaded and registered.
func (t *metaTarget) RestartBroker(context.Context) error {
	cfg := t.dev.Broker.Config().Clone()
	if err := t.dev.Broker.Close(); err != nil {
		return err
	}
	b, err := broker.New(cfg)
	if err == nil {
		if err = b.Start(); err != nil {
			err = errors.Join(err, b.Close())
		}
	}
	if err != nil {
		return err
	}
	t.dev.Broker = b
	return nil
}

func (t *metaTarget) RSSMB() float64 {
	st := loadgen.ReadServerStats(loadgen.ServerProcess{Self: true})
	return float64(st.RSSBytes) / (1 << 20)
}

func (t *metaTarget) Close() error {
	return errors.Join(t.dev.Close(), os.RemoveAll(t.dir))
}
