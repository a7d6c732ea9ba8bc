package raftctl

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/samsamq/samsa/controller"
)

// ErrNotLeader: this replica is not the Raft leader (or not yet ready to
// lead); a *NotLeaderError says who is.
var ErrNotLeader = errors.New("raftctl: not the controller leader")

// ErrClosed: the replica was closed.
var ErrClosed = errors.New("raftctl: closed")

// NotLeaderError names the leader as this replica knows it (empty when it
// knows none, e.g. during a Raft election).
type NotLeaderError struct {
	LeaderID   string
	LeaderAddr string // the leader's server for brokers (Peer.RPCAddr)
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "raftctl: not the controller leader; no leader known"
	}
	return fmt.Sprintf("raftctl: not the controller leader; leader is %s at %s", e.LeaderID, e.LeaderAddr)
}

func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// Node is one controller replica: hashicorp/raft (bolt log and stable
// store, file snapshots, TCP transport, all under DataDir) replicating a
// controller.Machine, the leader's tick loop, and the server for brokers.
// Its methods are safe for concurrent use.
type Node struct {
	opts  Options
	log   *slog.Logger
	self  Peer
	fsm   *fsm
	raft  *raft.Raft
	store *raftboltdb.BoltStore
	srv   *server

	// ready: this replica leads, has applied every entry of earlier terms
	// (a barrier), and so may answer heartbeats from its own state.
	ready atomic.Bool
	// readyTerm is the term ready was set for.
	readyTerm atomic.Uint64

	stop    chan struct{}
	wg      sync.WaitGroup
	closing sync.Once
	closed  atomic.Bool
}

// Open starts a replica: it opens (or creates) DataDir, bootstraps the
// peer set if DataDir holds no Raft state, starts Raft, the tick loop and
// the server. On error nothing is left open.
func Open(opts Options) (n *Node, err error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		closeListeners(opts)
		return nil, err
	}
	self, _ := opts.self()
	n = &Node{opts: opts, self: self, stop: make(chan struct{}),
		log: opts.Logger.With("component", "controller", "id", opts.ID)}
	m, err := controller.New(opts.Controller)
	if err != nil {
		closeListeners(opts)
		return nil, err
	}
	n.fsm = &fsm{now: opts.Now, log: n.log}
	n.fsm.mu.m = m

	var cleanup []func() error
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				if cerr := cleanup[i](); cerr != nil {
					err = errors.Join(err, fmt.Errorf("raftctl: clean up after a failed open: %w", cerr))
				}
			}
		}
	}()
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		closeListeners(opts)
		return nil, fmt.Errorf("raftctl: data dir: %w", err)
	}
	store, err := raftboltdb.NewBoltStore(filepath.Join(opts.DataDir, "raft.db"))
	if err != nil {
		closeListeners(opts)
		return nil, fmt.Errorf("raftctl: open log store: %w", err)
	}
	n.store = store
	cleanup = append(cleanup, store.Close)
	ts := timedStore{BoltStore: store, slow: opts.SlowThreshold, log: n.log}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft-" + opts.ID, Level: hclog.LevelFromString(opts.RaftLogLevel), Output: opts.RaftLogOutput})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(opts.DataDir, opts.SnapshotRetain, hlog)
	if err != nil {
		closeListeners(opts)
		return nil, fmt.Errorf("raftctl: open snapshot store: %w", err)
	}
	rln := opts.RaftListener
	if rln == nil {
		if rln, err = net.Listen("tcp", self.RaftAddr); err != nil {
			closeListeners(opts)
			return nil, fmt.Errorf("raftctl: raft listen: %w", err)
		}
	}
	trans := raft.NewNetworkTransportWithLogger(streamLayer{Listener: rln, advertise: peerAddr(self.RaftAddr)}, 3, 10*time.Second, hlog)
	cleanup = append(cleanup, trans.Close)
	if err := n.startRaft(RaftParts{Transport: trans, Logs: ts, Stable: ts, Snapshots: snaps}, hlog); err != nil {
		closeListeners(opts)
		return nil, err
	}
	cleanup = append(cleanup, func() error { return n.raft.Shutdown().Error() })

	n.srv, err = newServer(n, opts)
	if err != nil {
		return nil, err
	}
	n.wg.Add(1)
	go n.tickLoop()
	n.log.Info("controller replica started", "options", opts.String(), "rpc", n.srv.addr(), "raft", rln.Addr().String())
	return n, nil
}

