package broker

import (
	"maps"
	"slices"
)

// topicChanges records what changed in the topic table since the
// registrar last took the changes, so that a create registers that topic
// alone (registrar.topicsChanged) rather than the whole table. seq counts
// every change and never goes back: a name server known to hold the table
// as of seq s needs exactly the changes after s.
type topicChanges struct {
	seq   uint64
	names map[string]struct{}
	// allSeq is the seq of the last change that named no topic (a load
	// that dropped bad entries, a slave adopting its master's table): a
	// name server holding less than it needs a full registration.
	allSeq uint64
	// recent keeps the latest recentCap changed names with their seq, for
	// slaves that copy the table by its changes (topics_page.go);
	// lostSeq is the newest seq it has let go.
	recent recentRing
}

// note records a change to names (to everything when names is empty).
func (c *topicChanges) note(names []string) {
	c.seq++
	if len(names) == 0 {
		c.allSeq = c.seq
		return
	}
	if c.names == nil {
		c.names = make(map[string]struct{})
	}
	for _, n := range names {
		c.names[n] = struct{}{}
		c.recent.push(c.seq, n)
	}
}

// takenChanges is what takeChanges hands the registrar.
type takenChanges struct {
	names   []string // sorted; the topics changed (present or deleted)
	allSeq  uint64   // see topicChanges.allSeq
	seq     uint64   // the table as of this change
	version DataVersion
}

// seq is the count of changes so far.
func (m *topicManager) seq() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.changes.seq
}

// takeChanges returns the changes since the last call and forgets them.
func (m *topicManager) takeChanges() takenChanges {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &m.mu.changes
	t := takenChanges{names: slices.Sorted(maps.Keys(c.names)), allSeq: c.allSeq, seq: c.seq, version: m.mu.version}
	c.names = nil
	return t
}

// configs returns the configs of those of names that exist, in names'
// order.
func (m *topicManager) configs(names []string) []TopicConfig {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]TopicConfig, 0, len(names))
	for _, n := range names {
		if tc, ok := m.mu.table[n]; ok {
			out = append(out, tc)
		}
	}
	return out
}

// sortedNames returns every topic name, sorted, with the version and seq
// the list is as of.
func (m *topicManager) sortedNames() ([]string, DataVersion, uint64) {
	m.mu.RLock()
	names := make([]string, 0, len(m.mu.table))
	for n := range m.mu.table {
		names = append(names, n)
	}
	v, seq := m.mu.version, m.mu.changes.seq
	m.mu.RUnlock()
	slices.Sort(names)
	return names, v, seq
}

// count is the number of topics.
func (m *topicManager) count() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.mu.table)
}
