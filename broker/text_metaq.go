package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	bmetaq "github.com/samsamq/samsa/broker/metaq"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/protocol/metaq"
	"github.com/samsamq/samsa/storage"
)

// MetaQ's text protocol (package broker/metaq) is wired here: the
// dependencies its Server takes, never the broker itself.

// maxTextGetExtra is what a text get's maxSize may exceed maxMessageSize
// by (the message-set header and attribute), so that the largest message
// can always be read whole.
const maxTextGetExtra = 64 << 10

// textLimits bounds what a text request may make the broker allocate.
func (b *Broker) textLimits() metaq.Limits {
	return metaq.Limits{MaxValue: b.cfg.MaxMessageSize, MaxGetSize: int32(max(maxPullBytes, b.cfg.MaxMessageSize+maxTextGetExtra))}
}

// newMetaQ builds the text protocol's server over the broker's store,
// topics and replication.
func (b *Broker) newMetaQ() *bmetaq.Server {
	var half func(*storage.Message, string) (storage.AppendResult, *bmetaq.Refusal)
	if b.txn != nil {
		half = b.metaqAppendHalf
	}
	return bmetaq.New(bmetaq.Deps{
		AppendHalf: half,
		Store:      b.store,
		Append:     b.metaqAppend,
		PutQueue:   b.metaqPutQueue,
		Readable:   b.metaqReadable,
		Now:        b.cfg.Clock,
		Log:        b.log,
		OnPut:      func(topic string, n int) { b.stats.put(topic, 1, n) },
		OnGet:      func(topic string, msgs, n int) { b.stats.get(topic, msgs, n) },
	})
}

// metaqAppend stores a queue's batch of text puts as a send stores a
// batch: in one store append (one fsync under sync flush), then the slaves
// on a SYNC_MASTER. Nothing is stored unless every message is.
func (b *Broker) metaqAppend(msgs []*storage.Message) ([]storage.AppendResult, *bmetaq.Refusal) {
	for _, m := range msgs {
		m.StoreHost = b.storeHost
	}
	res, err := b.store.AppendBatch(context.Background(), msgs)
	stored := len(res) == len(msgs) && len(res) > 0 && res[0].Size > 0 && (err == nil || errors.Is(err, storage.ErrFlushTimeout))
	if !stored {
		b.stats.sendErrors.Add(1)
		if err == nil {
			err = errors.New("the store took nothing")
		}
		return nil, &bmetaq.Refusal{Code: metaqCode(err), Msg: "store error: " + err.Error()}
	}
	var ref *bmetaq.Refusal
	if err != nil {
		b.stats.flushTimeout.Add(1)
		ref = &bmetaq.Refusal{Code: metaq.GatewayTimeout, Msg: "stored, but not flushed to disk within syncFlushTimeout " + b.cfg.SyncFlushTimeout.String()}
	}
	if b.cfg.BrokerRole == SyncMaster {
		if code, remark := b.repl.replicaStatus(res); code != protocol.Success {
			ref = &bmetaq.Refusal{Code: metaq.GatewayTimeout, Msg: "stored, but not on the slaves: " + remark}
		}
	}
	return res, ref
}

// metaqCode is MetaQ's code for a store error that stored nothing.
func metaqCode(err error) int {
	switch {
	case errors.Is(err, storage.ErrMessageTooLarge), errors.Is(err, storage.ErrInvalidMessage):
		return metaq.BadRequest
	case errors.Is(err, storage.ErrDiskFull), errors.Is(err, storage.ErrClosed), errors.Is(err, storage.ErrFenced),
		errors.Is(err, storage.ErrResourceBusy):
		return metaq.ServiceUnavailable
	}
	return metaq.InternalServerError
}

// metaqPutQueue checks a put's topic (creating it as a send would) and
// picks its queue: the partition, or a random one for -1.
func (b *Broker) metaqPutQueue(topic string, partition int32) (int32, *bmetaq.Refusal) {
	if b.repl.isSlave() {
		return 0, &bmetaq.Refusal{Code: metaq.ServiceUnavailable, Msg: slaveSendRemark}
	}
	if err := ValidateTopic(topic); err != nil {
		return 0, &bmetaq.Refusal{Code: metaq.BadRequest, Msg: err.Error()}
	}
	if notSendable(topic) || topic == AutoCreateTopicKey {
		return 0, &bmetaq.Refusal{Code: metaq.Forbidden, Msg: fmt.Sprintf("Sending message to topic[%s] is forbidden.", topic)}
	}
	tc, created, err := b.topics.createInSend(topic, AutoCreateTopicKey, b.cfg.DefaultTopicQueueNums, 0)
	if err != nil {
		return 0, &bmetaq.Refusal{Code: metaq.NotFound, Msg: fmt.Sprintf("topic[%s] not exist, apply first please! (%v)", topic, err)}
	}
	if created {
		b.log.Info("broker: topic auto-created by a text put", "topic", topic, "queues", tc.WriteQueueNums)
		b.reg.topicsChanged()
	}
	if tc.Perm&PermWrite == 0 {
		return 0, &bmetaq.Refusal{Code: metaq.Forbidden, Msg: fmt.Sprintf("the topic[%s] sending message is forbidden", topic)}
	}
	if partition < 0 {
		return int32(rand.IntN(max(tc.WriteQueueNums, 1))), nil
	}
	if int(partition) >= tc.WriteQueueNums {
		return 0, &bmetaq.Refusal{Code: metaq.Forbidden, Msg: fmt.Sprintf("partition %d of topic %s is not writable: the topic has %d write queues",
			partition, topic, tc.WriteQueueNums)}
	}
	return partition, nil
}

// metaqReadable checks a get's or offset's topic and partition.
func (b *Broker) metaqReadable(topic string, partition int32) *bmetaq.Refusal {
	tc, ok := b.topics.get(topic)
	if !ok || int(partition) >= tc.ReadQueueNums {
		return &bmetaq.Refusal{Code: metaq.NotFound, Msg: fmt.Sprintf("The topic `%s` in partition `%d` is not exists", topic, partition)}
	}
	if tc.Perm&PermRead == 0 {
		return &bmetaq.Refusal{Code: metaq.Forbidden, Msg: fmt.Sprintf("the topic[%s] pulling message is forbidden", topic)}
	}
	return nil
}
