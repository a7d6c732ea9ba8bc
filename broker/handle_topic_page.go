package broker

import (
	"encoding/json"
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// handleTopicPage answers a GET_ALL_TOPIC_CONFIG that carries
// samsaPageBytes (protocol/body_topic_page.go): the changes since the
// sender's cursor when this run holds them, nothing when the sender's
// dataVersion is the table's, else a page of the table in name order.
// The page's size is the request's, clamped to [MinTopicPageBytes, the
// answer limit], so no request makes the broker build more than a frame.
func (b *Broker) handleTopicPage(req *protocol.Command) *protocol.Command {
	var h protocol.TopicPageRequestHeader
	if r := decodeHeader(req, &h); r != nil {
		return r
	}
	if h.HasAfter && h.After != "" && len(h.After) > MaxTopicLength {
		return protocol.NewResponse(req, protocol.InvalidParameter,
			fmt.Sprintf("%s is longer than a topic name (%d)", protocol.TopicPageAfterField, MaxTopicLength))
	}
	budget := min(max(int(h.MaxBytes), protocol.MinTopicPageBytes), b.ans.limit())
	if !h.HasAfter {
		if d, ok := b.topics.delta(h.Since); ok && len(d.puts)+len(d.deleted) < recentCap {
			return b.topicDeltaAnswer(req, d)
		}
		if h.DataVersion != "" {
			var dv protocol.DataVersion
			if err := json.Unmarshal([]byte(h.DataVersion), &dv); err != nil {
				return protocol.NewResponse(req, protocol.InvalidParameter, "dataVersion: "+err.Error())
			}
			// The version and the seq are read apart; a change between
			// them shows in the next delta, since the seq is older.
			seq := b.topics.seq()
			if v := b.topics.version(); v.Timestamp == dv.Timestamp && v.Counter == dv.Counter {
				return b.topicDeltaAnswer(req, topicDelta{seq: seq, total: b.topics.count(), version: v})
			}
		}
	}
	p, err := b.topics.page(h.After, budget)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	hdr := protocol.TopicPageResponseHeader{TotalTopicNum: int32(p.total), Kind: protocol.TopicPageKindPage,
		More: p.more, Next: p.next, Seq: b.topics.cursor(p.seq)}
	r := respond(req, protocol.Success, "", hdr.Encode())
	r.Body = p.body
	return b.ans.bounded(req, r)
}

// topicDeltaAnswer is a delta answer of the paged GET_ALL_TOPIC_CONFIG.
func (b *Broker) topicDeltaAnswer(req *protocol.Command, d topicDelta) *protocol.Command {
	w := protocol.TopicConfigPage{TopicConfigTable: make(map[string]protocol.TopicConfig, len(d.puts)), DeletedTopics: d.deleted,
		DataVersion: protocol.DataVersion{Timestamp: d.version.Timestamp, Counter: d.version.Counter}}
	for _, tc := range d.puts {
		w.TopicConfigTable[tc.TopicName] = tc.wire()
	}
	body, err := protocol.MarshalBody(w)
	if err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	hdr := protocol.TopicPageResponseHeader{TotalTopicNum: int32(d.total), Kind: protocol.TopicPageKindDelta, Seq: b.topics.cursor(d.seq)}
	r := respond(req, protocol.Success, "", hdr.Encode())
	r.Body = body
	return b.ans.bounded(req, r)
}
