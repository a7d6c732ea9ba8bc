// Package offsets is the broker's committed consumer offsets: the table of
// where each consumer group has read each queue to, its file
// consumerOffset.json, the commits a slave keeps for its master, and the
// rule for where a group without an offset starts. It takes what it needs
// as a Config (a vfs.FS and the config directory, the store behind a
// four-method Store, when a group's run began, the broker's role, a
// clock, a logger) and knows nothing of the broker; the broker decodes
// the requests, checks names and queues against its topics, and calls
// Commit, Query, Start and All; it runs Run with its other loops and
// calls Save(true) at Close.
//
// # Table
//
// An offset is kept per (topic, group, queue) (Key): the next offset the
// group will consume. Commit moves it either way (a consumer resetting
// its offsets moves it back); the broker's own progress offsets (the
// transactions' check progress) go through CommitSystem. The table is
// bounded so that GET_ALL_CONSUMER_OFFSET's answer fits a frame: its JSON,
// estimated generously, stays under Config.MaxBytes; a commit that would
// add a queue past it is refused (ErrTableFull), a queue already there may
// always move, and CommitSystem is never refused. RemoveTopic and
// RemoveGroup forget a deleted topic's or group's offsets.
//
// # Where a group starts
//
// Start answers QUERY_CONSUMER_OFFSET: the committed offset, else 0 for a
// queue that holds nothing stored before the group's current run began
// (start.go says why, and how RocketMQ's rule differs), else not found,
// and the client's consumeFromWhere decides: CONSUME_FROM_LAST_OFFSET
// asks the queue's max offset, CONSUME_FROM_FIRST_OFFSET starts at 0 (the
// first pull is moved to the queue's min offset),
// CONSUME_FROM_TIMESTAMP asks ByTime.
//
// # File
//
// consumerOffset.json is RocketMQ's ConsumerOffsetManager layout, so a
// RocketMQ broker's file loads here and the other way round:
//
//	offsetTable            "topic@group" → queue id → offset: the table
//	slaveLocalOffsetTable  (ours; a slave's only, omitted when empty) the
//	                       same form: the commits made on the slave that
//	                       its master has not taken yet, so that a
//	                       restarted slave still hands them over
//
// Queue ids are written as quoted keys ({"0":5}), valid JSON that
// RocketMQ's fastjson reads too; fastjson writes them bare ({0:5}), which
// Open reads as well. Run saves the table every Config.SaveInterval when
// it changed; each save replaces the file atomically (package
// internal/jsonfile), so a crash leaves the last whole save and loses at
// most the commits since: their consumers read those messages again. A
// file that does not load as a whole is set aside as
// consumerOffset.json.bad-<UTC stamp> and the table starts empty; an entry
// that does not load (a bad name, queue id or offset) is dropped, the
// original kept beside it as a .bad- copy. A file never keeps the broker
// from starting.
//
// # Master and slave
//
// A slave's table is its master's copy, taken every slave sync round
// (Sync with the master's All). A consumer that failed over to the slave
// commits there: with Config.Slave true at the time, the commit is kept
// as local too, and Sync hands it to the master (Push) before it adopts
// the master's table, which never overwrites a local commit the master
// has not taken. A controller-mode replica made master has its local
// commits in its table already and drops them (DropLocal).
//
// # Invariants
//
//   - A refused commit stores nothing; the table's estimated JSON stays
//     under Config.MaxBytes but for CommitSystem's few.
//   - A local commit is forgotten only when the master has it or passed
//     it, or refused it for good (*Refused), and only if no newer commit
//     replaced it meanwhile.
//   - A save that fails leaves the last saved file in place and the table
//     marked changed, so the next save writes it.
//   - Nothing loaded or adopted lacks a topic and a group that pass
//     Config.CheckNames, a queue id >= 0 and an offset >= 0; a commit is
//     checked by its caller (the broker's checkOffsetCommit), and Start
//     never answers a negative offset.
//
// # Concurrency
//
// Every method is safe for concurrent use; saves are serialised. No
// goroutine runs inside but Run's (woken by its ticker or by stop), which
// owns nothing but the periodic save. Log lines keep the broker's wording
// ("broker: ..."), as operators know them.
package offsets
