package broker

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/samsamq/samsa/broker/internal/metalog"
	"github.com/samsamq/samsa/protocol"
)

// What the paged GET_ALL_TOPIC_CONFIG (protocol/body_topic_page.go) reads
// from the topic table: a page of topics in name order, and the changes
// since a cursor; and what a slave writes with them (applyDelta).

// recentCap bounds the changed names a master keeps for its slaves'
// deltas: 32,768 names, a delta of at most ~10 MiB (names of 127
// characters), within a frame. A slave further behind copies the table.
const recentCap = 1 << 15

type recentChange struct {
	seq  uint64
	name string
}

// recentRing is the latest recentCap changes, oldest first from start.
type recentRing struct {
	buf     []recentChange
	start   int
	lostSeq uint64 // the newest seq let go
}

func (r *recentRing) push(seq uint64, name string) {
	if len(r.buf) < recentCap {
		r.buf = append(r.buf, recentChange{seq, name})
		return
	}
	r.lostSeq = r.buf[r.start].seq
	r.buf[r.start] = recentChange{seq, name}
	r.start = (r.start + 1) % len(r.buf)
}

// since returns the names changed after seq, each once, or false when
// the ring no longer holds them all.
func (r *recentRing) since(seq uint64) ([]string, bool) {
	if seq < r.lostSeq {
		return nil, false
	}
	seen := make(map[string]struct{})
	var out []string
	for i := range r.buf {
		c := r.buf[(r.start+i)%len(r.buf)]
		if c.seq <= seq {
			continue
		}
		if _, ok := seen[c.name]; !ok {
			seen[c.name] = struct{}{}
			out = append(out, c.name)
		}
	}
	return out, true
}

// cursor is a change cursor as a paged answer carries it: the run's
// incarnation and a seq.
func (m *topicManager) cursor(seq uint64) string {
	return strconv.FormatUint(m.incarnation, 16) + ":" + strconv.FormatUint(seq, 10)
}

// parseCursor reads a cursor of this run; ok is false for another run's
// or a malformed one.
func (m *topicManager) parseCursor(s string) (seq uint64, ok bool) {
	inc, sq, found := strings.Cut(s, ":")
	if !found {
		return 0, false
	}
	i, err1 := strconv.ParseUint(inc, 16, 64)
	n, err2 := strconv.ParseUint(sq, 10, 64)
	return n, err1 == nil && err2 == nil && i == m.incarnation
}

// version is the table's DataVersion.
func (m *topicManager) version() DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.version
}

// topicDelta is the changes since a cursor: the changed topics' configs
// and the names of those deleted.
type topicDelta struct {
	puts    []TopicConfig
	deleted []string
	seq     uint64
	total   int
	version DataVersion
}

