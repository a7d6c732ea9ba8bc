// Package delay is the broker's delayed delivery: RocketMQ's delay levels
// (SCHEDULE_TOPIC_XXXX) and its timer messages (rmq_sys_wheel_timer and a
// disk timing wheel). It takes what it needs as a Config (the store behind
// a six-method Store, a vfs.FS, a clock, a logger, a counter callback) and
// knows nothing of the broker; the broker builds the Config, registers
// OnDispatch with its store, calls Defer on every send, runs Run with its
// other loops and Close after them.
//
// # Sending
//
// Defer rewrites a message about to be stored (RocketMQ's
// HookUtils.handleScheduleMessage): DELAY=n (n > 0) goes to ScheduleTopic
// queue n-1 (n above the table's last is the last) with DELAY=n; a
// TIMER_DELAY_SEC, TIMER_DELAY_MS or TIMER_DELIVER_MS in the future goes
// to TimerTopic queue 0 with TIMER_OUT_MS, its exact due time. Either way
// REAL_TOPIC and REAL_QID keep the message's own topic and queue. A delay
// level wins over timer properties, which are dropped; prepared and
// rolled-back transaction messages and dead letters are left alone.
//
// # Delivery
//
// A level's messages fall due in the order they were stored (its queue
// holds one delay), so its loop waits on the head only: once the head's
// store time plus the level's delay has passed it appends a copy to
// REAL_TOPIC/REAL_QID (DELAY and the timer properties removed, REAL_TOPIC
// and REAL_QID kept, as RocketMQ keeps them) and moves past it. Timers go
// through the wheel (package internal/timerwheel): enqueued into the slot
// of their time, read when the slot's span begins, each delivered at its
// own time with its timer properties kept, REAL_TOPIC and REAL_QID
// removed, TIMER_ENQUEUE_MS and TIMER_DEQUEUE_MS added. A copy keeps the
// body, flag, sysflag, hosts, born time and reconsume count. Invariants:
//
//   - Nothing is delivered before its time by Config.Now (a deliver time
//     further than one delay ahead, a clock stepped back, is taken as now,
//     as RocketMQ's correctDeliverTimestamp).
//   - Progress saved never skips a copy a crash could take back: the
//     delivered copies are flushed (Store.FlushTo) before the offsets or
//     the checkpoint past them are written. After Close nothing is
//     delivered twice; after a crash what was delivered since the last
//     save may be delivered again (at least once); nothing is lost.
//   - A store that refuses an append (fenced in controller mode, full)
//     moves no progress: the same records are tried again.
//
// # Files
//
//	ConfigDir/delayOffset.json      each level's next queue offset (Offsets,
//	                                RocketMQ's DelayOffsetSerializeWrapper),
//	                                saved every SaveInterval and at Close
//	ConfigDir/timerCheckpoint.json  a slave's copy of its master's timer
//	                                progress (lastReadTimeMs,
//	                                masterTimerQueueOffset)
//	TimerDir/                       the wheel: timerlog/, timerwheel,
//	                                timercheck (package timerwheel), made on
//	                                the first timer message
//
// The JSON files are written atomically and loaded tolerantly (package
// internal/jsonfile): a file that does not load is set aside, never a
// reason not to start.
//
// # Master and slave
//
// Only a master runs the loops. The schedule and timer topics replicate
// with the CommitLog; the timer files do not. A slave copies its master's
// level offsets (AdoptOffsets, from GET_ALL_DELAY_OFFSET) and timer
// progress (AdoptTimerCheckpoint, from GET_TIMER_CHECK_POINT); run as
// master on its store later, it resumes the levels near where the master
// was and builds its wheel from the timer topic, skipping what the old
// master had delivered.
//
// # Concurrency
//
// Defer, OnDispatch, Offsets, Stats and TimerCheckpoint are safe for
// concurrent use with everything. Run starts one goroutine per level
// (woken by a dispatch into its queue, by its head's due time, or by
// stop), the saver (every SaveInterval) and the timer loop (woken by a
// dispatch into the timer topic or by the next due time), and returns
// once they all have; each loop owns its level's offset or the wheel.
// Close runs after Run has returned. Log lines keep the broker's wording
// ("broker: ..."), as operators know them.
package delay
