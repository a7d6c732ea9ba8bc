// Package sim runs Samsa's replication and fail-over in one process under
// a seed: nodes on crash-simulating file systems (vfs.MemFS: a process
// crash keeps what the kernel holds, a power loss only what was synced,
// torn at random), an in-memory network with faults (Net: partitions,
// one-way cuts, slow links, connections reset when a node dies), and
// virtual time when run inside testing/synctest's bubble. A seed chooses
// the workload and the fault schedule; the run checks named invariants as
// it goes and at the end, and reports the first broken one as a
// Violation with the seed and the trace that replay it.
//
// # Two simulations
//
// Replication: one master and one slave with static roles (ha.Master,
// ha.Slave over real storage.Stores); faults: partitions, slow links,
// process crashes and power losses of the slave, process crashes of the
// master and, under sync flush, its power losses. Invariants: InvAckedKept,
// InvSameLog, InvEpochRises, InvCatchUp.
//
// Failover: a broker group of three replicas in controller mode
// (SYNC_MASTER), each on its own file system, and a fail-over controller
// of three replicas. The controller is package controller/raftctl on
// hashicorp/raft (raftctl.OpenWith with raft's in-memory transport and
// stores): the state machine, the Raft replication and the leader's tick
// loop that elects are the code a real controller runs, and run inside
// the bubble (hashicorp/raft's timers and goroutines are the bubble's;
// Close ends them all, which synctest checks). Raft's connections follow
// the Net. A replica registers, heartbeats and takes up the role each
// answer gives with the broker's own rules (package broker/ctlrole: the
// ha epoch it opens, the position it reports, the confirmed offset, the
// sync-state set it asks for, the acknowledged bytes it refuses to cut);
// what package broker adds around them (name servers, tables,
// transactions) is not simulated. Faults, one at a time, chosen by the
// seed (FamilyMixed): a process crash or power loss of the master, of any
// replica, of the whole group at once; the master partitioned from
// everyone; the master and the controller's Raft leader partitioned
// together from the rest; a one-way cut (everything the master sends
// lost, or everything it is sent); slow links; a controller replica's
// crash; a bit flip in an acknowledged record a slave (not the master the
// controller names) synced since its last verification, while it is
// down after a power loss (its restart must find it: InvFlipDetected;
// storage refuses to open a log damaged below what it synced, and the run
// plays the operator's samsa store repair). FamilyGroupCrash runs appends and whole-group crashes only: the
// process of every replica, the power of every replica, or each its own,
// at one instant. Invariants: InvOneMasterPerEpoch,
// InvElectedHoldsAcked, InvNoHealthyCut, InvAckedKept, InvSameLog (once
// healed and caught up), InvCatchUp (the group heals: a master takes
// writes and every replica holds its log).
//
// # What each mode promises, and what the checker holds it to
//
// SYNC_MASTER acknowledges a record once the master appended it and every
// member of the sync-state set acknowledged it (the set's members only:
// ha.MasterConfig.RequiredOnly). Elections choose from the set only.
//
//	mode                        acknowledged means               survives
//	SYNC_MASTER + SYNC_FLUSH    on the disk of the master and     any crashes and power losses, the
//	(slaves ack what they       of every member of the set        whole group's at once included,
//	synced: AckFlushed)                                           partitions, one-way cuts, fail-overs
//	SYNC_MASTER + ASYNC_FLUSH   in the kernel of the master and   any process crashes (the whole group's
//	                            of every member of the set        too), partitions, one-way cuts,
//	                                                              fail-overs; one power-loss event at a
//	                                                              time (one replica's, or the whole
//	                                                              group's with every member back within
//	                                                              the controller's RecoveryWait) as long
//	                                                              as a member of the set kept it
//
// Under async flush a record on no member's disk is lost when every
// member that held it loses power before its flush: SYNC_MASTER +
// ASYNC_FLUSH cannot survive the whole group losing power, and the
// checker forfeits such a record (it checks it no more) instead of
// flagging it. A record that a power loss took from some replica is at
// risk until every replica holds it again; a further fault before then
// (a partition of the replica that kept it, another crash) forfeits it
// under async flush: the mode promises one power-loss event at a time.
// Under sync flush nothing is forfeited but what a bit flip took from a
// replica, should another fault come before every replica holds it again
// (no flush mode promises against a disk's rot): a record no member of
// the set holds after a power loss breaks InvAckedKept. When the group has no
// master for 20 s and the controller says only an unclean election can
// elect one (or a replica refuses to cut acknowledged records the new
// master lacks), the run plays the operator and elects unclean, under
// async flush only, forfeiting what the new master lacks; under sync
// flush the need is itself a violation.
//
// # Replay
//
// One seed draws one seed per step, and the step draws what it does from
// that: the schedule of steps, faults, durations and restart delays
// replays exactly, whatever the goroutines' interleaving (which synctest
// does not fix); math/rand's global source, which hashicorp/raft draws
// its election timeouts from, is seeded with the run's seed by the tests.
// A violation has so far replayed from its seed; one that depends on an
// interleaving may need a few runs.
//
// Not yet: the name server, consumers (so "never served" is checked as
// "found before the replica can be elected"), ASYNC_MASTER, the broker's
// repair of a damaged range from a peer, and lost fsyncs on the file
// systems.
package sim
