package broker

import (
	"sort"
	"sync"
	"time"

	"github.com/samsamq/samsa/internal/sql92"
)

// peer is a client connection as the client manager sees it.
type peer interface {
	// notifyConsumerIdsChanged sends NOTIFY_CONSUMER_IDS_CHANGED for group
	// as a one-way request; it must not block.
	notifyConsumerIdsChanged(group string)
	// remote is the client's address, for logs.
	remote() string
}

// Subscription is a consumer's subscription to one topic (RocketMQ's
// SubscriptionData, the parts the broker uses).
type Subscription struct {
	Topic      string
	SubString  string
	ExpType    string // "TAG" (default) or "SQL92"
	SubVersion int64
	// Tags is the tag set parsed from SubString (nil: every message).
	Tags *tagFilter
	// SQL is SubString compiled, for an SQL92 subscription (nil when it
	// did not compile; filter_sql.go).
	SQL *sql92.Expr
}

// ConsumerHeartbeat is one consumer group's part of a heartbeat.
type ConsumerHeartbeat struct {
	Group         string
	ConsumeType   string // CONSUME_PASSIVELY (push) | CONSUME_ACTIVELY (pull)
	MessageModel  string // CLUSTERING | BROADCASTING
	FromWhere     string
	Subscriptions []Subscription
}

// Heartbeat is what a client's HEART_BEAT says.
type Heartbeat struct {
	ClientID  string
	Language  string
	Version   int
	Producers []string
	Consumers []ConsumerHeartbeat
}

type channelInfo struct {
	clientID   string
	language   string
	version    int
	lastUpdate time.Time
}

type consumerGroup struct {
	consumeType  string
	messageModel string
	fromWhere    string
	subs         map[string]Subscription
	channels     map[peer]*channelInfo
	// born is when the group's first member of its current run (since
	// the group last had none) sent a heartbeat (offsets.Config.Born).
	born time.Time
}

// clientManager tracks producer and consumer groups learned from
// heartbeats (RocketMQ's ProducerManager and ConsumerManager). Methods
// return the consumer groups whose membership changed; the caller notifies
// their members. Safe for concurrent use; no goroutines, no clock of its own.
type clientManager struct {
	maxIdle time.Duration
	mu      struct {
		sync.Mutex
		producers map[string]map[peer]*channelInfo
		consumers map[string]*consumerGroup
	}
}

func newClientManager(maxIdle time.Duration) *clientManager {
	m := &clientManager{maxIdle: maxIdle}
	m.mu.producers = make(map[string]map[peer]*channelInfo)
	m.mu.consumers = make(map[string]*consumerGroup)
	return m
}

// heartbeat records hb from p at now. changed lists the consumer groups
// that gained a member or changed a subscription.
func (m *clientManager) heartbeat(p peer, hb Heartbeat, now time.Time) (changed []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	info := func() *channelInfo {
		return &channelInfo{clientID: hb.ClientID, language: hb.Language, version: hb.Version, lastUpdate: now}
	}
	for _, g := range hb.Producers {
		chs := m.mu.producers[g]
		if chs == nil {
			chs = make(map[peer]*channelInfo)
			m.mu.producers[g] = chs
		}
		chs[p] = info()
	}
	for _, c := range hb.Consumers {
		g := m.mu.consumers[c.Group]
		if g == nil {
			g = &consumerGroup{subs: make(map[string]Subscription), channels: make(map[peer]*channelInfo), born: now}
			m.mu.consumers[c.Group] = g
		}
		g.consumeType, g.messageModel, g.fromWhere = c.ConsumeType, c.MessageModel, c.FromWhere
		grew := false
		if old, ok := g.channels[p]; ok && old.clientID == hb.ClientID {
			old.lastUpdate = now
		} else {
			g.channels[p] = info()
			grew = true
		}
		if subsChanged(g.subs, c.Subscriptions) {
			g.subs = make(map[string]Subscription, len(c.Subscriptions))
			for _, s := range c.Subscriptions {
				g.subs[s.Topic] = s
			}
			grew = true
		}
		if grew {
			changed = append(changed, c.Group)
		}
	}
	return changed
}

func subsChanged(old map[string]Subscription, now []Subscription) bool {
	if len(old) != len(now) {
		return true
	}
	for _, s := range now {
		o, ok := old[s.Topic]
		if !ok || o.SubString != s.SubString || o.ExpType != s.ExpType || o.SubVersion != s.SubVersion {
			return true
		}
	}
	return false
}

// unregister removes p from the named groups (UNREGISTER_CLIENT).
func (m *clientManager) unregister(p peer, producerGroup, consumerGroup string) (changed []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if producerGroup != "" {
		m.dropProducerLocked(producerGroup, p)
	}
	if consumerGroup != "" && m.dropConsumerLocked(consumerGroup, p) {
		changed = append(changed, consumerGroup)
	}
	return changed
}

