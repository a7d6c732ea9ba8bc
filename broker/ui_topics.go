package broker

import (
	"net/http"
	"sort"
)

// uiTopic is a topic of this broker with its queues' offsets summed.
type uiTopic struct {
	Topic       string `json:"topic"`
	ReadQueues  int    `json:"readQueues"`
	WriteQueues int    `json:"writeQueues"`
	Perm        int    `json:"perm"`
	Order       bool   `json:"order"`
	// Messages is the sum over queues of max minus min offset: what the
	// queues hold now.
	Messages int64 `json:"messages"`
	MaxTotal int64 `json:"maxOffsetTotal"`
	Puts     int64 `json:"puts"` // stored since the broker started
	Gets     int64 `json:"gets"`
}

// uiQueue is one queue of a topic.
type uiQueue struct {
	Queue         int32 `json:"queue"`
	MinOffset     int64 `json:"minOffset"`
	MaxOffset     int64 `json:"maxOffset"`
	LastStoreTime int64 `json:"lastStoreTimeMs"` // 0: none
}

func (u *uiServer) topics(*http.Request) (any, error) {
	b := u.b
	counts := map[string]uiTopicCnt{}
	for _, t := range b.stats.topicSnapshot() {
		counts[t.Topic] = uiTopicCnt{Puts: t.Puts, Gets: t.Gets}
	}
	out := []uiTopic{}
	for _, name := range b.topics.names() {
		tc, ok := b.topics.get(name)
		if !ok {
			continue
		}
		t := uiTopic{Topic: name, ReadQueues: tc.ReadQueueNums, WriteQueues: tc.WriteQueueNums, Perm: tc.Perm, Order: tc.Order,
			Puts: counts[name].Puts, Gets: counts[name].Gets}
		for i := range int32(max(tc.ReadQueueNums, tc.WriteQueueNums)) {
			lo, hi := max(b.store.MinQueueOffset(name, i), 0), max(b.store.MaxQueueOffset(name, i), 0)
			t.Messages += max(hi-lo, 0)
			t.MaxTotal += hi
		}
		out = append(out, t)
	}
	return out, nil
}

// uiTopicDetail is one topic: its queues and the groups with offsets on it.
type uiTopicDetail struct {
	uiTopic
	Queues []uiQueue `json:"queues"`
	Groups []string  `json:"groups"`
}

func (u *uiServer) topic(r *http.Request) (any, error) {
	b := u.b
	name := r.URL.Query().Get("topic")
	if name == "" {
		return nil, badRequest("topic is required")
	}
	tc, ok := b.topics.get(name)
	if !ok {
		return nil, notFound("topic %q does not exist on this broker", name)
	}
	d := uiTopicDetail{uiTopic: uiTopic{Topic: name, ReadQueues: tc.ReadQueueNums, WriteQueues: tc.WriteQueueNums, Perm: tc.Perm, Order: tc.Order},
		Queues: []uiQueue{}, Groups: b.offsets.groupsOf(name)}
	if d.Groups == nil {
		d.Groups = []string{}
	}
	sort.Strings(d.Groups)
	for _, t := range b.stats.topicSnapshot() { // not stats.topic: that would add a counter
		if t.Topic == name {
			d.Puts, d.Gets = t.Puts, t.Gets
		}
	}
	for i := range int32(max(tc.ReadQueueNums, tc.WriteQueueNums)) {
		q := uiQueue{Queue: i, MinOffset: max(b.store.MinQueueOffset(name, i), 0), MaxOffset: max(b.store.MaxQueueOffset(name, i), 0)}
		if q.MaxOffset > 0 {
			q.LastStoreTime = storeTimeAt(b.store, name, i, q.MaxOffset-1)
		}
		d.Messages += max(q.MaxOffset-q.MinOffset, 0)
		d.MaxTotal += q.MaxOffset
		d.Queues = append(d.Queues, q)
	}
	return d, nil
}
