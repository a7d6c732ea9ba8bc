package broker

import (
	"fmt"
	"log/slog"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
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
		prepareQueues(b.store, b.log, tc)
	}
	// Unchanged too: the request that changed it may still be registering.
	if err := b.reg.registerChanges(); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "topic stored, but "+err.Error())
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

// prepareQueuesFrom is the queue count from which a topic gets its
// queues' ConsumeQueue files at creation rather than at each queue's first
// message. Making them at creation keeps a wide topic's first messages off
// the dispatcher's path (10,000 new queues cost it ~8 s of mkdir and
// create, in queues-scaling's measured window); but a file and two
// directories a queue at creation made every create cost them, and every
// start open them, written to or not: metadata-scale's quick form (100,000
// topics of 1 queue, 16 clients, 2 shared and loaded cores) ran its last
// 10,000 creates at 942/s with them and 3,180/s without, and restarted
// the broker in 38 s with them and 5 s without. A narrow topic costs no
// file until it is written.
const prepareQueuesFrom = 64

// prepareQueues makes a new topic's queue files when it is wide
// (prepareQueuesFrom). A failure costs nothing but that: the first
// message makes them as before.
func prepareQueues(st *storage.Store, log *slog.Logger, tc TopicConfig) {
	n := max(tc.ReadQueueNums, tc.WriteQueueNums)
	if n < prepareQueuesFrom {
		return
	}
	if err := st.PrepareQueues(tc.TopicName, n); err != nil {
		log.Warn("broker: could not create a new topic's queue files; its first messages will", "topic", tc.TopicName, "err", err)
	}
}

// handleGetAllTopicConfig answers GET_ALL_TOPIC_CONFIG (21): the topic
// table as a TopicConfigSerializeWrapper in one frame, as RocketMQ does
// (SYSTEM_ERROR saying so when it would not fit one); asked with
// samsaPageBytes, in pages and deltas (handle_topic_page.go).
func (b *Broker) handleGetAllTopicConfig(_ *conn, req *protocol.Command) *protocol.Command {
	if _, paged := req.ExtFields[protocol.TopicPageBytesField]; paged {
		return b.handleTopicPage(req)
	}
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
