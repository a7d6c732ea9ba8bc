package broker

import (
	"net/http"
	"sort"
)

// uiGroup is a consumer group as this broker knows it: from its
// subscription group table, its committed offsets, and its members
// online here.
type uiGroup struct {
	Group   string   `json:"group"`
	Members int      `json:"members"`
	Topics  []string `json:"topics"` // with offsets here
	Lag     int64    `json:"lag"`    // summed over those topics' queues
	Known   bool     `json:"subscriptionGroup"`
}

func (u *uiServer) groupList(*http.Request) (any, error) {
	b := u.b
	names := map[string]bool{}
	table, _ := b.groups.snapshot()
	for g := range table {
		names[g] = true
	}
	for _, g := range b.offsets.groupNames() {
		names[g] = true
	}
	for _, g := range b.clients.consumerGroups() {
		names[g] = true
	}
	out := []uiGroup{}
	for g := range names {
		_, known := table[g]
		row := uiGroup{Group: g, Members: len(b.clients.consumerIDs(g)), Topics: b.offsets.topicsOf(g), Known: known}
		if row.Topics == nil {
			row.Topics = []string{}
		}
		for _, t := range row.Topics {
			for _, q := range u.progress(g, t, false) {
				row.Lag += q.Lag
			}
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// uiProgress is a group's progress in one queue. Committed is -1 when
// the group has no offset there (Lag is then the queue's whole content).
type uiProgress struct {
	Topic        string `json:"topic"`
	Queue        int32  `json:"queue"`
	MinOffset    int64  `json:"minOffset"`
	MaxOffset    int64  `json:"maxOffset"`
	Committed    int64  `json:"committed"`
	Lag          int64  `json:"lag"`
	LastConsumed int64  `json:"lastConsumedMs"` // store time of the last message consumed; 0: none
}

// progress is group's progress in each read queue of topic (none when
// the topic is gone); withTimes reads the store time of each queue's last
// consumed message too (a read from the log per queue).
func (u *uiServer) progress(group, topic string, withTimes bool) []uiProgress {
	b := u.b
	tc, ok := b.topics.get(topic)
	if !ok {
		return nil
	}
	out := make([]uiProgress, 0, tc.ReadQueueNums)
	for i := range int32(tc.ReadQueueNums) {
		p := uiProgress{Topic: topic, Queue: i, MinOffset: max(b.store.MinQueueOffset(topic, i), 0),
			MaxOffset: max(b.store.MaxQueueOffset(topic, i), 0), Committed: -1}
		if off, ok := b.offsets.query(group, topic, i); ok {
			p.Committed = off
			p.Lag = max(p.MaxOffset-off, 0)
			if off > 0 && withTimes {
				p.LastConsumed = storeTimeAt(b.store, topic, i, off-1)
			}
		} else {
			p.Lag = max(p.MaxOffset-p.MinOffset, 0)
		}
		out = append(out, p)
	}
	return out
}

// uiMember is a member online on this broker.
type uiMember struct {
	ClientID string `json:"clientId"`
	Addr     string `json:"addr"`
	Language string `json:"language"`
	Version  int    `json:"version"`
}

// uiGroupDetail is one group: members, subscriptions, progress per queue.
type uiGroupDetail struct {
	Group         string            `json:"group"`
	ConsumeType   string            `json:"consumeType,omitempty"`
	MessageModel  string            `json:"messageModel,omitempty"`
	Members       []uiMember        `json:"members"`
	Subscriptions map[string]string `json:"subscriptions"` // topic → expression
	Queues        []uiProgress      `json:"queues"`
	Lag           int64             `json:"lag"`
}

func (u *uiServer) group(r *http.Request) (any, error) {
	b := u.b
	g := r.URL.Query().Get("group")
	if g == "" {
		return nil, badRequest("group is required")
	}
	d := uiGroupDetail{Group: g, Members: []uiMember{}, Subscriptions: map[string]string{}, Queues: []uiProgress{}}
	topics := map[string]bool{}
	for _, t := range b.offsets.topicsOf(g) {
		topics[t] = true
	}
	if cc, ok := b.clients.connections(g); ok {
		d.ConsumeType, d.MessageModel = cc.ConsumeType, cc.MessageModel
		for _, c := range cc.ConnectionSet {
			d.Members = append(d.Members, uiMember{ClientID: c.ClientID, Addr: c.ClientAddr, Language: c.Language, Version: c.Version})
		}
		for t, s := range cc.SubscriptionTable {
			d.Subscriptions[t] = s.ExpressionType + " " + s.SubString
			topics[t] = true
		}
	}
	if table, _ := b.groups.snapshot(); len(topics) == 0 && len(d.Members) == 0 {
		if _, ok := table[g]; !ok {
			return nil, notFound("group %q is not known to this broker (no subscription group, offsets or members here)", g)
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		for _, p := range u.progress(g, t, true) {
			d.Lag += p.Lag
			d.Queues = append(d.Queues, p)
		}
	}
	return d, nil
}

// groupNames returns every group with an offset here, sorted.
func (m *offsetManager) groupNames() []string {
	m.mu.RLock()
	seen := map[string]bool{}
	for k := range m.mu.table {
		seen[k.group] = true
	}
	m.mu.RUnlock()
	out := make([]string, 0, len(seen))
	for g := range seen {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// consumerGroups returns the consumer groups with a member online, sorted.
func (m *clientManager) consumerGroups() []string {
	m.mu.Lock()
	out := make([]string, 0, len(m.mu.consumers))
	for g, cg := range m.mu.consumers {
		if len(cg.channels) > 0 {
			out = append(out, g)
		}
	}
	m.mu.Unlock()
	sort.Strings(out)
	return out
}
