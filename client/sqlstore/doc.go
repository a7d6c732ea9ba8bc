// Package sqlstore keeps a consumer group's offsets in a database through
// database/sql, and consumes with exactly-once processing into that
// database: the application's writes for a batch of messages and the
// batch's offset commit in one database transaction, so "processed" and
// "offset committed" are one fact.
//
// Two databases are supported, with the same SQL: SQLite (OpenSQLite,
// the pure-Go modernc.org/sqlite driver, nothing to install) as the
// embedded default for a single process, and PostgreSQL (OpenPostgres,
// the pgx driver) for a store shared by the members of a group.
//
// # Table
//
// NewStore creates, when missing, one table (default "samsa_offsets"):
//
//	column         type     why
//	consumer_group TEXT     offsets are a group's
//	topic          TEXT     }
//	broker         TEXT     } the queue (client.MessageQueue)
//	queue_id       INTEGER  }
//	next_offset    BIGINT   the offset of the next message to consume
//
// with the first four as the primary key.
//
// # Exactly once
//
// ExactlyOnce reads queues from their stored offsets and hands each batch
// to the application's TxHandler inside a transaction it opened; then, in
// the same transaction, it moves the stored offset from where the batch
// began to where it ends, as a compare-and-set: an UPDATE that names the
// old offset (an INSERT that must not conflict, the first time). Only then
// does it commit. A crash anywhere leaves both the application's rows and
// the offset as they were, or both moved; and a second consumer reading
// the same queue (a zombie after a rebalance) finds the offset moved, its
// transaction rolled back, and starts again from the stored offset: each
// message's effects are committed exactly once.
//
// Store, ExactlyOnce and their methods are safe for concurrent use.
package sqlstore
