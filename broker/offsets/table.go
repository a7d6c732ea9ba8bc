package offsets

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// queueBytes is what one queue adds to the table's JSON, generously:
// "1023":9223372036854775807, with its indent.
const queueBytes = 32

// pairBytes is what one topic@group adds besides its queues.
func pairBytes(p pair) int { return len(p.topic) + 1 + len(p.group) + 8 }

// ErrTableFull is a commit refused because it would take the table past
// Config.MaxBytes: offsets of new queues or groups are refused until some
// are deleted; queues already there may always move.
var ErrTableFull = errors.New("broker: the consumer offset table is full")

// Commit records group's offset for (topic, queue). It fails, storing
// nothing, when a new queue would take the table past its bound
// (ErrTableFull). On a slave the commit is kept as local too, for the
// master. The caller has checked the names, the queue and the offset.
func (t *Table) Commit(group, topic string, queue int32, offset int64) error {
	return t.commit(Key{topic, group, queue}, offset, true)
}

// CommitSystem is Commit for the broker's own progress offsets (a fixed
// few, such as the transactions' check progress), which the bound does not
// refuse.
func (t *Table) CommitSystem(group, topic string, queue int32, offset int64) {
	_ = t.commit(Key{topic, group, queue}, offset, false)
}

func (t *Table) commit(k Key, offset int64, bounded bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.growLocked(k); bounded && g > 0 && t.mu.bytes+g > t.cfg.MaxBytes {
		return fmt.Errorf("%w (%d bytes); offsets of new queues or groups are refused until some are deleted", ErrTableFull, t.cfg.MaxBytes)
	}
	if t.setLocked(k, offset) {
		t.mu.dirty = true
	}
	if t.mu.local != nil && t.cfg.Slave() {
		if old, ok := t.mu.local[k]; !ok || old != offset {
			t.mu.local[k] = offset
			t.mu.dirty = true
		}
	}
	return nil
}

// growLocked is what setting k would add to mu.bytes.
func (t *Table) growLocked(k Key) int {
	qs, ok := t.mu.table[k.pair()]
	if !ok {
		return pairBytes(k.pair()) + queueBytes
	}
	if _, ok := qs[k.Queue]; !ok {
		return queueBytes
	}
	return 0
}

// setLocked sets one offset; it reports a change.
func (t *Table) setLocked(k Key, offset int64) bool {
	t.mu.bytes += t.growLocked(k)
	qs := t.mu.table[k.pair()]
	if qs == nil {
		qs = make(map[int32]int64)
		t.mu.table[k.pair()] = qs
	}
	if old, ok := qs[k.Queue]; ok && old == offset {
		return false
	}
	qs[k.Queue] = offset
	return true
}

// Query returns group's committed offset for (topic, queue).
func (t *Table) Query(group, topic string, queue int32) (int64, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	off, ok := t.mu.table[pair{topic, group}][queue]
	return off, ok
}

// GroupsOf returns the groups with offsets on topic, sorted.
func (t *Table) GroupsOf(topic string) []string {
	return t.names(func(p pair) (string, bool) { return p.group, p.topic == topic })
}

// TopicsOf returns the topics group has offsets on, sorted.
func (t *Table) TopicsOf(group string) []string {
	return t.names(func(p pair) (string, bool) { return p.topic, p.group == group })
}

// Groups returns every group with an offset here, sorted.
func (t *Table) Groups() []string {
	return t.names(func(p pair) (string, bool) { return p.group, true })
}

// names returns the distinct names pick takes from the table's pairs,
// sorted.
func (t *Table) names(pick func(pair) (string, bool)) []string {
	seen := map[string]bool{}
	t.mu.RLock()
	for p := range t.mu.table {
		if n, ok := pick(p); ok {
			seen[n] = true
		}
	}
	t.mu.RUnlock()
	return slices.Sorted(maps.Keys(seen))
}

// RemoveTopic forgets every offset on topic (a deleted topic).
func (t *Table) RemoveTopic(topic string) {
	t.removeWhere(func(p pair) bool { return p.topic == topic })
}

// RemoveGroup forgets every offset of group (a deleted group).
func (t *Table) RemoveGroup(group string) {
	t.removeWhere(func(p pair) bool { return p.group == group })
}

// removeWhere forgets the offsets, committed and local, of every pair
// gone says goes.
func (t *Table) removeWhere(gone func(pair) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, qs := range t.mu.table {
		if gone(p) {
			t.mu.bytes -= pairBytes(p) + len(qs)*queueBytes
			delete(t.mu.table, p)
			t.mu.dirty = true
		}
	}
	for k := range t.mu.local {
		if gone(k.pair()) {
			delete(t.mu.local, k)
		}
	}
}

// All returns the table in GET_ALL_CONSUMER_OFFSET's form: "topic@group"
// to queue to offset.
func (t *Table) All() map[string]map[int32]int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string]map[int32]int64, len(t.mu.table))
	for p, qs := range t.mu.table {
		out[p.topic+"@"+p.group] = maps.Clone(qs)
	}
	return out
}

// Snapshot returns a copy of every committed offset.
func (t *Table) Snapshot() map[Key]int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[Key]int64, len(t.mu.table))
	for p, qs := range t.mu.table {
		for q, off := range qs {
			out[Key{p.topic, p.group, q}] = off
		}
	}
	return out
}
