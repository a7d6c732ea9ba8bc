package raftctl

import (
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/samsamq/samsa/controller"
)

// RaftParts are the pieces of hashicorp/raft a replica runs on. Open
// builds them from the options (bolt log and stable store, file
// snapshots, TCP transport); OpenWith takes them from the caller.
type RaftParts struct {
	Transport raft.Transport
	Logs      raft.LogStore
	Stable    raft.StableStore
	Snapshots raft.SnapshotStore
}

// OpenWith starts a replica on the caller's Raft parts (raft's in-memory
// transport and stores: package sim runs three replicas in one process,
// under virtual time), with the same state machine, Raft configuration
// and tick loop as Open, and no server for brokers: the process calls
// Register, Heartbeat, AlterSyncStateSet and Elect. DataDir, the
// listeners, TLS and ACL are not used. Parts holding Raft state resume
// from it (a restarted replica); others bootstrap Peers. Close stops the
// replica; the caller closes the parts.
func OpenWith(opts Options, parts RaftParts) (*Node, error) {
	if opts.DataDir == "" {
		opts.DataDir = "(in process)"
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	self, _ := opts.self()
	n := &Node{opts: opts, self: self, stop: make(chan struct{}),
		log: opts.Logger.With("component", "controller", "id", opts.ID)}
	m, err := controller.New(opts.Controller)
	if err != nil {
		return nil, err
	}
	n.fsm = &fsm{now: opts.Now, log: n.log}
	n.fsm.mu.m = m
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft-" + opts.ID, Level: hclog.LevelFromString(opts.RaftLogLevel), Output: opts.RaftLogOutput})
	if err := n.startRaft(parts, hlog); err != nil {
		return nil, err
	}
	n.wg.Add(1)
	go n.tickLoop()
	return n, nil
}
