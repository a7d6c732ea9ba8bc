package broker

import "github.com/samsamq/samsa/protocol"

// handleGetTopicConfig answers GET_TOPIC_CONFIG (351): one topic's config
// (RocketMQ 5's TopicConfigAndQueueMapping; Samsa has no static-topic
// queue mapping, so the config's fields alone), TOPIC_NOT_EXIST when the
// broker has none. An admin reads one topic this way where
// GET_ALL_TOPIC_CONFIG's one-frame answer no longer holds the table.
func (b *Broker) handleGetTopicConfig(_ *conn, req *protocol.Command) *protocol.Command {
	topic := req.Ext("topic")
	tc, ok := b.topics.get(topic)
	if !ok {
		return protocol.NewResponse(req, protocol.TopicNotExist, "No topic in this broker. topic: "+topic)
	}
	tc.TopicName = topic
	return protocol.NewBodyResponse(req, tc.wire())
}
