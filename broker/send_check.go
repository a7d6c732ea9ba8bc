package broker

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/samsamq/samsa/protocol"
)

// sendTarget resolves where a send goes (RocketMQ's
// AbstractSendMessageProcessor.msgCheck): the topic's config, creating the
// topic from the default topic when auto-creation allows, and the queue
// (a random writable one when the client sent a negative id). A non-nil
// response is the refusal.
func (b *Broker) sendTarget(req *protocol.Command, h *protocol.SendMessageRequestHeader) (TopicConfig, int32, *protocol.Command) {
	if err := ValidateTopic(h.Topic); err != nil {
		return TopicConfig{}, 0, protocol.NewResponse(req, protocol.MessageIllegal, err.Error())
	}
	if notSendable(h.Topic) {
		return TopicConfig{}, 0, protocol.NewResponse(req, protocol.NoPermission,
			fmt.Sprintf("Sending message to topic[%s] is forbidden.", h.Topic))
	}
	if h.Topic == AutoCreateTopicKey {
		return TopicConfig{}, 0, protocol.NewResponse(req, protocol.MessageIllegal,
			fmt.Sprintf("the topic[%s] is conflict with system reserved words", h.Topic))
	}
	tc, ok := b.topics.get(h.Topic)
	if !ok {
		var err error
		var created bool
		if strings.HasPrefix(h.Topic, RetryGroupPrefix) {
			tc, created, err = b.topics.createIfMissing(h.Topic, 1, PermRead|PermWrite)
		} else {
			tc, created, err = b.topics.createInSend(h.Topic, h.DefaultTopic, int(h.DefaultTopicQueueNums), 0)
		}
		if err != nil {
			return TopicConfig{}, 0, protocol.NewResponse(req, protocol.TopicNotExist,
				fmt.Sprintf("topic[%s] not exist, apply first please! (%v)", h.Topic, err))
		}
		if created {
			b.log.Info("broker: topic auto-created by a send", "topic", h.Topic, "queues", tc.WriteQueueNums)
			b.reg.topicsChanged()
		}
	}
	if tc.Perm&PermWrite == 0 {
		return tc, 0, protocol.NewResponse(req, protocol.NoPermission,
			fmt.Sprintf("the topic[%s] sending message is forbidden", h.Topic))
	}
	q := h.QueueID
	if q < 0 {
		q = int32(rand.IntN(max(tc.WriteQueueNums, 1)))
	}
	if int(q) >= max(tc.WriteQueueNums, tc.ReadQueueNums) {
		return tc, 0, protocol.NewResponse(req, protocol.SystemError,
			fmt.Sprintf("request queueId[%d] is illegal, topic %s has %d write and %d read queues",
				q, h.Topic, tc.WriteQueueNums, tc.ReadQueueNums))
	}
	return tc, q, nil
}