// closed removes p from every group (its connection closed).
func (m *clientManager) closed(p peer) (changed []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for g := range m.mu.producers {
		m.dropProducerLocked(g, p)
	}
	for g := range m.mu.consumers {
		if m.dropConsumerLocked(g, p) {
			changed = append(changed, g)
		}
	}
	sort.Strings(changed)
	return changed
}

// expire drops channels silent for longer than maxIdle; it returns the
// peers dropped (the caller closes them) and the groups that changed.
func (m *clientManager) expire(now time.Time) (dropped []peer, changed []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make(map[peer]bool)
	for g, chs := range m.mu.producers {
		for p, ci := range chs {
			if now.Sub(ci.lastUpdate) > m.maxIdle {
				m.dropProducerLocked(g, p)
				seen[p] = true
			}
		}
	}
	for g, cg := range m.mu.consumers {
		for p, ci := range cg.channels {
			if now.Sub(ci.lastUpdate) > m.maxIdle {
				if m.dropConsumerLocked(g, p) {
					changed = append(changed, g)
				}
				seen[p] = true
			}
		}
	}
	for p := range seen {
		dropped = append(dropped, p)
	}
	sort.Strings(changed)
	changed = compactStrings(changed)
	return dropped, changed
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func (m *clientManager) dropProducerLocked(g string, p peer) {
	if chs := m.mu.producers[g]; chs != nil {
		delete(chs, p)
		if len(chs) == 0 {
			delete(m.mu.producers, g)
		}
	}
}

func (m *clientManager) dropConsumerLocked(g string, p peer) bool {
	cg := m.mu.consumers[g]
	if cg == nil {
		return false
	}
	if _, ok := cg.channels[p]; !ok {
		return false
	}
	delete(cg.channels, p)
	if len(cg.channels) == 0 {
		delete(m.mu.consumers, g)
	}
	return true
}

// consumerIDs returns the client ids of group's members, sorted.
func (m *clientManager) consumerIDs(group string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	cg := m.mu.consumers[group]
	if cg == nil {
		return nil
	}
	ids := make([]string, 0, len(cg.channels))
	for _, ci := range cg.channels {
		ids = append(ids, ci.clientID)
	}
	sort.Strings(ids)
	return compactStrings(ids)
}

// members returns group's connections.
func (m *clientManager) members(group string) []peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	cg := m.mu.consumers[group]
	if cg == nil {
		return nil
	}
	out := make([]peer, 0, len(cg.channels))
	for p := range cg.channels {
		out = append(out, p)
	}
	return out
}

// subscription returns group's subscription to topic.
func (m *clientManager) subscription(group, topic string) (Subscription, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cg := m.mu.consumers[group]
	if cg == nil {
		return Subscription{}, false
	}
	s, ok := cg.subs[topic]
	return s, ok
}

// pushOrPull returns group's subscription to topic when its members say
// by heartbeat that they consume by push or pull (RocketMQ 5's POP
// consumers heartbeat CONSUME_POP: not them).
func (m *clientManager) pushOrPull(group, topic string) (Subscription, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cg := m.mu.consumers[group]
	if cg == nil || cg.consumeType == consumePop {
		return Subscription{}, false
	}
	s, ok := cg.subs[topic]
	return s, ok
}

// consumePop is the consumeType a RocketMQ 5 POP consumer heartbeats.
const consumePop = "CONSUME_POP"

// born returns when group's current run began (its first heartbeat
// since it last had no member); false when it has no member.
func (m *clientManager) born(group string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cg := m.mu.consumers[group]; cg != nil {
		return cg.born, true
	}
	return time.Time{}, false
}

// counts returns the numbers of producer groups, consumer groups and
// distinct client connections.
func (m *clientManager) counts() (producerGroups, consumerGroups, clients int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make(map[peer]bool)
	for _, chs := range m.mu.producers {
		for p := range chs {
			seen[p] = true
		}
	}
	for _, cg := range m.mu.consumers {
		for p := range cg.channels {
			seen[p] = true
		}
	}
	return len(m.mu.producers), len(m.mu.consumers), len(seen)
}

// notify sends NOTIFY_CONSUMER_IDS_CHANGED to every member of each group
// (RocketMQ's DefaultConsumerIdsChangeListener, CHANGE event).
func (m *clientManager) notify(groups []string) {
	for _, g := range groups {
		for _, p := range m.members(g) {
			p.notifyConsumerIdsChanged(g)
		}
	}
}

// expireIdle closes the connections of clients silent for maxIdle and
// tells their groups.
func (m *clientManager) expireIdle(now time.Time) {
	dropped, changed := m.expire(now)
	for _, p := range dropped {
		if c, ok := p.(*conn); ok {
			c.close("client channel expired (no heartbeat for " + m.maxIdle.String() + ")")
		}
	}
	m.notify(changed)
}
