package offsets

import "time"

// Where a consumer group without a committed offset starts.
//
// RocketMQ's ConsumerManageProcessor.queryConsumerOffset answers a group
// that has no offset for a queue with
//   - QUERY_NOT_FOUND when the request says setZeroIfNotFound=false;
//   - offset 0 when the queue still starts at 0 (minOffset <= 0) and its
//     first message is "in memory" (checkInMemByConsumeOffset(topic,
//     queue, 0, 1): the page cache holds it; false for an empty queue);
//   - QUERY_NOT_FOUND otherwise, and the client applies its
//     consumeFromWhere: LAST → GET_MAX_OFFSET, FIRST → 0, TIMESTAMP →
//     SEARCH_OFFSET_BY_TIMESTAMP.
//
// The in-memory test stands for "the queue is young": a group that
// subscribed before a topic existed (the producer auto-creates it, the
// consumer finds it at its next route refresh, up to 30 s later) reads
// the queue from its first message instead of skipping what was sent
// before its rebalance. It depends on the page cache, so the same group
// on the same data starts at the head on one machine and at the tail on
// another, and a CONSUME_FROM_LAST_OFFSET group on a topic of a few
// hundred MB replays all of it.
//
// Samsa's rule, deterministic, for the same purpose: offset 0 when the
// queue still starts at 0 and holds nothing stored before the group's
// current run began — its first message was stored at or after the
// first heartbeat of the group's first member since the group last had
// none (Config.Born), or the queue is empty. Every message in such a
// queue was sent while the group was there, so the group misses none of
// them whatever its consumeFromWhere. Otherwise QUERY_NOT_FOUND, and the
// client's consumeFromWhere decides. Consequences:
//   - a new group on a topic that already has messages starts where its
//     consumeFromWhere says (RocketMQ's in-memory rule would replay a
//     young topic from 0);
//   - a group that is not live on this broker (no heartbeat, e.g. a pull
//     consumer that never sends one, or right after a broker restart)
//     is never answered 0 for a queue with messages;
//   - an empty queue answers 0 (RocketMQ: QUERY_NOT_FOUND, after which a
//     LAST client asks GET_MAX_OFFSET, which is 0 unless a message came
//     in between; answering 0 closes that gap);
//   - as with RocketMQ's rule, a CONSUME_FROM_TIMESTAMP group whose
//     timestamp lies after its run began reads a young queue from 0, the
//     messages stored between included (the broker does not know the
//     timestamp). Samsa's client asks with setZeroIfNotFound=false and
//     always applies its own start position.

// Start answers QUERY_CONSUMER_OFFSET: group's committed offset for
// (topic, queue); for a group without one, 0 when zero (the request's
// setZeroIfNotFound, true when absent) and the queue holds nothing older
// than the group's run (above). ok false is QUERY_NOT_FOUND: the client's
// consumeFromWhere decides.
func (t *Table) Start(group, topic string, queue int32, zero bool) (off int64, ok bool) {
	if off, ok := t.Query(group, topic, queue); ok && off >= 0 {
		return off, true
	}
	if !zero || !t.startAtZero(group, topic, queue) {
		return 0, false
	}
	return 0, true
}

// startAtZero is the rule above for a group without an offset.
func (t *Table) startAtZero(group, topic string, queue int32) bool {
	st := t.cfg.Store
	if st == nil || st.MinQueueOffset(topic, queue) > 0 {
		return false
	}
	if st.MaxQueueOffset(topic, queue) == 0 {
		return true
	}
	born, live := t.cfg.Born(group)
	if !live {
		return false
	}
	first, err := st.EarliestStoreTime(topic, queue)
	if err != nil {
		return false
	}
	return !time.UnixMilli(first).Before(born.Truncate(time.Millisecond))
}

// ByTime answers SEARCH_OFFSET_BY_TIMESTAMP as RocketMQ 5's
// ConsumeQueue.getOffsetInQueueByTime: LOWER (the default) is the first
// offset stored at or after ts (the queue's max offset when every message
// is older, its min offset when every one is newer); UPPER is the last
// offset stored at or before ts (max-1 when every message is older, 0 when
// every one is newer). An empty queue answers 0 either way.
func ByTime(st Store, topic string, queue int32, ts int64, upper bool) int64 {
	minOff, maxOff := st.MinQueueOffset(topic, queue), st.MaxQueueOffset(topic, queue)
	if maxOff <= minOff {
		return 0
	}
	if !upper {
		return st.OffsetByTime(topic, queue, ts)
	}
	if ts == 1<<63-1 {
		return maxOff - 1
	}
	after := st.OffsetByTime(topic, queue, ts+1) // the first stored after ts
	if after <= minOff {
		return 0
	}
	return after - 1
}
