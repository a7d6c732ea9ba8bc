// Package raftctl is the replicated fail-over controller: a
// controller replica (Node) is hashicorp/raft replicating a
// controller.Machine, plus a TCP server for brokers and tools. Three
// replicas (or one, for `samsa dev`) form a controller; they run standalone
// (`samsa controller`) or inside name servers (`samsa namesrv --controller`).
//
// # Raft
//
// Each replica keeps, under Options.DataDir, the Raft log and stable store
// (raft.db, raft-boltdb) and the snapshots (snapshots/, raft's file store
// holding controller.State.MarshalSnapshot). The peer set is fixed and
// bootstrapped from Options.Peers the first time a replica starts on an
// empty DataDir; later starts resume from the data (changing the set is
// not supported). One peer makes a single-replica controller that leads at
// once. The Raft transport is plain TCP between replicas (no TLS): run it
// on a trusted network.
//
// A log entry is one replicated command (RegisterBroker,
// AlterSyncStateSet, ElectMaster, and the master's heartbeats), versioned
// and checksummed (entry.go). The FSM decodes it and calls Machine.Apply;
// an entry that does not decode is refused alike on every replica. The
// master's heartbeat renews its lease (it takes writes for
// controllerHeartBeatTimeoutMills after sending one that was answered), so
// the leader answers it only once it is committed, and every replica notes
// the renewal when it applies it. Other brokers' heartbeats are never
// logged: they feed the leader's own liveness table (see package
// controller). The cost is one small entry per master per heartbeat
// interval (1 s).
//
// # Elections of broker masters
//
// Only the leader elects. Its tick loop (every TickInterval) first waits
// for a barrier (every entry of earlier terms applied, the masters' last
// renewals with them) and calls Machine.Lead; after that it proposes
// through Raft each ElectMaster that Machine.Tick yields. A master is
// elected over once one Controller.ElectionTimeout has passed since this
// replica applied its last renewal. That is safe across a change of
// leader: the master counts its lease (at most the election timeout,
// checked at registration) from its heartbeat's send time, before the
// renewal was committed, and no replica applies an entry before it is
// committed. A master that died with the old leader is thus replaced about
// one election timeout after its last heartbeat, not one after the new
// leader took over. For one election timeout after taking over, the leader
// waits for an electable slave's heartbeat before it elects (its table of
// slaves starts empty). Each ElectMaster names the epoch it was made at,
// so one that loses a race is refused on apply and changes nothing.
//
// # The wire
//
// The server speaks RocketMQ remoting frames (package protocol) with
// RocketMQ 5's request codes — CONTROLLER_REGISTER_BROKER (1003),
// BROKER_HEARTBEAT (904), CONTROLLER_ALTER_SYNC_STATE_SET (1001),
// CONTROLLER_GET_REPLICA_INFO (1004), CONTROLLER_ELECT_MASTER (1002, admin)
// and CONTROLLER_GET_METADATA_INFO (1005) — but its bodies are our own JSON
// (wire.go): the controller command structs, a controller.Group, and the
// Reply carrying the controller.Result in every answer, refusals included.
// It is therefore not wire-compatible with RocketMQ's Java brokers or
// tools: every request must carry the header field samsaController=json1,
// and one without it (a Java broker's) is answered
// REQUEST_CODE_NOT_SUPPORTED with that reason, as is any other code.
//
// Refusals map to RocketMQ's controller response codes (ErrFenced →
// CONTROLLER_FENCED_MASTER_EPOCH, ErrStaleSyncEpoch →
// CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, ErrNotMaster →
// CONTROLLER_INVALID_MASTER, unknown group or broker →
// CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, ErrStaleElection →
// CONTROLLER_ELECT_MASTER_FAILED, ErrBadCommand and bad bodies →
// CONTROLLER_INVALID_REQUEST); ErrorOf turns them back into errors that
// match the controller's Err values.
//
// Every request but metadata is served by the leader only. A follower
// answers CONTROLLER_NOT_LEADER with the leader's id and server address in
// the header fields controllerLeaderId and controllerLeaderAddress (empty
// when it knows none); it does not forward, and it refuses heartbeats too,
// since only the leader's liveness decides elections. Package ctlclient
// follows the leader.
//
// Access control: with Options.ACL set, every request is checked against
// RocketMQ's plain ACL accounts (package acl: white lists, account,
// signature) and every code but CONTROLLER_GET_METADATA_INFO needs an admin
// account; a refusal answers NO_PERMISSION. ctlclient signs with
// Options.AccessKey and SecretKey. Without an ACL, expose the controller
// port only to brokers and operators (or require client certificates,
// Options.TLS).
//
// # Concurrency
//
// Node's methods are safe for concurrent use. Goroutines: hashicorp/raft's
// own; the tick loop (tick.go); the server's accept loop and one reader per
// connection with one handler per request (at most MaxInflight at once).
// The FSM's mutex serialises the machine between Raft's applies, the
// heartbeats and the tick loop. Close stops them all and waits.
package raftctl
