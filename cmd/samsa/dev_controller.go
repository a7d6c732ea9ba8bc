package main

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/samsamq/samsa/controller/raftctl"
)

// startDevController runs one fail-over controller replica in this
// process for `samsa dev --controller`: Raft and its broker-facing port
// on free loopback ports, its Raft log under dir/controller (a temporary
// directory when dir is empty, removed by stop unless keep). It returns
// the address brokers use (controllerAddr).
func startDevController(dir string, keep bool, log *slog.Logger) (addr string, stop func() error, err error) {
	dataDir, temp := filepath.Join(dir, "controller"), false
	if dir == "" {
		if dataDir, err = os.MkdirTemp("", "samsa-dev-controller-"); err != nil {
			return "", nil, err
		}
		temp = true
	}
	cleanup := func() error {
		if temp && !keep {
			return os.RemoveAll(dataDir)
		}
		return nil
	}
	raftLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, errors.Join(err, cleanup())
	}
	rpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, errors.Join(err, raftLn.Close(), cleanup())
	}
	node, err := raftctl.Open(raftctl.Options{ID: "1", DataDir: dataDir, Logger: log,
		Peers:        []raftctl.Peer{{ID: "1", RaftAddr: raftLn.Addr().String(), RPCAddr: rpcLn.Addr().String()}},
		RaftListener: raftLn, Listener: rpcLn})
	if err != nil {
		return "", nil, errors.Join(err, raftLn.Close(), rpcLn.Close(), cleanup())
	}
	return rpcLn.Addr().String(), func() error { return errors.Join(node.Close(), cleanup()) }, nil
}
