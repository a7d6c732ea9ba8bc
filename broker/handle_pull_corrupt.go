package broker

import (
	"fmt"
	"sync"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// A pull that starts at a corrupt record.
//
// First the broker tries to repair it from a peer replica (package
// broker/repair; see corruptAnswer). When none can supply it:
//
// The store serves no record that fails its checks: a pull over one gets
// the records before it (SUCCESS, nextBeginOffset at the corrupt one), and
// a pull starting at it gets a *storage.CorruptRecordError. That pull is
// answered as RocketMQ answers an offset the consumer must leave:
// PULL_OFFSET_MOVED with nextBeginOffset just past the record and a remark
// naming topic, queue, queue offset and physical offset. Both clients then
// continue from nextBeginOffset: ours (client.PullOffsetIllegal) moves its
// queue there and commits; the official Go client (v2 push and pull
// consumers, PullOffsetIllegal) drops the process queue, waits 10 s, stores
// and persists nextBeginOffset, and the next rebalance resumes from it. A
// held (long-poll) pull is answered by the same pullOnce, so the same way.
// Each such answer is counted (stats.corruptSkips): a consumer group
// skipped a message it will never get.

// corruptAnswer answers a pull that starts at the corrupt record ce. While
// the repairer may still fetch a healthy copy from a peer replica
// (repair.Repairer.Pending) the pull is not moved past it: it gets
// PULL_RETRY_IMMEDIATELY at the same offset (both clients pull again from
// nextBeginOffset), and the repairer is woken. Only a record no peer
// could supply is skipped.
func (b *Broker) corruptAnswer(pc *pullCtx, res storage.GetResult, ce *storage.CorruptRecordError) outFrame {
	h := pc.h
	if b.repair.Pending(ce.PhysOffset) {
		b.repair.Kick()
		b.stats.corruptWaits.Add(1)
		rh := protocol.PullMessageResponseHeader{NextBeginOffset: ce.QueueOffset, MinOffset: res.MinOffset, MaxOffset: res.MaxOffset}
		remark := fmt.Sprintf("CORRUPT_RECORD: topic %s queue %d queue offset %d physical offset %d is corrupt here; "+
			"being repaired from a peer replica, pull again", ce.Topic, ce.QueueID, ce.QueueOffset, ce.PhysOffset)
		return outFrame{cmd: respond(pc.req, protocol.PullRetryImmediately, remark, rh.Encode())}
	}
	next := ce.QueueOffset + 1
	rh := protocol.PullMessageResponseHeader{NextBeginOffset: next, MinOffset: res.MinOffset, MaxOffset: res.MaxOffset}
	remark := fmt.Sprintf("CORRUPT_RECORD: topic %s queue %d queue offset %d physical offset %d is corrupt and not served; moved to %d (%v)",
		ce.Topic, ce.QueueID, ce.QueueOffset, ce.PhysOffset, next, ce.Err)
	b.stats.corruptSkips.Add(1)
	b.log.Warn("broker: pull moved past a corrupt record", "group", h.ConsumerGroup, "topic", ce.Topic, "queue", ce.QueueID,
		"queueOffset", ce.QueueOffset, "physOffset", ce.PhysOffset, "next", next)
	return outFrame{cmd: respond(pc.req, protocol.PullOffsetMoved, remark, rh.Encode())}
}

// noteReadError reports a pull the store could not read (a segment file
// truncated or removed behind the store's back, an I/O error): counted
// (stats.readErrors, samsa_broker_pull_read_errors_total) and logged at
// Error, once a minute per distinct error, so a consumer that stalls on it
// is never silent on the broker's side.
func (b *Broker) noteReadError(topic string, queueID int32, queueOffset int64, err error) {
	b.stats.readErrors.Add(1)
	if b.stats.readErrNote.due(err.Error(), time.Now(), time.Minute) {
		b.log.Error("broker: a pull could not read the store", "topic", topic, "queue", queueID, "queueOffset", queueOffset,
			"err", err, "pullReadErrors", b.stats.readErrors.Load())
	}
}

// noteLimiter lets one note through per distinct text and period.
type noteLimiter struct {
	mu   sync.Mutex
	text string
	at   time.Time
}

// due reports whether a note with this text may be logged at now.
func (n *noteLimiter) due(text string, now time.Time, every time.Duration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if text == n.text && now.Sub(n.at) < every {
		return false
	}
	n.text, n.at = text, now
	return true
}