// startRaft configures hashicorp/raft from the options, bootstraps the
// peer set on parts holding no Raft state, and starts Raft over n.fsm.
func (n *Node) startRaft(parts RaftParts, hlog hclog.Logger) error {
	opts := n.opts
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(opts.ID)
	rc.HeartbeatTimeout = opts.RaftHeartbeatTimeout
	rc.ElectionTimeout = opts.RaftElectionTimeout
	rc.LeaderLeaseTimeout = min(rc.LeaderLeaseTimeout, opts.RaftHeartbeatTimeout/2)
	rc.SnapshotThreshold = opts.SnapshotThreshold
	rc.SnapshotInterval = opts.SnapshotInterval
	rc.TrailingLogs = opts.TrailingLogs
	rc.Logger = hlog
	if err := raft.ValidateConfig(rc); err != nil {
		return fmt.Errorf("raftctl: %w", err)
	}
	has, err := raft.HasExistingState(parts.Logs, parts.Stable, parts.Snapshots)
	if err != nil {
		return fmt.Errorf("raftctl: %w", err)
	}
	if !has {
		var conf raft.Configuration
		for _, p := range opts.Peers {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		}
		if err := raft.BootstrapCluster(rc, parts.Logs, parts.Stable, parts.Snapshots, parts.Transport, conf); err != nil {
			return fmt.Errorf("raftctl: bootstrap: %w", err)
		}
		n.log.Info("bootstrapped", "peers", FormatPeers(opts.Peers))
	}
	r, err := raft.NewRaft(rc, n.fsm, parts.Logs, parts.Stable, parts.Snapshots, parts.Transport)
	if err != nil {
		return fmt.Errorf("raftctl: start raft: %w", err)
	}
	n.raft = r
	if has {
		n.warnIfPeersDiffer()
	}
	return nil
}

// closeListeners closes the listeners a failed Open was given: nothing
// was served on them, so a Close error has nothing to report.
func closeListeners(o Options) {
	if o.RaftListener != nil {
		_ = o.RaftListener.Close()
	}
	if o.Listener != nil {
		_ = o.Listener.Close()
	}
}

// Addr is the address of the server for brokers and tools ("" under
// OpenWith).
func (n *Node) Addr() string {
	if n.srv == nil { // OpenWith: no server
		return ""
	}
	return n.srv.addr()
}

// ID is this replica's id.
func (n *Node) ID() string { return n.opts.ID }

// IsLeader reports whether this replica is the Raft leader now.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader is the leader as this replica knows it: its id and server
// address, empty when none is known.
func (n *Node) Leader() (id, addr string) {
	_, lid := n.raft.LeaderWithID()
	for _, p := range n.opts.Peers {
		if string(lid) == p.ID {
			return p.ID, p.RPCAddr
		}
	}
	return string(lid), ""
}

// Metadata describes this replica and its view of the leader.
func (n *Node) Metadata() Metadata {
	id, addr := n.Leader()
	return Metadata{ID: n.opts.ID, IsLeader: n.IsLeader(), LeaderID: id, LeaderAddr: addr, Peers: append([]Peer(nil), n.opts.Peers...)}
}

func (n *Node) notLeader() error {
	id, addr := n.Leader()
	if id == n.opts.ID { // we lead but are not ready yet: no better address to give
		id, addr = "", ""
	}
	return &NotLeaderError{LeaderID: id, LeaderAddr: addr}
}

// Snapshot asks Raft for a snapshot now (tools, tests).
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

// Close stops the server, the tick loop and Raft, and closes the stores.
// Safe to call more than once. Closing the leader lets the others elect a
// new one after RaftElectionTimeout (hashicorp/raft does not hand over
// leadership on shutdown).
func (n *Node) Close() error {
	var err error
	n.closing.Do(func() {
		// Raft first: proposals in flight then fail at once with
		// ErrClosed instead of holding the server's Close for ApplyTimeout.
		n.closed.Store(true)
		close(n.stop)
		err = n.raft.Shutdown().Error()
		if n.srv != nil {
			n.srv.close()
		}
		n.wg.Wait()
		if n.store != nil { // nil under OpenWith: the caller's stores
			if e := n.store.Close(); err == nil {
				err = e
			}
		}
		n.log.Info("controller replica closed")
	})
	return err
}

// warnIfPeersDiffer logs when Options.Peers is not the Raft configuration
// the data dir holds: the stored one is in force (changing the peer set is
// not supported).
func (n *Node) warnIfPeersDiffer() {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		n.log.Warn("cannot read the stored Raft configuration", "err", err)
		return
	}
	stored := map[string]string{}
	for _, s := range f.Configuration().Servers {
		stored[string(s.ID)] = string(s.Address)
	}
	same := len(stored) == len(n.opts.Peers)
	for _, p := range n.opts.Peers {
		if stored[p.ID] != p.RaftAddr {
			same = false
		}
	}
	if !same {
		n.log.Warn("the peer list differs from the Raft configuration in the data dir; the stored one is in force (changing the peer set is not supported)",
			"peers", FormatPeers(n.opts.Peers), "stored", fmt.Sprint(stored))
	}
}
