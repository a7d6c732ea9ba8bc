package broker

import (
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Where a consumer should pull next: every pull answer carries
// suggestWhichBrokerId, which RocketMQ's clients (and ours) follow on the
// queue's next pull when the route has that broker.
//
//   - Without slaveReadEnable: 0, the master, on a master and on a slave
//     alike (a slave still serves the pull; the next one goes back to the
//     master if the route has it).
//   - With slaveReadEnable: the subscription group's
//     whichBrokerWhenConsumeSlowly (default 1) when the pull read far
//     behind the CommitLog's end, else the group's brokerId (default 0):
//     RocketMQ's PullMessageProcessor, on a master and on a slave.
//
// "Far behind" is DefaultMessageStore.getMessage's isSuggestPullingFromSlave:
// the CommitLog's end minus the physical offset of the last record read
// is more than accessMessageInMemoryMaxRatio percent of
// totalPhysicalMemorySize (the data is no longer in the page cache, so
// disk reads move to a slave). RocketMQ also says "far" for a pull that
// found nothing matching (it measures from offset 0 then); here a pull that
// returns no record is never far behind.

// suggestBroker is the broker id a pull answer suggests.
func (b *Broker) suggestBroker(group string, res *storage.GetResult) int64 {
	if !b.cfg.SlaveReadEnable {
		return protocol.MasterID
	}
	g := b.groups.find(group)
	if b.farBehind(res) {
		return g.WhichBrokerWhenConsumeSlowly
	}
	return g.BrokerID
}

// farBehind reports whether the last record res read lies more than the
// in-memory share behind the CommitLog's end.
func (b *Broker) farBehind(res *storage.GetResult) bool {
	if res.Status != storage.Found || len(res.QueueOffsets) == 0 {
		return false
	}
	last := res.Files.LastPhys
	if len(res.Records) > 0 {
		last = record.PhysOffsetOf(res.Records[len(res.Records)-1])
	}
	return b.store.WrittenOffset()-last > b.cfg.inMemoryBytes()
}

// slaveOutOfRange turns, on a slave, an answer that would move the
// consumer (PULL_OFFSET_MOVED: the slave holds less than the consumer's
// offset implies, or not yet) into PULL_NOT_FOUND at the offset asked
// for, suggesting the group's broker (the master by default). RocketMQ's
// slave does not correct offsets either (offsetCheckInSlave false) but
// answers PULL_RETRY_IMMEDIATELY, which a consumer whose master is gone
// repeats at once, in a loop; PULL_NOT_FOUND is held like any empty pull,
// so the consumer waits for the slave to catch up or the master to return.
func (b *Broker) slaveOutOfRange(code int32, h *protocol.PullMessageRequestHeader, rh *protocol.PullMessageResponseHeader) int32 {
	if !b.repl.isSlave() || code != protocol.PullOffsetMoved {
		return code
	}
	rh.NextBeginOffset = h.QueueOffset
	rh.SuggestWhichBrokerID = b.groups.find(h.ConsumerGroup).BrokerID
	return protocol.PullNotFound
}
