package broker

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/samsamq/samsa/broker/dashboard"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Messages searches this broker's store.
func (s dashboardSource) Messages(q dashboard.MessageQuery) ([]dashboard.StoredMessage, error) {
	switch {
	case q.ID != "":
		return s.byID(q.Topic, q.ID)
	case q.Key != "":
		ms, err := s.byKey(q.Topic, q.Key, record.PropertyKeys)
		if err == nil && len(ms) == 0 {
			err = dashboard.NotFound("no message of topic %s with key %q on this broker", q.Topic, q.Key)
		}
		return ms, err
	}
	return s.byOffset(q.Topic, q.Queue, q.Offset, q.N)
}

// byID looks id up as an offset message id of this broker, then as a
// producer's id in topic's key index (every topic's when topic is "").
func (s dashboardSource) byID(topic, id string) ([]dashboard.StoredMessage, error) {
	b := s.b
	if host, off, err := protocol.ParseOffsetMsgID(id); err == nil && host == b.storeHost {
		if rec, _, err := readRecord(b.store, off); err == nil && (topic == "" || string(rec.Topic) == topic) {
			return []dashboard.StoredMessage{stored(rec)}, nil
		}
	}
	topics := []string{topic}
	if topic == "" {
		topics = b.topics.names()
	}
	for _, t := range topics {
		if _, ok := b.topics.get(t); !ok && topic == "" {
			continue // deleted since the listing
		}
		if ms, err := s.byKey(t, id, propUniqKey); err != nil || len(ms) > 0 {
			return ms, err
		}
	}
	return nil, dashboard.NotFound("no message with id %s on this broker", id)
}

// byKey looks key up in topic's key index and keeps the messages whose
// property prop holds it (the index is a hash: it may name others); none
// when no message of topic has it.
func (s dashboardSource) byKey(topic, key, prop string) ([]dashboard.StoredMessage, error) {
	b := s.b
	if _, ok := b.topics.get(topic); !ok {
		return nil, dashboard.NotFound("topic %q does not exist on this broker", topic)
	}
	res, err := b.store.QueryByKey(topic, key, dashboard.MessageMax, 0, math.MaxInt64)
	if errors.Is(err, storage.ErrIndexDisabled) {
		return nil, dashboard.Unsupported("search by key or producer id is not supported here: the message index is disabled (messageIndexEnable=false)")
	}
	if err != nil {
		return nil, err
	}
	var out []dashboard.StoredMessage
	for _, raw := range res.Records {
		var rec record.Record
		if record.Decode(raw, record.NoPhys, &rec) != nil || string(rec.Topic) != topic {
			continue
		}
		m := stored(&rec)
		if v := m.Properties[prop]; v == key || prop == record.PropertyKeys && slices.Contains(strings.Fields(v), key) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s dashboardSource) byOffset(topic string, qid int32, off int64, n int) ([]dashboard.StoredMessage, error) {
	b := s.b
	tc, ok := b.topics.get(topic)
	if !ok {
		return nil, dashboard.NotFound("topic %q does not exist on this broker", topic)
	}
	if queues := max(tc.ReadQueueNums, tc.WriteQueueNums); int(qid) >= queues {
		return nil, dashboard.Invalid("queue: %d is not a queue of %s (0 to %d)", qid, topic, queues-1)
	}
	res, err := b.store.GetMessages(topic, qid, off, n, 0, nil)
	if err != nil {
		return nil, err
	}
	var out []dashboard.StoredMessage
	for _, raw := range res.Records {
		var rec record.Record
		if err := record.Decode(raw, record.NoPhys, &rec); err != nil {
			return nil, err
		}
		out = append(out, stored(&rec))
	}
	if len(out) == 0 {
		return nil, dashboard.NotFound("no message at %s queue %d offset %d (the queue holds offsets %d to %d)",
			topic, qid, off, max(res.MinOffset, 0), max(res.MaxOffset-1, 0))
	}
	return out, nil
}

func stored(rec *record.Record) dashboard.StoredMessage {
	return dashboard.StoredMessage{Topic: string(rec.Topic), Queue: rec.QueueID, QueueOffset: rec.QueueOffset,
		CommitLogOffset: rec.PhysOffset, MsgID: protocol.OffsetMsgID(rec.StoreHost, rec.PhysOffset), BornMs: rec.BornTimestamp,
		StoreMs: rec.StoreTimestamp, BornHost: rec.BornHost.String(), StoreHost: rec.StoreHost.String(),
		ReconsumeTimes: rec.ReconsumeTimes, Properties: record.ParseProperties(rec.UserProperties()), Body: rec.Body}
}
