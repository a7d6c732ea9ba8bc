// Package devcluster runs Samsa clusters inside one process, on loopback:
// what `samsa dev`, the tests of every package above the broker and the
// lab's embedded experiments start instead of separate processes.
//
// Start brings up a name server and Options.Groups broker groups
// registered with it, in one cluster (broker-a, broker-b, ...), each a
// master and Options.Slaves slaves following it over the replication
// link; with Options.ControllerAddrs every broker runs in controller mode
// against those controllers (StartController runs one replica in this
// process). Group.AddSlave adds a slave to a running group,
// WaitSlavesInSync waits for the slaves to catch up, and Group.Fill
// writes a backlog straight into a master's store for an experiment that
// does not measure the fill.
//
// # Data layout
//
//	Dir                      one group without slaves: the broker's store
//	Dir/master, Dir/slave-i  one group with slaves
//	Dir/<brokerName>/...     each group of several, laid out as above
//	<ControllerOptions.Dir>/controller  a controller's Raft log
//
// Dir defaults to a temporary directory that Close removes (unless Keep).
//
// # Concurrency
//
// Start, AddSlave and Close are not safe for concurrent use with each
// other; the brokers and the name server they return are (see package
// broker and namesrv). Everything here polls with explicit deadlines and
// never asserts how fast a cluster starts.
//
// # Dependencies
//
// devcluster imports broker, namesrv, controller and storage, never the
// client: package client's own tests start their clusters from here.
package devcluster
