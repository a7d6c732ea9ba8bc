package broker

import (
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// handleUpdateAndCreateTopic answers UPDATE_AND_CREATE_TOPIC (17): it
// stores the topic's config and registers it with the name servers before
// answering (that topic alone: registrar.topicsChanged), so a client can
// route to the topic as soon as it has the answer. A slave refuses it (its topics are its master's).
func (b *Broker) handleUpdateAndCreateTopic(_ *conn, req *protocol.Command) *protocol.Command {
	if r := b.repl.refuseMetadataOnSlave(req); r != nil {
		return r
	}
	h := &protocol.CreateTopicRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	if h.Topic == b.cfg.BrokerClusterName || h.Topic == AutoCreateTopicKey || b.topics.system[h.Topic] {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("The topic[%s] is conflict with system topic.", h.Topic))
	}
	tc := TopicConfig{TopicName: h.Topic, ReadQueueNums: int(h.ReadQueueNums), WriteQueueNums: int(h.WriteQueueNums),
		Perm: int(h.Perm), TopicFilterType: h.TopicFilterType, TopicSysFlag: int(h.TopicSysFlag), Order: h.Order}
	changed, err := b.topics.update(tc)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	if changed {
		b.log.Info("broker: topic created or updated", "topic", tc.TopicName, "read", tc.ReadQueueNums, "write", tc.WriteQueueNums, "perm", tc.Perm)
		// Its queues' files now, not at each one's first message (on the
		// dispatcher's path). A failure here costs nothing but that: the
		// first message makes them as before.
		if err := b.store.PrepareQueues(tc.TopicName, max(tc.ReadQueueNums, tc.WriteQueueNums)); err != nil {
			b.log.Warn("broker: could not create a new topic's queue files; its first messages will", "topic", tc.TopicName, "err", err)
		}
	}
	// Unchanged too: the request that changed it may still be registering.
	b.reg.topicsChanged()
	return protocol.NewResponse(req, protocol.Success, "")
}

// handleGetAllTopicConfig answers GET_ALL_TOPIC_CONFIG (21): the topic
// table as a TopicConfigSerializeWrapper.
func (b *Broker) handleGetAllTopicConfig(_ *conn, req *protocol.Command) *protocol.Command {
	w := b.topicWrapper()
	body, err := protocol.MarshalBody(w)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	r := respond(req, protocol.Success, "", (&protocol.GetAllTopicConfigResponseHeader{TotalTopicNum: int32(len(w.TopicConfigTable))}).Encode())
	r.Body = body
	return b.ans.bounded(req, r)
}

// handleDeleteTopic answers DELETE_TOPIC_IN_BROKER (215): the topic's
// config and its groups' offsets go (its records stay until retention
// deletes their segments). A slave refuses it.
func (b *Broker) handleDeleteTopic(_ *conn, req *protocol.Command) *protocol.Command {
	if r := b.repl.refuseMetadataOnSlave(req); r != nil {
		return r
	}
	topic := req.Ext("topic")
	if err := ValidateTopic(topic); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	if b.topics.system[topic] {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("The topic[%s] is a system topic and cannot be deleted.", topic))
	}
	removed, err := b.topics.remove(topic)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	if removed {
		b.offsets.RemoveTopic(topic)
		b.reg.topicsChanged()
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

// topicWrapper converts the topic table to the wire form.
func (b *Broker) topicWrapper() protocol.TopicConfigSerializeWrapper {
	table, v := b.topics.snapshot()
	w := protocol.TopicConfigSerializeWrapper{TopicConfigTable: make(map[string]protocol.TopicConfig, len(table)),
		DataVersion: protocol.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter}}
	for name, tc := range table {
		tc.TopicName = name
		w.TopicConfigTable[name] = tc.wire()
	}
	return w
}

// wire is tc in the wire form.
func (tc TopicConfig) wire() protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: tc.TopicName, ReadQueueNums: int32(tc.ReadQueueNums),
		WriteQueueNums: int32(tc.WriteQueueNums), Perm: int32(tc.Perm), TopicFilterType: tc.TopicFilterType,
		TopicSysFlag: int32(tc.TopicSysFlag), Order: tc.Order}
}

// topicFromWire converts one topic of a TopicConfigSerializeWrapper.
func topicFromWire(name string, tc protocol.TopicConfig) TopicConfig {
	return TopicConfig{TopicName: name, ReadQueueNums: int(tc.ReadQueueNums), WriteQueueNums: int(tc.WriteQueueNums),
		Perm: int(tc.Perm), TopicFilterType: tc.TopicFilterType, TopicSysFlag: int(tc.TopicSysFlag), Order: tc.Order}
}
