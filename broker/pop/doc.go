// Package pop is RocketMQ 5's POP consumption (RIP-19) for Samsa's broker:
// the broker hands out messages one at a time, each invisible to the rest
// of its consumer group until it is acknowledged or its invisible time
// passes; a group may have more consumers than a topic has queues, and a
// consumer that hangs stalls nothing but its own messages.
//
// # Contract
//
// A Service (New) is safe for concurrent use. Pop reads what is visible
// for a group (messages whose invisible time passed first, then new ones
// from the group's cursor), makes it invisible, logs that durably and
// only then returns it; with nothing to hand out it waits (long poll)
// until OnDispatch reports an arrival on the topic, an in-flight message's
// invisible time passes, or its poll time ends. Ack and ChangeInvisible
// take the receipt handle (ExtraInfo) a Pop gave: a handle whose pop time
// no longer matches (the message was acknowledged, redelivered or its
// invisible time changed since) is refused with ErrStale. A message
// handed out more than the group's max reconsume times goes to the
// group's DLQ (%DLQ%group) instead. Attempts are spaced by Config.Backoff:
// a message comes back when its invisible time ends plus the back-off of
// the attempt that would be next (the broker takes it from the retry
// ladder, messageDelayLevel: nothing for the first attempt again, then
// 10 s, 30 s, 1 m, ...); a deadline set by ChangeInvisible is kept as set.
//
// A redelivered message is the stored record re-encoded with its
// reconsume times raised (its CRC property recomputed), not a copy written
// to a retry topic: the in-flight state says how often it was handed out.
//
// # Looking without taking
//
// Peek (PEEK_MESSAGE) returns what the group's next pop would hand out, as
// stored, and changes nothing (a peek does not make a group a POP consumer
// of the topic). Notify (NOTIFICATION) says whether there is something to
// pop, waiting for it as a pop waits. PollingInfo (POLLING_INFO) counts the
// pops and notifications waiting on a group's queue.
//
// # Ordered POP
//
// Request.Order (RocketMQ 5's order=true, RIP-51's orderly POP): a queue
// with a message in flight that is not visible again yet is held, and
// no ordered pop takes anything from it; once every message of the batch
// is acknowledged the next ordered pop takes the next ones, and once the
// invisible time of those not acknowledged passes they come back, in
// queue order, before anything newer (an acknowledgement that frees a
// queue wakes the pops waiting on its topic). Result.OrderCountInfo counts
// the attempts as RocketMQ's header does. A group should pop a topic
// either ordered or not: an unordered pop does not respect the hold.
//
// # Crash safety: a write-ahead file, not a revive topic
//
// RocketMQ writes checkpoint and ack records into the CommitLog (the
// revive topic) and replays them to find what expired. Here the in-flight
// state is small (one entry per message handed out and not yet
// acknowledged) and private to the broker, so it lives in one write-ahead
// file, pop.wal in Config.Dir: every change is a record written before the
// request that made it is answered, and fsynced before it too unless
// Config.SyncInterval is set (the broker sets it under ASYNC_FLUSH, as the
// CommitLog is treated: written, so a killed process loses nothing;
// synced in the background). Writes and fsyncs run off the state's lock
// and are shared by the requests that arrive meanwhile (commit.go). A
// power loss that cuts the unsynced tail goes back to an earlier state,
// which only hands messages out again: at Open the file is
// replayed (cut at the first torn or corrupt record) and rewritten as a
// snapshot (temp file, fsync, rename, fsync dir), as it is again whenever
// it outgrows Config.CompactBytes. This keeps the user's CommitLog free of
// bookkeeping, recovery local and proportional to what is in flight, and
// needs no second reader of the log. A crash after the record and before
// the answer leaves a message invisible that no consumer holds: it comes
// back after its invisible time (at least once, never lost); an
// acknowledged message is never handed out again.
//
// Record layout (big-endian):
//
//	| bytes | field      | why                                            |
//	|-------|------------|------------------------------------------------|
//	| 4     | length     | of what follows the CRC: finds the next record |
//	| 4     | CRC-32C    | over the rest: a torn or flipped tail is cut   |
//	| 1     | kind       | 'N' cursor, 'P' popped, 'A' removed            |
//	| 2+n   | group      | who consumes                                   |
//	| 2+n   | topic      | what                                           |
//	| 4     | queue id   |                                                |
//	| 8     | offset     | 'N': next queue offset; else the message's     |
//	| 8     | pop time   | ms: the receipt handle's identity              |
//	| 8     | deadline   | ms: when the message becomes visible again     |
//	| 4     | attempts   | reconsume times of the delivery in flight      |
//
// # What is not here
//
// POP_ROLLBACK: the broker answers it REQUEST_CODE_NOT_SUPPORTED. An
// ordered pop's hold on a queue is not logged: it follows from the
// messages in flight, which are. A message moved to the
// DLQ is logged as removed after its append: a crash between the two may
// store it in the DLQ twice (at least once, as the retry path).
package pop
