package devcluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/controller/raftctl"
)

// ControllerOptions configure StartController.
type ControllerOptions struct {
	// Dir: the controller's Raft log goes to Dir/controller. Default: a
	// new temporary directory, removed by Close unless Keep.
	Dir string
	// Keep leaves a temporary directory in place on Close.
	Keep bool
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Controller is one fail-over controller replica running in this process
// (`samsa dev --controller`): Raft and its broker-facing port on free
// loopback ports. Give Addr to Options.ControllerAddrs.
type Controller struct {
	node    *raftctl.Node
	addr    string
	cleanup func() error
}

// StartController starts a one-replica controller, which elects itself
// Raft leader.
func StartController(opts ControllerOptions) (*Controller, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	dataDir, temp := filepath.Join(opts.Dir, "controller"), false
	if opts.Dir == "" {
		var err error
		if dataDir, err = os.MkdirTemp("", "samsa-dev-controller-"); err != nil {
			return nil, err
		}
		temp = true
	}
	cleanup := func() error {
		if temp && !opts.Keep {
			return os.RemoveAll(dataDir)
		}
		return nil
	}
	raftLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	rpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(err, raftLn.Close(), cleanup())
	}
	node, err := raftctl.Open(raftctl.Options{ID: "1", DataDir: dataDir, Logger: opts.Logger,
		Peers:        []raftctl.Peer{{ID: "1", RaftAddr: raftLn.Addr().String(), RPCAddr: rpcLn.Addr().String()}},
		RaftListener: raftLn, Listener: rpcLn})
	if err != nil {
		return nil, errors.Join(err, raftLn.Close(), rpcLn.Close(), cleanup())
	}
	return &Controller{node: node, addr: rpcLn.Addr().String(), cleanup: cleanup}, nil
}

// Addr is the address brokers use (controllerAddr).
func (c *Controller) Addr() string { return c.addr }

// Close stops the controller and removes a temporary directory.
func (c *Controller) Close() error { return errors.Join(c.node.Close(), c.cleanup()) }

// controllerWait bounds how long Start waits for the controller to name a
// group's master (a new single-replica controller elects itself Raft
// leader first, then waits one election timeout of heartbeats) and for
// the slaves to join its sync-state set.
const controllerWait = 60 * time.Second

// waitControllerMaster waits until the controller has named b master.
func waitControllerMaster(b *broker.Broker, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for b.Replication().ControllerRole() != "master" {
		if time.Now().After(deadline) {
			return fmt.Errorf("devcluster: the controller did not name %s broker %d master within %v (role %q)",
				b.Config().BrokerName, b.Config().BrokerID, limit, b.Replication().ControllerRole())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// waitSyncStateSet waits until master's sync-state set holds n replicas.
// Only the set is electable: a fail-over needs the slaves in it, which
// the master asks for once they caught up.
func waitSyncStateSet(master *broker.Broker, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for len(master.Replication().ControllerSyncSet()) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("devcluster: %s: the slaves did not join the sync-state set within %v (set %v)",
				master.Config().BrokerName, limit, master.Replication().ControllerSyncSet())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
