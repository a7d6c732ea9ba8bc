package raftctl

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/internal/netx"
)

// Defaults of Options.
const (
	DefaultRaftHeartbeatTimeout = 500 * time.Millisecond
	DefaultRaftElectionTimeout  = 500 * time.Millisecond
	DefaultApplyTimeout         = 5 * time.Second
	DefaultSnapshotThreshold    = 1024
	DefaultSnapshotInterval     = 30 * time.Second
	DefaultSnapshotRetain       = 2
	DefaultMaxFrame             = 1 << 20
	DefaultIdleTimeout          = 120 * time.Second
	DefaultFrameTimeout         = 30 * time.Second
	DefaultWriteTimeout         = 10 * time.Second
	DefaultMaxInflight          = 64
	DefaultSlowThreshold        = 500 * time.Millisecond
)

// Options configure one controller replica (Open). Every replica of a
// controller runs with the same Peers and the same Controller config.
type Options struct {
	// ID is this replica's id in Peers. Required.
	ID string
	// Peers are all the replicas, this one included, in the same order on
	// every replica (ParsePeers). One peer: a single-replica controller
	// (`samsa dev`), which elects itself Raft leader at once.
	Peers []Peer
	// DataDir holds the Raft log and stable store (raft.db, bolt) and the
	// snapshots (snapshots/). Required; created if missing. A replica that
	// finds state there resumes from it and never bootstraps again.
	DataDir string
	// RaftListener, if set, is the listener of the Raft transport (tests
	// pass a 127.0.0.1:0 one); else Open listens on this peer's RaftAddr.
	// Open takes ownership and closes it with the replica.
	RaftListener net.Listener
	// Listener, likewise, for the server of brokers and tools; else Open
	// listens on this peer's RPCAddr.
	Listener net.Listener

	// Controller is the state machine's configuration (election timeout,
	// unclean election).
	Controller controller.Config
	// TickInterval: how often the leader looks for dead masters. Default
	// Controller.ElectionTimeout/30 (at least 10 ms). Shorter notices a death
	// sooner after the timeout; the cost is one pass over the groups.
	TickInterval time.Duration
	// RaftHeartbeatTimeout and RaftElectionTimeout are hashicorp/raft's
	// (default 500 ms each; the library's are 1 s): how soon a controller
	// replica's death is noticed and a new Raft leader elected. Shorter
	// fails the controller over sooner; too short for the network elects
	// needlessly. A new Raft leader elects no master for one
	// Controller.ElectionTimeout, so a master killed with the controller
	// leader is replaced after the Raft fail-over plus that timeout: the
	// Raft fail-over is what can be cut. The leader lease is half the
	// heartbeat timeout: a leader cut off from its peers stops answering
	// brokers before its followers can elect another.
	RaftHeartbeatTimeout time.Duration
	RaftElectionTimeout  time.Duration
	// ApplyTimeout bounds one proposal through Raft (default 5 s); a
	// request's context can only shorten it.
	ApplyTimeout time.Duration
	// SnapshotThreshold (log entries, default 1024) and SnapshotInterval
	// (default 30 s): a snapshot is taken when that many entries are new at
	// a check. SnapshotRetain snapshots are kept (default 2).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	SnapshotRetain    int
	// TrailingLogs: log entries kept behind a snapshot (default 10240, raft's)
	// so that a briefly lagging replica catches up from the log rather than
	// by installing a snapshot.
	TrailingLogs uint64

	// The server's bounds (see namesrv.Options for their meaning).
	MaxFrame        int           // largest request frame (default 1 MiB)
	MaxConns        int           // open connections (0: half the file-descriptor limit, netx)
	MaxConnsPerAddr int           // open connections from one IP (0: netx's default)
	MaxInflight     int           // requests answered at once per connection (default 64)
	IdleTimeout     time.Duration // close a connection silent this long (default 120 s)
	FrameTimeout    time.Duration // a frame must complete this soon after it began (default 30 s)
	WriteTimeout    time.Duration // writing one answer (default 10 s)
	// TLS of the server for brokers (not of the Raft transport, which is
	// plain TCP between replicas: run it on a trusted network).
	TLS netx.TLSServerOptions

	// ACL, if set, checks every request against RocketMQ's plain ACL
	// accounts (see acl.go); the caller owns it (Close). Nil: no check, so
	// expose the port only to brokers and operators.
	ACL *acl.Store

	// Logger receives the replica's log (default: text to stderr).
	Logger *slog.Logger
	// RaftLogOutput receives hashicorp/raft's own log at RaftLogLevel
	// (default stderr at "warn").
	RaftLogOutput io.Writer
	RaftLogLevel  string
	// Now is the clock (default time.Now); heartbeats and Tick read it.
	Now func() time.Time
	// SlowThreshold (default 500 ms): a request answered this long after it
	// was read, or a write to the Raft store that took this long, is
	// logged at warn with where the time went.
	SlowThreshold time.Duration
}

