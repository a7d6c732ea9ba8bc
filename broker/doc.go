// Package broker is Samsa's broker: the server that stores messages in a
// storage.Store and speaks RocketMQ 4.x's remoting protocol, so the official
// RocketMQ clients produce and consume against it unmodified.
//
// # Shape
//
// A Broker (New, Start, Addr, AdminAddr, Close) owns one listener, one
// storage.Store, the name-server registrar and the admin HTTP listener. Each
// accepted connection gets one reader goroutine (frames in) and one writer
// goroutine (frames out: every queued frame's header encoded into one
// buffer, pull bodies left where the store read them, one writev per
// batch). Each request runs on its own goroutine, bounded by a per-broker
// semaphore, so a send waiting for a sync flush never stops the pipeline
// behind it. A first byte that is an ASCII letter turns the connection into
// a text connection (stats, version, quit; see text.go).
//
// Request codes map to handlers, one small file each (handle_*.go; the
// requests mqadmin sends to inspect a broker or reset a group, in
// mqadmin_*.go; the table in handlers.go). The HTTP listener (metrics,
// dashboard, pprof; adminListen) is http_listener.go. A code without a
// handler gets REQUEST_CODE_NOT_SUPPORTED; a frame that cannot be
// decoded closes only its own connection. With aclEnable=true every request
// is checked before its handler runs (acl.go, package acl).
//
// Where RocketMQ's behaviour depends on something this broker does not
// have, or is more than a line, a file says what RocketMQ does and what
// Samsa does instead: offsets/start.go (where a group without an offset
// starts), filter_sql.go (SQL92 subscriptions, enablePropertyFilter),
// batch_limits.go (what a batch may weigh and how long its answer may be).
//
// # State
//
// The managers are plain state holders, safe for concurrent use and free of
// goroutines, driven by the Broker's loops with an injected clock:
//   - topicManager: topic configs, auto-creation, topics.json;
//   - clientManager: producer and consumer groups learned from heartbeats,
//     channel expiry after ClientChannelMaxIdle;
//   - lockManager: the orderly consumer's queue locks (LOCK_BATCH_MQ);
//   - holder: long-poll pulls waiting for a message, woken from
//     Store.OnDispatch and expired by deadline;
//   - groupManager: subscription group configs, subscriptionGroup.json.
//
// # Consumer offsets
//
// Package offsets holds them, behind a small Config (offsets_wiring.go
// builds it): the committed offset of each group on each queue, kept in
// config/consumerOffset.json (saved every flushConsumerOffsetInterval and
// at Close), where a group without one starts (QUERY_CONSUMER_OFFSET), and
// on a slave the commits made there until its master has them
// (slave_sync.go hands them over). The broker decodes the requests and
// checks names and queues against its topics (handle_offsets.go).
//
// # Transactions
//
// Package txn holds them, behind a small Config (txn_wiring.go builds it
// on a master). A prepared send is stored as a half message in
// RMQ_SYS_TRANS_HALF_TOPIC; END_TRANSACTION (handle_txn_end.go) commits it
// to its real topic or rolls it back, each settled by one op record in
// RMQ_SYS_TRANS_OP_HALF_TOPIC, at most once; a half left open is checked
// back with its producer group (CHECK_TRANSACTION_STATE) every
// transactionCheckInterval and discarded after transactionCheckMax checks.
// The state of the open halves is rebuilt at start from the check
// progress (CID_RMQ_SYS_TRANS's consumer offsets) and the op queue.
//
// # POP consumption
//
// Package pop holds it, behind a small Config (pop_wiring.go builds it on
// a master): RocketMQ 5's POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE and
// CHANGE_MESSAGE_INVISIBLETIME (handle_pop.go), the in-flight state in a
// write-ahead file under StorePathRootDir/pop. The rest of the POP family
// answers REQUEST_CODE_NOT_SUPPORTED; a group that consumes a topic by
// POP is refused a pull of it, and the other way round.
//
// # Delayed delivery
//
// Package delay holds it, behind a small Config (delay_wiring.go builds
// it). A send with DELAY=n (n > 0) is stored in SCHEDULE_TOPIC_XXXX queue
// n-1 with REAL_TOPIC/REAL_QID; one loop per level delivers it to its
// topic when store time + the level's delay (messageDelayLevel) has
// passed, and saves each level's progress in config/delayOffset.json. A
// send with TIMER_DELIVER_MS, TIMER_DELAY_SEC or TIMER_DELAY_MS is stored
// in rmq_sys_wheel_timer and delivered at its time from a disk timing
// wheel under StorePathRootDir/timerwheel/. CONSUMER_SEND_MSG_BACK goes
// through the schedule topic at level 3 + reconsume times unless the
// client names one. After a clean stop nothing is delivered twice; after a
// crash, what was delivered since the last save may be delivered again
// (at least once); nothing is lost. Only a master runs these loops: the
// two topics replicate with the CommitLog, a slave copies delayOffset.json
// and the timer progress from its master, and the timer files are rebuilt
// from the timer topic on a broker that lacks them.
//
// Files under StorePathRootDir/config/ are written atomically (temp file,
// fsync, rename, fsync the directory) through storage/vfs.
//
// # Master and slave
//
// The replication wiring is one struct, Replication (ha.go): the ends of
// the replication link, the master a slave follows, controller mode and
// the slave's metadata sync. openReplication (ha_wiring.go) builds it in
// New from a small replDeps (config, store, logger, hooks and callbacks;
// never the *Broker), and Broker.Replication hands it to callers outside
// the package.
//
// brokerRole is ASYNC_MASTER or SYNC_MASTER (brokerId 0) or SLAVE
// (brokerId 1 or more, the same brokerName as its master). What a role
// means here, apart from the CommitLog bytes the replication link ships
// (package ha, attached through the hooks in ha.go):
//   - A slave registers under its id with its HA address; the name
//     server's answer names its master (remoting and HA addresses), unless
//     haMasterAddress fixes the latter (register.go, ha.go).
//   - A slave refuses sends (SERVICE_NOT_AVAILABLE), send-back, and topic
//     and group changes, and never creates a topic (slave.go). It serves
//     pulls, long polls and offset queries from its own store; it never
//     moves a consumer's offset and ignores a pull's commit flag.
//   - A slave runs no delayed delivery; it copies its master's delay
//     offsets and timer progress, so a slave later run as master on its
//     store delivers what was pending and not again what was delivered
//     before the last copy (slave_sync_delay.go).
//   - A slave copies its master's topics, consumer offsets and
//     subscription groups every slaveSyncInterval; offsets committed to it
//     while the master is away are handed to the master first
//     (slave_sync.go).
//   - Pull answers suggest the broker for the queue's next pull
//     (pull_route.go): a slave when slaveReadEnable is on and the consumer
//     reads far behind the tail, else the master.
//   - A SYNC_MASTER answers a send only once its slaves hold the record.
//     Under async flush the connection's reader appends the send inline
//     and hands the answer to the replication link
//     (replicator.WaitReplicatedFunc): the slave acknowledgement that
//     covers it queues it for the writer (conn_inline.go, replicated).
//     Under sync flush the worker that waited for the flush then waits
//     for the slaves (replicator.WaitReplicated). Without a replicator it
//     answers SLAVE_NOT_AVAILABLE.
//
// With enableControllerMode the fail-over controller decides the role at
// runtime (controller_mode*.go): brokerId is the replica's id, the master
// registers as 0, a replica that may not write behaves as a slave above
// (its store fenced too), and role changes start and stop the replication
// link's ends; while not master it copies the master's tables and hands
// offsets committed to it to the master, as a slave does. Not yet switched
// at runtime there: delayed delivery and the timer run on every replica
// (fenced appends are retried while not master).
//
// # Long-lived goroutines
//
// accept loop (one; ends when the listener closes), per connection a reader
// and a writer (end when the connection closes), the long-poll timer (woken
// by the earliest hold deadline or a new earlier one), the registrar (every
// RegisterNameServerPeriod or on a topic change), the offset saver (every
// FlushConsumerOffsetInterval; package offsets), the client scanner (every 10 s) and the
// admin HTTP server, and on a slave the metadata sync (every
// SlaveSyncInterval, or when the name server names a new master), and on a
// master the transaction check service (every transactionCheckInterval),
// the delay-level loops, their saver and the timer loop (package delay,
// under one loop of the broker's), and in controller mode the controller
// heartbeat loop (every brokerHeartbeatInterval; controller_mode_run.go).
// Close stops them in that order of dependency.
package broker
