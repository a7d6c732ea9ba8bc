// Package chaos is the fail-over chaos checker's core, in the
// manner of OpenChaos's QueueChecker: what a run of faults against a
// replicated cluster must be judged by, independent of how the cluster is
// started and the faults injected.
//
// What it judges, from records the run keeps:
//
//   - the ledger of package killloop (every acknowledged send with its
//     queue and offset, and the final read of every queue): lost
//     (acknowledged, never found), duplicated, and offsets shared
//     (an acknowledged (queue, offset) that holds another message at the
//     end: apache/rocketmq#7689's symptom);
//   - OutOfOrder: within a queue, a producer's messages must appear in the
//     order it sent them (each producer sends one at a time, so its
//     acknowledged order is its send order);
//   - TwoMasters: the brokers' roles sampled through the run; two brokers
//     that both claimed to be master at the same master epoch are the
//     split brain the epoch exists to prevent (apache/rocketmq#7017);
//   - RTO: for a fault at t that took the master away, the time from t to
//     the first acknowledged send answered by another broker; for a fault
//     that must not interrupt sends (a controller leader's loss), the
//     longest gap between acknowledgements around it.
//
// Partition is a TCP proxy that can cut a link as a network partition
// does: bytes stop in both directions and nothing is closed, so each side
// learns of it only from its own timeouts; Heal closes what the partition
// held (connections across a long partition are dead by then) and lets new
// connections through.
//
// The process side (Run; `samsa chaos`; experiments/chaos.json): three
// controllers (`samsa controller`, Raft), a name server and three
// controller-mode replicas of one broker group (SYNC_MASTER,
// inSyncReplicas=2), each a separate process on loopback; producers
// through package client with its defaults, recording every SEND_OK in
// killloop's Ledger and as an Ack (the answering broker is the store
// host of the answer's offset message id); a sampler polling each broker's
// `stats ha` (controller_role, controller_master_epoch) as RoleSamples.
// Each cycle waits for a settled cluster (a writable master with every
// replica in its sync-state set), injects one fault of a seeded order
// (AllFaults), measures the RTO and the longest send gap, undoes the
// fault and waits again; every wait is bounded and a timeout names the
// logs. At the end the load stops and every queue is read back from the
// final master (killloop.ReadBack). partition-master cuts the master's
// controller links only, not its HA link: see AllFaults.
//
// Run is called from one goroutine; a Partition is safe for concurrent
// use; the checks are pure functions.
package chaos