// EnsureDefaults fills the zero fields.
func (o *Options) EnsureDefaults() {
	o.Controller.EnsureDefaults()
	if o.TickInterval == 0 {
		o.TickInterval = max(o.Controller.ElectionTimeout/30, 10*time.Millisecond)
	}
	if o.RaftHeartbeatTimeout == 0 {
		o.RaftHeartbeatTimeout = DefaultRaftHeartbeatTimeout
	}
	if o.RaftElectionTimeout == 0 {
		o.RaftElectionTimeout = DefaultRaftElectionTimeout
	}
	if o.ApplyTimeout == 0 {
		o.ApplyTimeout = DefaultApplyTimeout
	}
	if o.SnapshotThreshold == 0 {
		o.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if o.SnapshotInterval == 0 {
		o.SnapshotInterval = DefaultSnapshotInterval
	}
	if o.TrailingLogs == 0 {
		o.TrailingLogs = 10240
	}
	if o.SnapshotRetain == 0 {
		o.SnapshotRetain = DefaultSnapshotRetain
	}
	if o.MaxFrame == 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	if o.MaxInflight == 0 {
		o.MaxInflight = DefaultMaxInflight
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.FrameTimeout == 0 {
		o.FrameTimeout = DefaultFrameTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.RaftLogOutput == nil {
		o.RaftLogOutput = os.Stderr
	}
	if o.RaftLogLevel == "" {
		o.RaftLogLevel = "warn"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SlowThreshold == 0 {
		o.SlowThreshold = DefaultSlowThreshold
	}
}

// Validate reports every bad field at once.
func (o Options) Validate() error {
	var errs []error
	if err := o.Controller.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validatePeers(o.Peers); err != nil {
		errs = append(errs, fmt.Errorf("raftctl: peers: %w", err))
	}
	if _, ok := o.self(); !ok {
		errs = append(errs, fmt.Errorf("raftctl: id %q is not in the peers %s", o.ID, FormatPeers(o.Peers)))
	}
	if o.DataDir == "" {
		errs = append(errs, errors.New("raftctl: DataDir must be set"))
	}
	for name, d := range map[string]time.Duration{"TickInterval": o.TickInterval, "RaftHeartbeatTimeout": o.RaftHeartbeatTimeout,
		"RaftElectionTimeout": o.RaftElectionTimeout, "ApplyTimeout": o.ApplyTimeout, "SnapshotInterval": o.SnapshotInterval,
		"IdleTimeout": o.IdleTimeout, "FrameTimeout": o.FrameTimeout, "WriteTimeout": o.WriteTimeout,
		"SlowThreshold": o.SlowThreshold} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("raftctl: %s %v must be > 0", name, d))
		}
	}
	if o.SnapshotRetain < 1 || o.MaxFrame < 1024 || o.MaxInflight < 1 || o.MaxConns < 0 || o.MaxConnsPerAddr < 0 {
		errs = append(errs, fmt.Errorf("raftctl: SnapshotRetain %d >= 1, MaxFrame %d >= 1024, MaxInflight %d >= 1, MaxConns %d and MaxConnsPerAddr %d >= 0",
			o.SnapshotRetain, o.MaxFrame, o.MaxInflight, o.MaxConns, o.MaxConnsPerAddr))
	}
	errs = append(errs, o.TLS.Validate("raftctl: tls: ")...)
	return errors.Join(errs...)
}

func (o Options) self() (Peer, bool) {
	for _, p := range o.Peers {
		if p.ID == o.ID {
			return p, true
		}
	}
	return Peer{}, false
}

// String is stable, for logs and result files.
func (o Options) String() string {
	return fmt.Sprintf("id=%s peers=%s dataDir=%s %s tick=%v raftHeartbeat=%v raftElection=%v apply=%v snapshot=%d/%v/%d tls=%s acl=%v",
		o.ID, FormatPeers(o.Peers), o.DataDir, o.Controller, o.TickInterval, o.RaftHeartbeatTimeout, o.RaftElectionTimeout,
		o.ApplyTimeout, o.SnapshotThreshold, o.SnapshotInterval, o.SnapshotRetain, o.TLS.Mode, o.ACL != nil)
}
