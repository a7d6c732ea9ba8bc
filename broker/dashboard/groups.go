package dashboard

import (
	"net/http"
	"sort"
)

// Group is a consumer group as this broker knows it: from its
// subscription group table, its committed offsets, and its members
// online here.
type Group struct {
	Name    string   `json:"group"`
	Members int      `json:"members"`
	Topics  []string `json:"topics"` // with offsets here
	Lag     int64    `json:"lag"`    // summed over those topics' queues
	Known   bool     `json:"subscriptionGroup"`
	// POP: messages handed out and not acknowledged, and those handed
	// out again since the broker started
	InFlight    int64 `json:"popInFlight"`
	Redelivered int64 `json:"popRedelivered"`
}

// Progress is a group's progress in one queue. Committed is -1 when the
// group has no offset there (Lag is then the queue's whole content).
type Progress struct {
	Topic        string `json:"topic"`
	Queue        int32  `json:"queue"`
	MinOffset    int64  `json:"minOffset"`
	MaxOffset    int64  `json:"maxOffset"`
	Committed    int64  `json:"committed"`
	Lag          int64  `json:"lag"`
	LastConsumed int64  `json:"lastConsumedMs"` // store time of the last message consumed; 0: none
	// POP (Committed is then the lowest offset not acknowledged): in
	// flight, and handed out again since the broker started
	InFlight    int64 `json:"popInFlight"`
	Redelivered int64 `json:"popRedelivered"`
}

// Member is a member online on this broker.
type Member struct {
	ClientID string `json:"clientId"`
	Addr     string `json:"addr"`
	Language string `json:"language"`
	Version  int    `json:"version"`
}

// GroupDetail is one group: members, subscriptions, progress per queue.
// The dashboard sums Lag from Queues.
type GroupDetail struct {
	Name          string            `json:"group"`
	ConsumeType   string            `json:"consumeType,omitempty"`
	MessageModel  string            `json:"messageModel,omitempty"`
	Members       []Member          `json:"members"`
	Subscriptions map[string]string `json:"subscriptions"` // topic → expression
	Queues        []Progress        `json:"queues"`
	Lag           int64             `json:"lag"`
}

func (d *Dashboard) groups(*http.Request) (any, error) {
	out := orEmpty(d.src.Groups())
	for i := range out {
		out[i].Topics = orEmpty(out[i].Topics)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d *Dashboard) group(r *http.Request) (any, error) {
	name := r.URL.Query().Get("group")
	if name == "" {
		return nil, Invalid("group is required")
	}
	g, err := d.src.Group(name)
	if err != nil {
		return nil, err
	}
	g.Members, g.Queues = orEmpty(g.Members), orEmpty(g.Queues)
	if g.Subscriptions == nil {
		g.Subscriptions = map[string]string{}
	}
	sort.Slice(g.Members, func(i, j int) bool { return g.Members[i].ClientID < g.Members[j].ClientID })
	sort.SliceStable(g.Queues, func(i, j int) bool {
		x, y := g.Queues[i], g.Queues[j]
		if x.Topic != y.Topic {
			return x.Topic < y.Topic
		}
		return x.Queue < y.Queue
	})
	g.Lag = 0
	for _, q := range g.Queues {
		g.Lag += q.Lag
	}
	return g, nil
}
