package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/samsamq/samsa/bench"
	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/loadgen/backlog"
	"github.com/samsamq/samsa/loadgen/catchup"
	"github.com/samsamq/samsa/loadgen/chaos"
	"github.com/samsamq/samsa/loadgen/durability"
	"github.com/samsamq/samsa/loadgen/grpcdriver"
	"github.com/samsamq/samsa/loadgen/kafkadriver"
	"github.com/samsamq/samsa/loadgen/metascale"
	"github.com/samsamq/samsa/loadgen/natsdriver"
	"github.com/samsamq/samsa/loadgen/popchurn"
	"github.com/samsamq/samsa/loadgen/rabbitdriver"
	"github.com/samsamq/samsa/loadgen/redisdriver"
	"github.com/samsamq/samsa/loadgen/rmqdriver"
	"github.com/samsamq/samsa/loadgen/samsadriver"
)

// labKinds is the lab's one registry of experiment kinds, by the "kind"
// their files name, each with what it needs of this binary: the driver
// factory (its cluster settings from ls), the embedded clusters of the
// backlog and catch-up runs, and, for bench run, prof's per-cell profile.
func labKinds(ls labSettings, prof profileFlags) lab.Kinds {
	var profile func(experiment, cell string) func()
	if prof.kind != "" {
		profile = func(experiment, cell string) func() {
			stop, err := bench.StartProfile(prof.kind, filepath.Join(prof.dir, experiment, cell))
			if err != nil {
				return func() {}
			}
			return func() { stop() }
		}
	}
	kill := durability.LabKind()
	return lab.Kinds{
		"storage":                  bench.LabKind(profile),
		"e2e":                      loadgen.LabKind(ls.driver),
		durability.Kind:            kill,
		durability.ReplicationKind: kill,
		chaos.Kind:                 chaos.LabKind(),
		backlog.Kind:               backlog.LabKind(newBacklogTarget),
		catchup.Kind:               catchup.LabKind(newCatchupTarget),
		metascale.Kind:             metascale.LabKind(newMetaTarget),
		// pop-vs-push: a mode's cluster is metadata-scale's embedded one
		popchurn.Kind: popchurn.LabKind(func(dir string) (popchurn.Target, error) { return newMetaTarget(dir) }),
	}
}

// labSettings say where loadgen's drivers find (or start) their cluster.
type labSettings struct {
	namesrv    string // live cluster's name server(s), ;-separated
	embedded   bool   // start an embedded cluster per cell (samsa dev)
	brokerAddr string
	natsURL    string
	dataDir    string // parent of embedded clusters' data dirs; default a temp dir
	backend    string
	// client carries the TLS and ACL settings for our driver's clients
	// (a live cluster's; embedded clusters run without either); its TLS
	// is the kafka driver's too.
	client client.ClientOptions
	// kafkaBrokers and kafkaSASL are the kafka driver's cluster and login.
	kafkaBrokers []string
	kafkaSASL    kafkadriver.SASL
}

// benchDir is the directory whose disk the run measures.
func (l labSettings) benchDir() string {
	if l.dataDir != "" {
		return l.dataDir
	}
	return os.TempDir()
}