// delta returns the changes after the cursor since, or false when this
// run does not hold them all (another run's cursor, a change that named
// the whole table, changes the ring let go).
func (m *topicManager) delta(since string) (topicDelta, bool) {
	s, ok := m.parseCursor(since)
	if !ok {
		return topicDelta{}, false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	c := &m.mu.changes
	if s > c.seq || s < c.allSeq {
		return topicDelta{}, false
	}
	names, ok := c.recent.since(s)
	if !ok {
		return topicDelta{}, false
	}
	d := topicDelta{seq: c.seq, total: len(m.mu.table), version: m.mu.version}
	for _, n := range names {
		if tc, ok := m.mu.table[n]; ok {
			d.puts = append(d.puts, tc)
		} else {
			d.deleted = append(d.deleted, n)
		}
	}
	return d, true
}

// topicPage is one page of the table in name order.
type topicPage struct {
	body  []byte // a protocol.TopicConfigPage
	more  bool
	next  string // the page's last name
	seq   uint64 // the change cursor the page's names are as of
	total int
}

// pageTail is what a page's body keeps free for its closing and version.
const pageTail = 256

// page encodes the topics named after after, in name order, in a body of
// at most budget bytes (at least one topic whatever the budget).
func (m *topicManager) page(after string, budget int) (topicPage, error) {
	all, p := m.pageNames()
	names := all[sort.SearchStrings(all, after):]
	if len(names) > 0 && names[0] == after {
		names = names[1:]
	}

	body := append(make([]byte, 0, min(budget, 64<<10)), `{"topicConfigTable":{`...)
	n := 0
	var k, e []byte
	m.mu.RLock()
	v := m.mu.version
	for _, name := range names {
		tc, ok := m.mu.table[name]
		if !ok {
			continue // deleted since: the delta after the copy says so
		}
		tc.TopicName = name
		k = protocol.AppendJSONString(k[:0], name)
		e = protocol.AppendTopicConfig(e[:0], tc.wire())
		if n > 0 && len(body)+1+len(k)+1+len(e)+pageTail > budget {
			p.more = true
			break
		}
		if n > 0 {
			body = append(body, ',')
		}
		body = append(append(append(body, k...), ':'), e...)
		p.next = name
		n++
	}
	m.mu.RUnlock()
	dv, err := json.Marshal(protocol.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter})
	if err != nil {
		return topicPage{}, err
	}
	body = append(append(append(body, `},"dataVersion":`...), dv...), '}')
	p.body = body
	if !p.more {
		m.pages.mu.Lock()
		m.pages.names = nil // the copy is done: the names go
		m.pages.mu.Unlock()
	}
	return p, nil
}

// pageCache is the sorted names the last page was cut from: the pages of
// one copy sort the table once, while it does not change.
type pageCache struct {
	mu    sync.Mutex
	seq   uint64
	names []string // never changed once built
}

// pageNames returns every name, sorted, as of the table's change seq
// it returns in p (with the table's size).
func (m *topicManager) pageNames() ([]string, topicPage) {
	m.pages.mu.Lock()
	defer m.pages.mu.Unlock()
	m.mu.RLock()
	p := topicPage{seq: m.mu.changes.seq, total: len(m.mu.table)}
	if m.pages.names != nil && m.pages.seq == p.seq {
		m.mu.RUnlock()
		return m.pages.names, p
	}
	names := make([]string, 0, len(m.mu.table))
	for n := range m.mu.table {
		names = append(names, n)
	}
	m.mu.RUnlock()
	slices.Sort(names)
	m.pages.seq, m.pages.names = p.seq, names
	return names, p
}

// applyDelta applies a master's changes to a slave's table, each through
// the log as the master's own changes go, and takes the master's version.
// It returns the topics deleted (their offsets go too) and whether
// anything changed.
func (m *topicManager) applyDelta(puts map[string]TopicConfig, deleted []string, v DataVersion) (removed []string, changed bool, err error) {
	m.mu.Lock()
	var names []string
	var t metalog.Ticket
	var werr error
	for _, name := range slices.Sorted(maps.Keys(puts)) {
		tc := puts[name]
		if ValidateTopic(name) != nil {
			continue
		}
		tc.TopicName = name
		if old, ok := m.mu.table[name]; ok && old == tc {
			continue
		}
		m.mu.table[name] = tc
		names = append(names, name)
		if werr == nil {
			t, werr = m.logPutLocked(tc)
		}
	}
	for _, name := range deleted {
		if _, ok := m.mu.table[name]; !ok || m.system[name] {
			continue
		}
		delete(m.mu.table, name)
		names = append(names, name)
		removed = append(removed, name)
		if werr == nil {
			t, werr = m.logDeleteLocked(name)
		}
	}
	changed = len(names) > 0 || m.mu.version != v
	m.mu.version = v
	if len(names) > 0 {
		m.mu.changes.note(names)
	}
	m.mu.Unlock()
	if len(names) == 0 {
		return nil, changed, nil
	}
	if err := m.persist(t, werr); err != nil {
		return removed, true, fmt.Errorf("broker: the master's topic changes: %w", err)
	}
	return removed, true, nil
}
