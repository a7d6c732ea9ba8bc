package dashboard

import (
	"encoding/base64"
	"math"
	"net/http"
	"strings"
	"unicode/utf8"
)

// MessageMax bounds the messages one search answers; bodyMax the body
// bytes shown of each (Message.Truncated says when there were more).
const (
	MessageMax = 32
	bodyMax    = 16 << 10
)

// The properties a Message shows apart (RocketMQ's names).
const (
	propUniqKey = "UNIQ_KEY"
	propKeys    = "KEYS"
	propTags    = "TAGS"
)

// MessageQuery is a message search, in one of three forms:
//   - ID set: an offset message id of this broker, or a producer's id
//     (UNIQ_KEY, through the key index), in Topic or, when Topic is "",
//     in every topic;
//   - Key set: the messages of Topic with that key (KEYS, through the
//     key index);
//   - neither: N messages (1 to MessageMax) of Topic's queue Queue from
//     queue offset Offset.
//
// The dashboard hands a Source only a query of one of these forms, with
// Topic set where the form needs it, Queue and Offset not negative.
type MessageQuery struct {
	Topic  string
	ID     string
	Key    string
	Queue  int32
	Offset int64
	N      int
}

// StoredMessage is a message as a Source reads it from the store.
type StoredMessage struct {
	Topic           string
	Queue           int32
	QueueOffset     int64
	CommitLogOffset int64
	MsgID           string // the offset message id
	BornMs          int64
	StoreMs         int64
	BornHost        string
	StoreHost       string
	ReconsumeTimes  int32
	Properties      map[string]string
	Body            []byte
}

// Message is a stored message as the page shows it. Body is the text
// when it is valid UTF-8, else base64 (BodyBase64 set).
type Message struct {
	Topic           string            `json:"topic"`
	Queue           int32             `json:"queue"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	MsgID           string            `json:"msgId"`
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

// messages answers a search: ?id=[&topic=], ?topic=&key=, or
// ?topic=&queue=&offset=[&n=] (n defaults to 1).
func (d *Dashboard) messages(r *http.Request) (any, error) {
	q, err := messageQuery(r)
	if err != nil {
		return nil, err
	}
	found, err := d.src.Messages(q)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(found))
	for _, m := range found {
		out = append(out, view(m))
	}
	return out, nil
}

// messageQuery reads and checks a search's parameters.
func messageQuery(r *http.Request) (MessageQuery, error) {
	v := r.URL.Query()
	q := MessageQuery{Topic: v.Get("topic"), ID: strings.TrimSpace(v.Get("id")), Key: v.Get("key")}
	switch {
	case q.ID != "":
		q.Key = ""
		return q, nil
	case q.Key != "":
		if q.Topic == "" {
			return q, Invalid("a search by key needs the topic")
		}
		return q, nil
	case v.Has("queue") || v.Has("offset"):
		if q.Topic == "" {
			return q, Invalid("a search by queue and offset needs the topic")
		}
		qid, err := queryInt(r, "queue", -1)
		if err != nil {
			return q, err
		}
		if qid < 0 || qid > math.MaxInt32 {
			return q, Invalid("queue: want a queue number (0 or more), got %d", qid)
		}
		off, err := queryInt(r, "offset", -1)
		if err != nil {
			return q, err
		}
		if off < 0 {
			return q, Invalid("offset is required (0 or more)")
		}
		n, err := queryInt(r, "n", 1)
		if err != nil {
			return q, err
		}
		if n < 1 || n > MessageMax {
			return q, Invalid("n: want 1 to %d, got %d", MessageMax, n)
		}
		q.Queue, q.Offset, q.N = int32(qid), off, int(n)
		return q, nil
	}
	return q, Invalid("search by id, by key (with topic), or by queue and offset (with topic)")
}

func view(s StoredMessage) Message {
	props := s.Properties
	if props == nil {
		props = map[string]string{}
	}
	m := Message{Topic: s.Topic, Queue: s.Queue, QueueOffset: s.QueueOffset, CommitLogOffset: s.CommitLogOffset, MsgID: s.MsgID,
		UniqKey: props[propUniqKey], Keys: props[propKeys], Tags: props[propTags], BornMs: s.BornMs, StoreMs: s.StoreMs,
		BornHost: s.BornHost, StoreHost: s.StoreHost, ReconsumeTimes: s.ReconsumeTimes, Properties: props, BodySize: len(s.Body)}
	body := s.Body
	if len(body) > bodyMax {
		body, m.Truncated = body[:bodyMax], true
	}
	if utf8.Valid(body) {
		m.Body = string(body)
	} else {
		m.Body, m.BodyBase64 = base64.StdEncoding.EncodeToString(body), true
	}
	return m
}