// driver makes the driver a cell names, with its cluster: it is a
// loadgen.DriverFactory.
func (l labSettings) driver(ctx context.Context, c loadgen.Cell) (loadgen.Driver, error) {
	switch c.Driver {
	case "nats":
		o := natsdriver.Options{URL: l.natsURL, Sync: c.Cluster.Flush == "sync", StreamPerQueue: c.Cluster.StreamPerQueue}
		if l.natsURL == "" {
			// Each cell's JetStream store, removed with the driver (63
			// stores, 18 GB, were left behind before).
			o.StoreDir, o.RemoveStoreDir = l.cellDir("nats"), true
		}
		return natsdriver.New(o)
	case "redis": // appendfsync always for a sync cell
		dir := l.cellDir("redis")
		return withDir(dir)(redisdriver.New(redisdriver.Options{Fsync: bySync(c, "always", "everysec"), Dir: dir}))
	case "rabbitmq": // quorum queues for a sync cell
		dir := l.cellDir("rabbitmq")
		return withDir(dir)(rabbitdriver.New(rabbitdriver.Options{Queue: bySync(c, "quorum", "stream"), Dir: dir}))
	case "kafka": // a live cluster only: the lab starts no Kafka
		if len(l.kafkaBrokers) == 0 {
			return nil, errors.New("the kafka driver drives a live cluster: give its brokers, --brokers host:9092,...")
		}
		return kafkadriver.New(kafkadriver.Options{Brokers: l.kafkaBrokers, Settings: c.Cluster.Kafka, SASL: l.kafkaSASL, TLS: l.client.TLS})
	case "samsa", "rocketmq", "grpc":
	default:
		return nil, fmt.Errorf("unknown driver %q (samsa, rocketmq, grpc, nats, redis, rabbitmq, kafka)", c.Driver)
	}
	var dev *devcluster.Cluster
	var repl *replicaSide
	nameServers := client.ParseNameServers(l.namesrv)
	brokerAddr := l.brokerAddr
	if l.embedded {
		cfg := broker.Config{}
		switch c.Cluster.Flush {
		case "sync":
			cfg.FlushDiskType = broker.SyncFlush
		case "async", "":
			cfg.FlushDiskType = broker.AsyncFlush
		default:
			return nil, fmt.Errorf("cluster flush %q: want sync or async", c.Cluster.Flush)
		}
		cfg.StoreBackend = c.Cluster.Backend
		if cfg.StoreBackend == "" {
			cfg.StoreBackend = l.backend
		}
		cfg.GroupCommitMaxBatchBytes = c.Cluster.MaxBatchBytes
		quiet := slog.New(slog.DiscardHandler)
		var err error
		if c.Cluster.Replicated() {
			dev, repl, err = l.startReplicated(ctx, c, cfg, quiet)
		} else if dev, err = devcluster.Start(devcluster.Options{Dir: l.cellDir("samsa"), Broker: cfg, Logger: quiet}); err != nil {
			err = fmt.Errorf("embedded cluster: %w", err)
		}
		if err != nil {
			return nil, err
		}
		nameServers, brokerAddr = []string{dev.NamesrvAddr()}, dev.BrokerAddr()
	} else if !l.embedded && c.Cluster.Flush != "" {
		fmt.Fprintf(os.Stderr, "loadgen: live cluster: the cell's flush %q is the cluster's business, not set here\n", c.Cluster.Flush)
	}
	var d loadgen.Driver
	var err error
	switch c.Driver {
	case "samsa":
		o := samsadriver.Options{NameServers: nameServers}
		if !l.embedded {
			o.Credentials, o.TLS = l.client.Credentials, l.client.TLS
		}
		d, err = samsadriver.New(o)
	case "grpc": // a proxy in this process in front of the cluster (plain, no ACL)
		d, err = grpcdriver.New(grpcdriver.Options{NameServers: nameServers})
	default:
		if brokerAddr == "" {
			err = errors.New("the rocketmq driver creates topics on --broker ADDR")
		} else {
			d, err = rmqdriver.New(rmqdriver.Options{NameServers: nameServers, BrokerAddr: brokerAddr})
		}
	}
	if err != nil {
		if dev != nil {
			err = errors.Join(err, dev.Close())
		}
		if repl != nil {
			repl.close()
		}
		return nil, err
	}
	if dev == nil {
		return l.liveReplicated(ctx, d, nameServers), nil
	}
	return &withCluster{Driver: d, dev: dev, repl: repl}, nil
}

// bySync is sync for a cell whose cluster flushes sync, else async.
func bySync(c loadgen.Cell, sync, async string) string {
	if c.Cluster.Flush == "sync" {
		return sync
	}
	return async
}

// cellDir is a fresh data dir for one cell's cluster under dataDir, or ""
// (a temp dir of the server's own) when no dataDir was given.
func (l labSettings) cellDir(kind string) string {
	if l.dataDir == "" {
		return ""
	}
	if err := os.MkdirAll(l.dataDir, 0o755); err != nil {
		return ""
	}
	d, err := os.MkdirTemp(l.dataDir, kind+"-")
	if err != nil {
		return ""
	}
	return d
}

// withCluster closes the embedded cluster with the driver.
type withCluster struct {
	loadgen.Driver
	dev  *devcluster.Cluster
	repl *replicaSide // nil without slaves
}

func (w *withCluster) Describe() map[string]any {
	m := w.Driver.Describe()
	m["cluster"] = "embedded (samsa dev): " + strings.TrimSpace(w.dev.Broker.Config().String())
	so := w.dev.Broker.Store().Options()
	m["durability"], m["durability_note"] = so.Durability().String(), so.DurabilityNote()
	return m
}

// ServerProcess is the embedded cluster's process: this one, so open
// files and RSS include the loadgen and its clients.
func (w *withCluster) ServerProcess() (loadgen.ServerProcess, bool) {
	return loadgen.ServerProcess{Self: true, Note: "embedded name server and broker plus the loadgen and its clients"}, true
}

func (w *withCluster) Close() error {
	err := w.Driver.Close()
	dir := w.dev.Dir
	err = errors.Join(err, w.dev.Close())
	if w.repl != nil {
		w.repl.close()
	}
	if strings.HasPrefix(filepath.Base(dir), "samsa-") {
		_ = os.RemoveAll(dir)
	}
	return err
}

// withDir removes a peer's cell directory (cellDir's, under --dir) when
// its driver closes, or at once when the driver did not start: the peers
// leave their files (AOF, RabbitMQ's node) in the directory they are given.
func withDir(dir string) func(loadgen.Driver, error) (loadgen.Driver, error) {
	return func(d loadgen.Driver, err error) (loadgen.Driver, error) {
		if err != nil || d == nil {
			if dir != "" {
				_ = os.RemoveAll(dir)
			}
			return nil, err
		}
		if dir == "" {
			return d, nil
		}
		return &dirDriver{Driver: d, dir: dir}, nil
	}
}

type dirDriver struct {
	loadgen.Driver
	dir string
}

// ServerProcess forwards to the peer's driver.
func (d *dirDriver) ServerProcess() (loadgen.ServerProcess, bool) {
	if sd, ok := d.Driver.(loadgen.ServerProcessDriver); ok {
		return sd.ServerProcess()
	}
	return loadgen.ServerProcess{}, false
}

func (d *dirDriver) Close() error {
	err := d.Driver.Close()
	return errors.Join(err, os.RemoveAll(d.dir))
}
