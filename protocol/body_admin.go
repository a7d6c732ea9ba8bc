package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// TopicOffset is one queue's offsets in a TopicStatsTable (RocketMQ's
// TopicOffset): LastUpdateTimestamp is the store time (Unix ms) of the
// queue's last message, 0 when it has none.
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// TopicStatsTable is GET_TOPIC_STATS_INFO's answer body. On the wire, as
// fastjson writes RocketMQ's Map<MessageQueue, TopicOffset>, the keys of
// offsetTable are MessageQueue objects, not strings:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"lastUpdateTimestamp":0,"maxOffset":5,"minOffset":0}}}
type TopicStatsTable struct {
	OffsetTable map[MessageQueue]TopicOffset
}

// Encode writes the object-keyed form, queues in order. (Not a
// MarshalJSON: encoding/json refuses object keys in what one returns.)
func (t TopicStatsTable) Encode() ([]byte, error) {
	return marshalQueueMap("offsetTable", t.OffsetTable)
}

// Decode reads the object-keyed form (and keys written as strings).
func (t *TopicStatsTable) Decode(b []byte) error {
	t.OffsetTable = map[MessageQueue]TopicOffset{}
	return unmarshalQueueMap(b, "offsetTable", t.OffsetTable)
}

// marshalQueueMap writes {"name":{MQ:V,...}} with MessageQueue object keys.
func marshalQueueMap[V any](name string, m map[MessageQueue]V) ([]byte, error) {
	qs := make([]MessageQueue, 0, len(m))
	for q := range m {
		qs = append(qs, q)
	}
	sort.Slice(qs, func(i, j int) bool {
		a, b := qs[i], qs[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.BrokerName != b.BrokerName {
			return a.BrokerName < b.BrokerName
		}
		return a.QueueID < b.QueueID
	})
	var buf bytes.Buffer
	buf.WriteString(`{"` + name + `":{`)
	for i, q := range qs {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(q)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m[q])
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteString("}}")
	return buf.Bytes(), nil
}

// unmarshalQueueMap reads the member name of object b, whose keys are
// MessageQueue objects (or strings holding one), into m. Other members
// are skipped.
func unmarshalQueueMap[V any](b []byte, name string, m map[MessageQueue]V) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	bad := func(what string) error { return fmt.Errorf("%w: %s map: %s", ErrBadBody, name, what) }
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return bad("not an object")
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return bad(err.Error())
		}
		key, _ := t.(string)
		if key != name {
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return bad(err.Error())
			}
			continue
		}
		// The decoder cannot read object keys: walk the inner object by hand.
		rest := b[d.InputOffset():]
		n, err := readQueueMapObject(rest, m)
		if err != nil {
			return bad(err.Error())
		}
		return unmarshalQueueMapRest(b[int(d.InputOffset())+n:], name)
	}
	return nil
}

// unmarshalQueueMapRest checks that what follows the map closes the object
// (other members after it are not read).
func unmarshalQueueMapRest(rest []byte, name string) error {
	rest = bytes.TrimSpace(rest)
	if len(rest) == 0 || (rest[0] != '}' && rest[0] != ',') {
		return fmt.Errorf("%w: %s map: trailing %q", ErrBadBody, name, string(rest[:min(len(rest), 16)]))
	}
	return nil
}

// readQueueMapObject reads {K:V,...} from the start of b (after spaces
// and the ':' before it) and returns how many bytes it took.
func readQueueMapObject[V any](b []byte, m map[MessageQueue]V) (int, error) {
	i := 0
	skip := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r' || b[i] == ':') {
			i++
		}
	}
	value := func(dst any) error {
		d := json.NewDecoder(bytes.NewReader(b[i:]))
		if err := d.Decode(dst); err != nil {
			return err
		}
		i += int(d.InputOffset())
		return nil
	}
	skip()
	if i >= len(b) || b[i] != '{' {
		return 0, fmt.Errorf("want an object")
	}
	i++
	for {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r' || b[i] == ',') {
			i++
		}
		if i >= len(b) {
			return 0, fmt.Errorf("unterminated object")
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		var q MessageQueue
		if b[i] == '"' { // a key written as a string holding the object
			var s string
			if err := value(&s); err != nil {
				return 0, err
			}
			if err := json.Unmarshal([]byte(s), &q); err != nil {
				return 0, fmt.Errorf("key %q: %v", s, err)
			}
		} else if err := value(&q); err != nil {
			return 0, err
		}
		skip()
		var v V
		if err := value(&v); err != nil {
			return 0, err
		}
		m[q] = v
	}
}

// Connection is one client connection in a ConsumerConnection (RocketMQ's
// Connection): Version is the client's RocketMQ version code.
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

// ConsumerConnection is GET_CONSUMER_CONNECTION_LIST's answer body: a
// group's online members and what they subscribe to.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                      `json:"consumeType"`
	MessageModel      string                      `json:"messageModel"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere"`
}

// MarshalJSON writes empty collections as [] and {}.
func (c ConsumerConnection) MarshalJSON() ([]byte, error) {
	type plain ConsumerConnection
	if c.ConnectionSet == nil {
		c.ConnectionSet = []Connection{}
	}
	if c.SubscriptionTable == nil {
		c.SubscriptionTable = map[string]SubscriptionData{}
	}
	return json.Marshal(plain(c))
}

// OffsetWrapper is one queue of a ConsumeStats (RocketMQ's
// OffsetWrapper): the queue's max offset, the group's committed and pull
// offsets, and the store time (Unix ms) of the last message the group
// consumed (0: none).
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
	// Ours, for a group consuming by POP (RocketMQ's readers skip them):
	// messages handed out and not acknowledged, and how many were handed
	// out again since the broker started.
	PopInFlight    int64 `json:"popInFlight,omitempty"`
	PopRedelivered int64 `json:"popRedelivered,omitempty"`
}

// ConsumeStats is GET_CONSUME_STATS's answer body: a group's progress per
// queue, keyed by MessageQueue objects on the wire like TopicStatsTable.
// consumeTps is not written (Samsa keeps no per-group rate; a reader
// takes it as 0).
type ConsumeStats struct {
	OffsetTable map[MessageQueue]OffsetWrapper
}

// Encode writes the object-keyed form.
func (c ConsumeStats) Encode() ([]byte, error) { return marshalQueueMap("offsetTable", c.OffsetTable) }

// Decode reads the object-keyed form (other members, consumeTps among
// them, are skipped).
func (c *ConsumeStats) Decode(b []byte) error {
	c.OffsetTable = map[MessageQueue]OffsetWrapper{}
	return unmarshalQueueMap(b, "offsetTable", c.OffsetTable)
}
