package dashboard

import (
	"net/http"
	"sort"
)

// Topic is a topic of this broker with its queues' offsets summed.
type Topic struct {
	Name        string `json:"topic"`
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

// Queue is one queue of a topic.
type Queue struct {
	Queue         int32 `json:"queue"`
	MinOffset     int64 `json:"minOffset"`
	MaxOffset     int64 `json:"maxOffset"`
	LastStoreTime int64 `json:"lastStoreTimeMs"` // 0: none
}

// TopicDetail is one topic: its queues and the groups with offsets on it.
// The dashboard sums Messages and MaxTotal from Queues.
type TopicDetail struct {
	Topic
	Queues []Queue  `json:"queues"`
	Groups []string `json:"groups"`
}

func (d *Dashboard) topics(*http.Request) (any, error) {
	out := orEmpty(d.src.Topics())
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d *Dashboard) topic(r *http.Request) (any, error) {
	name := r.URL.Query().Get("topic")
	if name == "" {
		return nil, Invalid("topic is required")
	}
	t, err := d.src.Topic(name)
	if err != nil {
		return nil, err
	}
	t.Queues, t.Groups = orEmpty(t.Queues), orEmpty(t.Groups)
	sort.Slice(t.Queues, func(i, j int) bool { return t.Queues[i].Queue < t.Queues[j].Queue })
	sort.Strings(t.Groups)
	t.Messages, t.MaxTotal = 0, 0
	for _, q := range t.Queues {
		t.Messages += max(q.MaxOffset-q.MinOffset, 0)
		t.MaxTotal += q.MaxOffset
	}
	return t, nil
}
