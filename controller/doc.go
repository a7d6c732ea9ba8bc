// Package controller is the fail-over controller's state machine: per
// broker group it keeps the registered replicas, the master, the
// master epoch and the sync-state set, and elects a new master from the
// sync-state set when the master's heartbeats stop. It follows the facts of
// RocketMQ 5's controller (docs/en/controller/design.md in apache/rocketmq)
// in Go of its own. This package is the deterministic core (STYLE.md point
// 9); controller/raftctl replicates it with hashicorp/raft and serves it to
// brokers, controller/ctlclient is the brokers' client.
//
// # State per group
//
//	what               replicated  why
//	replicas id→addr   yes         who may be elected; where to send clients
//	master id          yes         NoMaster when the group has none (writes stop)
//	master epoch       yes         0 before the first master, +1 at every master change
//	                               (a new master, or the master lost with no successor);
//	                               fences an old master and marks the log's epochs
//	sync-state set     yes         the replicas holding every acknowledged message;
//	                               always holds the master; the only electable ones
//	sync-set epoch     yes         +1 at every change of the set; fences a stale alter
//	last heartbeat     no          this controller replica's own observation; a
//	                               master's from its replicated renewals
//
// # Commands
//
//   - RegisterBroker{Group, ID, Addr, Epoch, Pos}: the first replica of a
//     group that never had a master becomes master at epoch Epoch+1 (1 for
//     a new broker; above any epoch in its epoch file) with the set {it};
//     later ones join as slaves; a known id updates its address. A broker
//     registers at every start, so the master registering again restarted:
//     it may have lost an unsynced tail a slave holds, and it is master no
//     longer (the epoch rises, the set is kept) until the next election
//     ranks it with the others. A group that lost its master takes none
//     from a registration: only ElectMaster elects, so a fresh, empty
//     replica cannot become master by registering.
//   - Heartbeat{Group, ID, Epoch, Pos, MasterFailed}: records liveness and
//     the reported Position at now; the Result tells the broker its role.
//     The master's is replicated (its lease renewal) and raises acked, the
//     offset below which the group acknowledged everything, to its
//     Pos.Confirmed. A master that could not take up its role says why in
//     MasterFailed: no lease, and it is not electable for a while.
//   - AlterSyncStateSet{Group, From, MasterEpoch, NewSet, SyncSetEpoch}: the
//     master shrinks or expands the set. Refused (nothing changes) unless
//     From is the master, MasterEpoch the current epoch (ErrFenced below it),
//     SyncSetEpoch the current set epoch (ErrStaleSyncEpoch), and NewSet
//     holds the master and only registered ids, each once.
//   - ElectMaster{Group, Alive, MasterEpoch, Positions, Unclean}: elects by
//     the rule below.
//
// Any command whose sender reports an epoch older than the group's gets a
// Result with Fenced set and the master to follow: "you are a slave of
// master X at epoch E" — stop taking writes, truncate to the consistent
// point (ha's epoch file), and follow. An epoch above the group's was never
// given out and is refused as ErrBadCommand.
//
// # The election rule
//
// Tick(now) returns an ElectMaster for each group whose master has sent no
// heartbeat for more than Config.ElectionTimeout (a heartbeat exactly the
// timeout old still counts), or which lost its master and has an electable
// replica alive again. Applying it (elect.go):
//
//  1. The old master, if alive, stays (a manual election changes nothing).
//  2. Else the alive members of the sync-state set are ranked by their
//     reported Position, (epoch of the log's tail, log end): Raft's most
//     up-to-date log, Kafka's clean leader election. The best (ties to the
//     lowest id) becomes master if its log reaches acked; the epoch rises
//     by one; the set becomes {new master} and its epoch rises; the new
//     master expands it as slaves catch up. A master elected that never
//     took up its role (dead when elected, or unable) leaves the sets
//     before it electable: it took no writes.
//  3. Else, with Config.UncleanElection or an operator's ElectMaster with
//     Unclean (samsa controller elect --unclean), the most up-to-date
//     alive replica becomes master as in 2 and the Result says Unclean:
//     messages the group acknowledged may be lost; acked drops to its end.
//  4. Else the group has no master: the epoch rises (fencing the old master
//     if it returns) and the set is kept, so that a member of it coming back
//     is elected by the next Tick. Machine.Pending says why.
//
// Positions are not replicated state: the leader puts the alive replicas'
// last reports in the command. Why ranking matters although every member
// of the set received every acknowledged message: under async flush a
// member that crashed with its machine lost what it had not synced. Such
// a replica restarts and registers; when every alive candidate registered
// since the master was last heard (the group went down whole), Tick waits
// up to Config.RecoveryWait for the missing members of the set before it
// elects, so that the one holding the most can return first.
//
// # Determinism, and what Raft will replicate
//
// State is the replicated part: RegisterBroker, AlterSyncStateSet and
// ElectMaster applied in log order give the same Results and the same state
// on every controller replica; State reads no clock and keeps no liveness.
// Liveness is each replica's own observation, on its own clock. Most
// heartbeats are not replicated: they come every second or so from every
// broker, and a slave's matters only to the leader that elects. The
// master's are (package raftctl commits each before answering it): the
// master takes writes for a while after each answered heartbeat (its
// lease), so a replica that leads later must know when the master was last
// answered. Every replica records a master as heard when it applies its
// renewal (or the registration or election that made it master), which is
// never before the master sent it; a new leader calls Lead once it has
// applied every earlier entry, and Tick elects no successor before one
// ElectionTimeout has passed since the master's last renewal, and, for one
// ElectionTimeout after Lead, none before an electable slave has been
// heard by this leader. Liveness enters the State only through
// ElectMaster: the leader's Machine.Tick or Machine.Elect computes the
// alive set at now and puts it in the command, and the command also names
// the epoch it was made at, so one applied after another election got in
// first changes nothing (ErrStaleElection). Restored (a snapshot
// installed) counts every master as heard at that moment.
//
// Machine is one controller replica: State plus Liveness. Apply(cmd, now)
// sends Heartbeat to the liveness and the rest to State (a RegisterBroker
// also counts as a heartbeat at now). The Raft FSM will call State.Apply
// with the decoded log entry; a Raft snapshot is State.MarshalSnapshot
// (layout in snapshot.go: magic, version, length, CRC-32C, JSON), and
// RestoreSnapshot refuses one that does not validate. Package raftctl is
// the Raft wiring, its network server and its client.
//
// # Concurrency
//
// Neither Machine nor State is safe for concurrent use and neither starts a
// goroutine: the caller serialises calls, as a Raft FSM applies one entry at
// a time. Invariants (the master is registered and in the sync-state set,
// the set holds only registered ids) are checked after every change; a
// broken one is a bug here and panics.
//
// # Tests
//
// testdata/*.txt are script tests run by script_test.go with
// github.com/cockroachdb/datadriven (commands there);
// `go test ./controller -run TestScripts -rewrite` regenerates their
// expected output. TestReplicatedLogDeterminism replays a seeded random
// run's log on a bare State.
package controller
