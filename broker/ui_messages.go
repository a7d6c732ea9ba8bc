package broker

import (
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// uiMessageMax bounds the messages one search answers; uiBodyMax the
// body bytes shown of each (Truncated says when there were more).
const (
	uiMessageMax = 32
	uiBodyMax    = 16 << 10
)

// uiMessage is a stored message as the dashboard shows it. Body is the
// text when it is valid UTF-8, else base64 (BodyBase64 set).
type uiMessage struct {
	Topic           string            `json:"topic"`
	Queue           int32             `json:"queue"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	MsgID           string            `json:"msgId"` // the offset message id
	UniqKey         string            `json:"uniqKey,omitempty"`
	Keys            string            `json:"keys,omitempty"`
	Tags            string            `json:"tags,omitempty"`
	BornMs          int64             `json:"bornTimestampMs"`
	StoreMs         int64             `json:"storeTimestampMs"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	Properties      map[string]string `json:"properties"`
	BodySize        int               `json:"bodySize"`
	Body            string            `json:"body"`
	BodyBase64      bool              `json:"bodyBase64,omitempty"`
	Truncated       bool              `json:"truncated,omitempty"`
}

// messages answers a search: ?topic=&id= (an offset message id of this
// broker, or a producer's id through the key index, of topic or of every
// topic), ?topic=&key= (the key index), or ?topic=&queue=&offset=[&n=]
// (n messages from a queue offset, at most 32).
func (u *uiServer) messages(r *http.Request) (any, error) {
	q := r.URL.Query()
	topic, id, key := q.Get("topic"), strings.TrimSpace(q.Get("id")), q.Get("key")
	switch {
	case id != "":
		return u.byID(topic, id)
	case key != "":
		if topic == "" {
			return nil, badRequest("a search by key needs the topic")
		}
		return u.byKey(topic, key, record.PropertyKeys)
	case q.Has("queue") || q.Has("offset"):
		if topic == "" {
			return nil, badRequest("a search by queue and offset needs the topic")
		}
		qid, err := queryInt(r, "queue", -1)
		if err != nil {
			return nil, err
		}
		off, err := queryInt(r, "offset", -1)
		if err != nil {
			return nil, err
		}
		n, err := queryInt(r, "n", 1)
		if err != nil {
			return nil, err
		}
		return u.byOffset(topic, qid, off, n)
	}
	return nil, badRequest("search by id, by key (with topic), or by queue and offset (with topic)")
}

func (u *uiServer) byID(topic, id string) ([]uiMessage, error) {
	b := u.b
	if host, off, err := protocol.ParseOffsetMsgID(id); err == nil && host == b.storeHost {
		if rec, _, err := readRecord(b.store, off); err == nil && (topic == "" || string(rec.Topic) == topic) {
			return []uiMessage{u.view(rec)}, nil
		}
	}
	topics := []string{topic}
	if topic == "" {
		topics = b.topics.names()
	}
	for _, t := range topics {
		ms, err := u.byKey(t, id, propUniqKey)
		var ue *uiErr
		if errors.As(err, &ue) && ue.status == http.StatusNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		return ms, nil
	}
	return nil, notFound("no message with id %s on this broker", id)
}

// byKey looks key up in topic's key index and keeps the messages whose
// property prop holds it (the index is a hash: it may name others).
func (u *uiServer) byKey(topic, key, prop string) ([]uiMessage, error) {
	b := u.b
	if _, ok := b.topics.get(topic); !ok {
		return nil, notFound("topic %q does not exist on this broker", topic)
	}
	res, err := b.store.QueryByKey(topic, key, uiMessageMax, 0, math.MaxInt64)
	if errors.Is(err, storage.ErrIndexDisabled) {
		return nil, &uiErr{http.StatusNotImplemented, "search by key or producer id is not supported here: the message index is disabled (messageIndexEnable=false)"}
	}
	if err != nil {
		return nil, err
	}
	out := []uiMessage{}
	for _, raw := range res.Records {
		var rec record.Record
		if record.Decode(raw, record.NoPhys, &rec) != nil || string(rec.Topic) != topic {
			continue
		}
		m := u.view(&rec)
		if v := m.Properties[prop]; v == key || prop == record.PropertyKeys && slices.Contains(strings.Fields(v), key) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, notFound("no message of topic %s with %s %q on this broker", topic, prop, key)
	}
	return out, nil
}

func (u *uiServer) byOffset(topic string, qid, off, n int64) ([]uiMessage, error) {
	b := u.b
	tc, ok := b.topics.get(topic)
	if !ok {
		return nil, notFound("topic %q does not exist on this broker", topic)
	}
	if qid < 0 || qid >= int64(max(tc.ReadQueueNums, tc.WriteQueueNums)) {
		return nil, badRequest("queue: %d is not a queue of %s (0 to %d)", qid, topic, max(tc.ReadQueueNums, tc.WriteQueueNums)-1)
	}
	if off < 0 {
		return nil, badRequest("offset is required (0 or more)")
	}
	if n < 1 || n > uiMessageMax {
		return nil, badRequest("n: want 1 to %d, got %d", uiMessageMax, n)
	}
	res, err := b.store.GetMessages(topic, int32(qid), off, int(n), 0, nil)
	if err != nil {
		return nil, err
	}
	out := []uiMessage{}
	for _, raw := range res.Records {
		var rec record.Record
		if err := record.Decode(raw, record.NoPhys, &rec); err != nil {
			return nil, err
		}
		out = append(out, u.view(&rec))
	}
	if len(out) == 0 {
		return nil, notFound("no message at %s queue %d offset %d (the queue holds offsets %d to %d)",
			topic, qid, off, max(res.MinOffset, 0), max(res.MaxOffset-1, 0))
	}
	return out, nil
}

func (u *uiServer) view(rec *record.Record) uiMessage {
	props := record.ParseProperties(rec.UserProperties())
	if props == nil {
		props = map[string]string{}
	}
	m := uiMessage{Topic: string(rec.Topic), Queue: rec.QueueID, QueueOffset: rec.QueueOffset, CommitLogOffset: rec.PhysOffset,
		MsgID: protocol.OffsetMsgID(rec.StoreHost, rec.PhysOffset), UniqKey: props[propUniqKey], Keys: props[record.PropertyKeys],
		Tags: props[record.PropertyTags], BornMs: rec.BornTimestamp, StoreMs: rec.StoreTimestamp, BornHost: rec.BornHost.String(),
		StoreHost: rec.StoreHost.String(), ReconsumeTimes: rec.ReconsumeTimes, Properties: props, BodySize: len(rec.Body)}
	body := rec.Body
	if len(body) > uiBodyMax {
		body, m.Truncated = body[:uiBodyMax], true
	}
	if utf8.Valid(body) {
		m.Body = string(body)
	} else {
		m.Body, m.BodyBase64 = base64.StdEncoding.EncodeToString(body), true
	}
	return m
}
