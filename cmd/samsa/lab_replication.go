package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/loadgen/linkdelay"
)

// How the lab's embedded replication cells run: the master and its slaves
// in this process (devcluster.Start with Slaves), the slaves reaching the
// master's HA port straight over loopback, or through a delaying
// linkdelay.Proxy that devcluster.Options.SlaveHAAddr puts in between.
// netem delays the processes of a network namespace; an embedded cell is
// one process with the load generator, so netem is not implemented for
// it: link_method netem skips the cell saying so, and auto takes the
// proxy and says why.

// linkPings is how many 8-byte pings measure a cell's link round trip.
const linkPings = 100

// slavesInSyncTimeout bounds the wait for a cell's slaves to be in sync
// before its load starts (a SYNC_MASTER answers SLAVE_NOT_AVAILABLE
// until one is).
const slavesInSyncTimeout = 30 * time.Second

// errNetemEmbedded is why a netem cell does not run embedded.
var errNetemEmbedded = errors.New("link_method netem: not implemented for embedded cells " +
	"(netem delays the processes of a network namespace; the embedded cluster runs inside the load generator's process): " +
	"use link_method proxy, or auto")

// chooseLink is the method that will make c's link, and why: loopback
// without a delay; the proxy when asked for, or for auto (netem being
// unavailable here, or not implemented for embedded cells). Never a
// silent fallback: the reason goes into the result.
func chooseLink(c loadgen.Cluster) (method, why string, err error) {
	if !c.Delayed() {
		return loadgen.LinkLoopback, "", nil
	}
	switch c.LinkMethod {
	case loadgen.LinkNetem:
		return "", "", errNetemEmbedded
	case loadgen.LinkProxy:
		return loadgen.LinkProxy, "the experiment asks for the proxy", nil
	}
	if ok, reason := linkdelay.Available(); !ok {
		return loadgen.LinkProxy, "auto: netem unavailable here: " + reason, nil
	}
	return loadgen.LinkProxy, "auto: netem is available here but not implemented for embedded cells (the cluster runs inside this process)", nil
}

// replicaSide is a replicated cell's link and what the run records of
// it; it closes the link's proxies after the cluster.
type replicaSide struct {
	info    loadgen.Replication
	master  *broker.Broker
	proxies []*linkdelay.Proxy
}

// startReplicated starts c's cluster with its slaves behind the chosen
// link, measures the link's round trip and waits until every slave is in
// sync.
func (l labSettings) startReplicated(ctx context.Context, c loadgen.Cell, cfg broker.Config, logger *slog.Logger) (*devcluster.Cluster, *replicaSide, error) {
	method, why, err := chooseLink(c.Cluster)
	if err != nil {
		return nil, nil, err
	}
	cfg.BrokerRole = broker.AsyncMaster
	if c.Cluster.Replication == loadgen.ReplicationSync {
		cfg.BrokerRole = broker.SyncMaster
	}
	cfg.HASlaveAckFlushed = c.Cluster.SlaveAckFlushed // the slaves copy the master's settings
	side := &replicaSide{info: loadgen.Replication{Role: string(cfg.BrokerRole), Slaves: c.Cluster.Slaves,
		Link: "loopback", LinkMethod: method, LinkWhy: why}}
	opts := devcluster.Options{Dir: l.cellDir("samsa"), Broker: cfg, Logger: logger, Slaves: c.Cluster.Slaves}
	delay := c.Cluster.LinkDelay()
	if method == loadgen.LinkProxy {
		side.info.Link = fmt.Sprintf("%v one-way (%s)", delay, method)
		opts.SlaveHAAddr = func(masterHA string) (string, error) {
			p, err := linkdelay.NewProxy("127.0.0.1:0", masterHA, delay)
			if err != nil {
				return "", err
			}
			side.proxies = append(side.proxies, p)
			return p.Addr(), nil
		}
	}
	rtt, err := linkRTT(ctx, method, delay)
	if err != nil {
		return nil, nil, fmt.Errorf("link round trip: %w", err)
	}
	side.info.LinkRTTUs = float64(rtt.Nanoseconds()) / 1e3
	dev, err := devcluster.Start(opts)
	if err != nil {
		side.close()
		return nil, nil, fmt.Errorf("embedded cluster: %w", err)
	}
	side.master = dev.Broker
	if err := dev.WaitSlavesInSync(ctx, slavesInSyncTimeout); err != nil {
		err = errors.Join(err, dev.Close())
		side.close()
		return nil, nil, err
	}
	return dev, side, nil
}

// linkRTT is the median round trip of linkPings pings to an echo on
// loopback, through a proxy of the given delay for LinkProxy: the same
// kind of link the slaves use, not the same connection.
func linkRTT(ctx context.Context, method string, oneWay time.Duration) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	echoed := make(chan struct{})
	go func() { defer close(echoed); linkdelay.Echo(ln) }()
	defer func() { _ = ln.Close(); <-echoed }() // ends the echo
	addr := ln.Addr().String()
	if method == loadgen.LinkProxy {
		p, err := linkdelay.NewProxy("127.0.0.1:0", addr, oneWay)
		if err != nil {
			return 0, err
		}
		defer func() { _ = p.Close() }() // only its listener's close: the pings are done
		addr = p.Addr()
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rtts, err := linkdelay.Ping(ctx, addr, linkPings)
	if err != nil {
		return 0, err
	}
	return linkdelay.Median(rtts), nil
}

func (s *replicaSide) close() {
	for _, p := range s.proxies {
		_ = p.Close()
	}
}

// Replication makes withCluster a loadgen.ReplicatedDriver: the cell's
// link and a probe of the master's per-slave lag (nil without slaves).
func (w *withCluster) Replication() (*loadgen.Replication, loadgen.LagProbe) {
	if w.repl == nil {
		return nil, nil
	}
	info := w.repl.info
	return &info, masterLagProbe{w.repl.master}
}

// masterLagProbe reads an embedded master's Broker.Replication().Slaves()
// (Source keeps the name the result files record).
type masterLagProbe struct{ b *broker.Broker }

func (masterLagProbe) Source() string { return "embedded: the master's Broker.Slaves()" }

func (p masterLagProbe) Read(context.Context) (loadgen.LagReading, error) {
	// The handed offset first: a slave's acknowledgement read after it
	// may be past it (then caught up), never behind by more than it is.
	r := loadgen.LagReading{Handed: p.b.Store().HandedOffset()}
	for _, s := range p.b.Replication().Slaves() {
		r.Slaves = append(r.Slaves, loadgen.SlaveLag{Slave: s.Addr, Ack: s.AckOffset, MasterTime: s.LagTime})
	}
	return r, nil
}
