// Package txn is the broker's transactions, RocketMQ's way (broker/transaction/
// in RocketMQ 4.x/5.x: TransactionalMessageBridge,
// TransactionalMessageServiceImpl, TransactionalMessageCheckService,
// EndTransactionProcessor), with one departure and one extension, both
// marked below. It takes what it needs as a Config (the store behind an
// eight-method Store, where the check progress is kept, the live producers
// of a group, a vfs.FS, a clock, a logger, the settings) and knows nothing
// of the broker; the broker builds the Config on a master, rewrites a
// prepared send with ToHalf, hands END_TRANSACTION to End and runs Run
// with its other loops.
//
// # Half messages
//
// A prepared send (sysflag TRANSACTION_PREPARED, or property TRAN_MSG=true;
// IsPrepared) is checked against its real topic and queue as any send, then
// stored under RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC and
// REAL_QID in its properties and its sysflag's transaction bits cleared
// (ToHalf; so it is indexed in the half queue and nowhere else): consumers
// of the real topic never see it. Its half queue offset is its identity
// from then on.
//
// # Op records
//
// A half message is settled by one op record: topic
// RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0, tags "d" (RocketMQ's REMOVETAG),
// body the half queue offset in decimal. END_TRANSACTION with commit
// appends, in one Config.Append, the final message (real topic and queue
// restored, REAL_TOPIC, REAL_QID, TRAN_MSG and TRANSACTION_CHECK_TIMES
// removed, sysflag TRANSACTION_COMMIT, PreparedTxOffset the half's
// commit-log offset, property TRAN_PREPARED_QUEUE_OFFSET) and then the op
// record; rollback appends only the op record; a half discarded after
// transactionCheckMax check-backs is copied to TRANS_CHECK_MAX_TIME_TOPIC
// and gets an op record too.
//
// Settled at most once: the Service holds, for each half offset at or
// above the check progress, whether it is open, being settled or settled
// (and by which op). Every settlement claims the half first, so a
// duplicate or late END_TRANSACTION, or a check-back racing a commit,
// finds it taken and writes nothing (End answers ErrSettled): a committed
// message is delivered once.
//
// Departure from RocketMQ: a checked half is not appended again
// (RocketMQ's putBackHalfMsgQueue with TRANSACTION_CHECK_TIMES + 1). Its
// offset stays its identity, so an END_TRANSACTION answering an old
// check, or the producer's own late one, settles the same half as the
// newest; the check counts of open halves are saved after each check round
// that changed them, in ConfigDir/transactionChecks.json (written
// atomically and loaded tolerantly, package internal/jsonfile: a file
// that does not load is set aside and the open halves count afresh).
//
// # Check-back
//
// Every Config.CheckInterval Run scans the open halves from the progress,
// oldest first, up to the first one younger than Config.Timeout. Each
// older one (and older than its CHECK_IMMUNITY_TIME_IN_SECONDS) is, in
// this order: completed with its op record alone if a crash left its
// final message stored (below); discarded to TRANS_CHECK_MAX_TIME_TOPIC
// after Config.CheckMax check-backs, or when older than
// Config.FileReserved; else checked back with one CHECK_TRANSACTION_STATE
// to the first live member of its producer group (PGROUP) that takes it.
// A round with no member online counts as a check too, as in RocketMQ, so
// a half stays open at most about Timeout + CheckMax × CheckInterval.
//
// # Held halves
//
// Config.Hold, when set, is asked about each open half a round would
// check back or discard: a half it holds is passed over (neither checked
// back nor discarded, nor counted), as its owner settles it with End. The
// broker's XA branches (package xa) hold the halves of the branches they
// know, so a prepared branch is decided only by its coordinator. A held
// half still stops the progress, as any open one.
//
// # Crash mid-commit
//
// A commit's messages are one contiguous write, and recovery keeps a
// prefix of the log: after a crash it is either whole, or its final
// messages are partly there without the op record. The second can only
// happen to a half stored before the Service was made (or to one whose op
// record failed after its final message was stored); before such a half
// is checked back or committed again, its real queue is searched (from a
// second before the half's store time) for a record whose
// PreparedTxOffset is the half's commit-log offset. If one is there, only
// the op record is written.
//
// # Progress
//
// The check progress, as in RocketMQ, is two consumer offsets of the group
// CID_RMQ_SYS_TRANS (Config.Progress; the broker keeps them in
// consumerOffset.json): the half queue offset below which every half is
// settled, and an op queue offset from which reading the op queue again
// rebuilds the state. New reads the op queue from there before anything
// is served, so a restart with open half messages still checks them back
// and still refuses a duplicate commit. Each round moves both over the
// settled prefix.
//
// # Several messages in one transaction (ours, as MetaQ allowed)
//
// Samsa's client may put several half messages, to any topics of one
// broker, in one transaction: each carries the property SAMSA_TXN_ID, and
// the producer ends them with one END_TRANSACTION whose body lists every
// half as "queueOffset:commitLogOffset" lines (ParseRefs). They are
// settled in one Config.Append (every final message, then every op
// record), so they become visible together or, after a crash mid-write,
// are repaired as above. A half left open (crash, lost END) is checked
// back like any: the client's checker answers for the transaction id, so
// every half of one transaction gets the same answer; all or nothing.
//
// # Invariants
//
//   - A half is settled by at most one op record, and a committed half
//     has at most one final message: a duplicate
//     END_TRANSACTION, a late one, or a check answer racing a commit writes
//     nothing; after a crash mid-commit only the missing op is added.
//   - The progress never passes an open half: the half offset committed is
//     the end of the settled prefix, and the op offset the lowest op still
//     needed to rebuild what is above it.
//   - A failed append leaves its halves open (or open and to be searched,
//     when the final message is stored and its op is not): a later END or
//     check-back settles them, never twice.
//
// # Master and slave
//
// Half and op records are CommitLog records like any and replicate with
// it; the progress offsets follow the master to its slaves with the other
// consumer offsets. Only a master has a Service: a slave answers
// END_TRANSACTION with SLAVE_NOT_AVAILABLE (RocketMQ's answer) and checks
// nothing back; a controller-mode replica that is not master now
// (Config.Master) skips its rounds.
//
// # Concurrency
//
// End, ToHalf, IsPrepared and the state behind them are safe for
// concurrent use; no goroutine runs inside but Run's. Run (woken by its
// ticker or by stop) owns the check rounds: only it sends check-backs,
// discards and moves the progress; it returns when stop closes. Log lines
// keep the broker's wording ("broker: ..."), as operators know them.
package txn
