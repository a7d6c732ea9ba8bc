package broker

import (
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// MaxTopicBatch bounds the topics of one UPDATE_AND_CREATE_TOPIC_LIST.
const MaxTopicBatch = 1 << 16

// handleUpdateAndCreateTopicList answers UPDATE_AND_CREATE_TOPIC_LIST
// (18): several topics' configs (a CreateTopicListRequestBody), checked
// all before any is stored, saved once, and registered with the name
// servers at once before the answer (the changed topics alone), as
// RocketMQ's registerIncrementBrokerData does for a batch. A slave refuses
// it.
func (b *Broker) handleUpdateAndCreateTopicList(_ *conn, req *protocol.Command) *protocol.Command {
	if r := b.repl.refuseMetadataOnSlave(req); r != nil {
		return r
	}
	var body protocol.CreateTopicListRequestBody
	if err := protocol.UnmarshalBody(req.Body, &body); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	if len(body.TopicConfigList) > MaxTopicBatch {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("%d topics in one batch, at most %d", len(body.TopicConfigList), MaxTopicBatch))
	}
	tcs := make([]TopicConfig, len(body.TopicConfigList))
	for i, w := range body.TopicConfigList {
		if w.TopicName == b.cfg.BrokerClusterName {
			return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("The topic[%s] is conflict with system topic.", w.TopicName))
		}
		tcs[i] = topicFromWire(w.TopicName, w)
	}
	changed, err := b.topics.updateList(tcs)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	if len(changed) > 0 {
		b.log.Info("broker: topics created or updated", "topics", len(changed), "first", changed[0].TopicName)
	}
	for _, tc := range changed {
		prepareQueues(b.store, b.log, tc)
	}
	if err := b.reg.registerChanges(); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "topics stored, but "+err.Error())
	}
	return protocol.NewResponse(req, protocol.Success, "")
}
