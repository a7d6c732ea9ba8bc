package broker

import (
	"slices"
	"sort"

	"github.com/samsamq/samsa/broker/dashboard"
	"github.com/samsamq/samsa/broker/pop"
)

// Groups are the groups this broker knows of: from its subscription
// group table, its committed offsets and its members online.
func (s dashboardSource) Groups() []dashboard.Group {
	b := s.b
	names := map[string]bool{}
	table, _ := b.groups.snapshot()
	for g := range table {
		names[g] = true
	}
	for _, g := range b.offsets.Groups() {
		names[g] = true
	}
	for _, g := range b.clients.consumerGroups() {
		names[g] = true
	}
	if b.pop != nil {
		for _, st := range b.pop.Stats() {
			names[st.Group] = true
		}
	}
	out := make([]dashboard.Group, 0, len(names))
	for g := range names {
		_, known := table[g]
		row := dashboard.Group{Name: g, Members: len(b.clients.consumerIDs(g)), Topics: s.groupTopics(g), Known: known}
		for _, t := range row.Topics {
			for _, q := range s.progress(g, t, false) {
				row.Lag += q.Lag
				row.InFlight += q.InFlight
				row.Redelivered += q.Redelivered
			}
		}
		out = append(out, row)
	}
	return out
}

func (s dashboardSource) Group(g string) (dashboard.GroupDetail, error) {
	b := s.b
	d := dashboard.GroupDetail{Name: g, Subscriptions: map[string]string{}}
	topics := map[string]bool{}
	for _, t := range s.groupTopics(g) {
		topics[t] = true
	}
	if cc, ok := b.clients.connections(g); ok {
		d.ConsumeType, d.MessageModel = cc.ConsumeType, cc.MessageModel
		for _, c := range cc.ConnectionSet {
			d.Members = append(d.Members, dashboard.Member{ClientID: c.ClientID, Addr: c.ClientAddr, Language: c.Language, Version: c.Version})
		}
		for t, sub := range cc.SubscriptionTable {
			d.Subscriptions[t] = sub.ExpressionType + " " + sub.SubString
			topics[t] = true
		}
	}
	if table, _ := b.groups.snapshot(); len(topics) == 0 && len(d.Members) == 0 {
		if _, ok := table[g]; !ok {
			return d, dashboard.NotFound("group %q is not known to this broker (no subscription group, offsets or members here)", g)
		}
	}
	for t := range topics {
		d.Queues = append(d.Queues, s.progress(g, t, true)...)
	}
	return d, nil
}

// groupTopics are the topics group has offsets on or popped.
func (s dashboardSource) groupTopics(group string) []string {
	topics := s.b.offsets.TopicsOf(group)
	if s.b.pop != nil {
		for _, t := range s.b.pop.Topics(group) {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	return topics
}

// progress is group's progress in each read queue of topic (none when
// the topic is gone); withTimes reads the store time of each queue's last
// consumed message too (a read from the log per queue).
func (s dashboardSource) progress(group, topic string, withTimes bool) []dashboard.Progress {
	b := s.b
	tc, ok := b.topics.get(topic)
	if !ok {
		return nil
	}
	out := make([]dashboard.Progress, 0, tc.ReadQueueNums)
	var popped map[int32]pop.QueueStat
	if b.pop != nil {
		popped = b.pop.QueueStats(group, topic)
	}
	for i := range int32(tc.ReadQueueNums) {
		p := dashboard.Progress{Topic: topic, Queue: i, MinOffset: max(b.store.MinQueueOffset(topic, i), 0),
			MaxOffset: max(b.store.MaxQueueOffset(topic, i), 0), Committed: -1}
		if off, ok := b.offsets.Query(group, topic, i); ok {
			p.Committed = off
			p.Lag = max(p.MaxOffset-off, 0)
			if off > 0 && withTimes {
				p.LastConsumed = storeTimeAt(b.store, topic, i, off-1)
			}
		} else {
			p.Lag = max(p.MaxOffset-p.MinOffset, 0)
		}
		if st, ok := popped[i]; ok {
			p.InFlight, p.Redelivered = st.InFlight, st.Redelivered
			if p.Committed < 0 && st.Floor > 0 { // POP: below its lowest offset in flight, consumed
				p.Committed, p.Lag = st.Floor, max(p.MaxOffset-st.Floor, 0)
			}
		}
		out = append(out, p)
	}
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
