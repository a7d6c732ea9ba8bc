// Package chaos is the fail-over chaos checker's core (issue #14), in the
// manner of OpenChaos's QueueChecker: what a run of faults against a
// replicated cluster must be judged by, independent of how the cluster is
// started and the faults injected.
//
// What it judges, from records the run keeps:
//
//   - the ledger of package durability (every acknowledged send with its
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
// The process side (controllers, name server and brokers as separate
// processes, the fault list, `samsa chaos`) builds on this once the
// controller-mode broker lands; see issue #14.
package chaos
