package broker

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/samsamq/samsa/storage/vfs"
)

// offsetsFile is consumerOffset.json in RocketMQ's layout: "topic@group"
// to queue id to the next offset the group will consume. RocketMQ's
// fastjson writes the queue ids as bare numbers; we write them quoted (valid
// JSON, which fastjson also reads).
type offsetsFile struct {
	OffsetTable map[string]map[string]int64 `json:"offsetTable"`
	// LocalTable (ours, a slave's only) holds the commits made on the
	// slave that its master has not taken yet (slave_sync.go), so they
	// survive a restart of the slave.
	LocalTable map[string]map[string]int64 `json:"slaveLocalOffsetTable,omitempty"`
}

// offsetKey is a (topic, group) pair.
type offsetKey struct{ topic, group string }

// offsetRef is one queue's offset of a group.
type offsetRef struct {
	offsetKey
	queue int32
}

// offsetManager holds committed consumer offsets, persisted by save (the
// broker calls it every FlushConsumerOffsetInterval and on close). On a
// slave it also remembers which offsets were committed there (local), for
// the metadata sync to hand them to the master. Safe for concurrent use;
// no goroutines.
type offsetManager struct {
	file   jsonFile
	saveMu sync.Mutex
	// slaveNow, when set (controller mode: the role changes at runtime),
	// says whether commits are a slave's, kept as local; set before Start.
	slaveNow func() bool
	mu       struct {
		sync.RWMutex
		table map[offsetKey]map[int32]int64
		// bytes estimates the table's JSON (GET_ALL_CONSUMER_OFFSET's
		// answer): offsetKeyBytes per key, offsetQueueBytes per queue.
		bytes int
		dirty bool
		// local: on a slave, the offsets committed to it and not yet
		// taken by the master; nil on a master.
		local map[offsetRef]int64
	}
}

func newOffsetManager(fs vfs.FS, cfg *Config) *offsetManager {
	m := &offsetManager{file: jsonFile{fs: fs, path: filepath.Join(cfg.ConfigDir(), "consumerOffset.json"), rep: newFileReport(cfg)}}
	m.mu.table = make(map[offsetKey]map[int32]int64)
	if cfg.BrokerRole == Slave || cfg.EnableControllerMode {
		m.mu.local = make(map[offsetRef]int64)
	}
	return m
}

// parseOffsetTable reads the file's "topic@group" → queue → offset form,
// handing each good offset to fn; it returns the bad entries, each with
// its reason (load drops them).
func parseOffsetTable(in map[string]json.RawMessage, fn func(r offsetRef, off int64)) (bad []string) {
	for _, k := range slices.Sorted(maps.Keys(in)) {
		topic, group, ok := strings.Cut(k, "@")
		if !ok {
			bad = append(bad, fmt.Sprintf("%q: not topic@group", k))
			continue
		}
		if err := ValidateTopic(topic); err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", k, err))
			continue
		}
		if err := ValidateGroup(group); err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", k, err))
			continue
		}
		var qs map[string]int64
		if err := json.Unmarshal(in[k], &qs); err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", k, err))
			continue
		}
		for q, off := range qs {
			id, err := strconv.ParseInt(q, 10, 32)
			if err != nil || id < 0 || off < 0 {
				bad = append(bad, fmt.Sprintf("%q: queue %q offset %d", k, q, off))
				continue
			}
			fn(offsetRef{offsetKey{topic, group}, int32(id)}, off)
		}
	}
	return bad
}

// offsetsFileRaw is offsetsFile with each entry left raw, so one bad
// entry is dropped rather than the whole file.
type offsetsFileRaw struct {
	OffsetTable map[string]json.RawMessage `json:"offsetTable"`
	LocalTable  map[string]json.RawMessage `json:"slaveLocalOffsetTable"`
}

// load reads consumerOffset.json. It does not fail: an unreadable file is
// set aside and bad entries are dropped (jsonfile_load.go). The error is
// for the callers' form.
func (m *offsetManager) load() error {
	var f offsetsFileRaw
	raw, found := m.file.loadTolerant(func(b []byte) error { return json.Unmarshal(b, &f) })
	if !found {
		return nil
	}
	m.mu.Lock()
	bad := parseOffsetTable(f.OffsetTable, func(r offsetRef, off int64) { m.setLocked(r, off) })
	if m.mu.local != nil { // a master has no use for a slave's leftovers: they are in its table
		bad = append(bad, parseOffsetTable(f.LocalTable, func(r offsetRef, off int64) { m.mu.local[r] = off })...)
	}
	m.mu.Unlock()
	if len(bad) > 0 {
		m.file.dropBad(raw, bad, func() error { return m.save(true) }) // dirty stays set on failure
	}
	return nil
}

// The consumer-offset table is bounded so that GET_ALL_CONSUMER_OFFSET's
// answer (what a slave copies) fits a frame: its JSON, estimated generously
// (offsetKeyBytes per topic@group, offsetQueueBytes per queue), stays under
// maxOffsetTableBytes (8 MiB: some 250,000 queues). A commit that would
// add past it is refused (errOffsetTableFull); queues already there may
// always move.
const (
	maxOffsetTableBytes = 8 << 20
	offsetQueueBytes    = 32 // "1023":9223372036854775807,
)

func offsetKeyBytes(k offsetKey) int { return len(k.topic) + 1 + len(k.group) + 8 }

// errOffsetTableFull is a commit refused because the table is full.
var errOffsetTableFull = fmt.Errorf("broker: the consumer offset table is full (%d bytes); offsets of new queues or groups are refused until some are deleted", maxOffsetTableBytes)

// growLocked is what setting r would add to mu.bytes.
func (m *offsetManager) growLocked(r offsetRef) int {
	t, ok := m.mu.table[r.offsetKey]
	if !ok {
		return offsetKeyBytes(r.offsetKey) + offsetQueueBytes
	}
	if _, ok := t[r.queue]; !ok {
		return offsetQueueBytes
	}
	return 0
}

// setLocked sets one offset; it reports a change.
func (m *offsetManager) setLocked(r offsetRef, offset int64) bool {
	m.mu.bytes += m.growLocked(r)
	t := m.mu.table[r.offsetKey]
	if t == nil {
		t = make(map[int32]int64)
		m.mu.table[r.offsetKey] = t
	}
	if old, ok := t[r.queue]; ok && old == offset {
		return false
	}
	t[r.queue] = offset
	return true
}

// commit records group's offset for (topic, queue); it fails, storing
// nothing, when a new queue would take the table past its bound.
// On a slave the commit is also remembered as local, for the master.
func (m *offsetManager) commit(group, topic string, queue int32, offset int64) error {
	return m.commitBounded(group, topic, queue, offset, true)
}

// commitSystem is commit for the broker's own progress offsets (a fixed
// few), which the bound does not refuse.
func (m *offsetManager) commitSystem(group, topic string, queue int32, offset int64) {
	_ = m.commitBounded(group, topic, queue, offset, false)
}

func (m *offsetManager) commitBounded(group, topic string, queue int32, offset int64, bounded bool) error {
	r := offsetRef{offsetKey{topic, group}, queue}
	m.mu.Lock()
	if g := m.growLocked(r); bounded && g > 0 && m.mu.bytes+g > maxOffsetTableBytes {
		m.mu.Unlock()
		return errOffsetTableFull
	}
	if m.setLocked(r, offset) {
		m.mu.dirty = true
	}
	if m.mu.local != nil && (m.slaveNow == nil || m.slaveNow()) {
		if old, ok := m.mu.local[r]; !ok || old != offset {
			m.mu.local[r] = offset
			m.mu.dirty = true
		}
	}
	m.mu.Unlock()
	return nil
}

// query returns group's committed offset for (topic, queue).
func (m *offsetManager) query(group, topic string, queue int32) (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	off, ok := m.mu.table[offsetKey{topic, group}][queue]
	return off, ok
}

// groupsOf returns the groups with offsets on topic.
func (m *offsetManager) groupsOf(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.mu.table {
		if k.topic == topic {
			out = append(out, k.group)
		}
	}
	return out
}

// removeTopic forgets every offset on topic.
func (m *offsetManager) removeTopic(topic string) {
	m.removeWhere(func(k offsetKey) bool { return k.topic == topic })
}

// removeGroup forgets every offset of group.
func (m *offsetManager) removeGroup(group string) {
	m.removeWhere(func(k offsetKey) bool { return k.group == group })
}

// removeWhere forgets the offsets (committed and local) of every
// (topic, group) gone says goes.
func (m *offsetManager) removeWhere(gone func(offsetKey) bool) {
	m.mu.Lock()
	for k, qs := range m.mu.table {
		if gone(k) {
			m.mu.bytes -= offsetKeyBytes(k) + len(qs)*offsetQueueBytes
			delete(m.mu.table, k)
			m.mu.dirty = true
		}
	}
	for r := range m.mu.local {
		if gone(r.offsetKey) {
			delete(m.mu.local, r)
		}
	}
	m.mu.Unlock()
}

// save writes consumerOffset.json if anything changed since the last save
// (or always, when force).
func (m *offsetManager) save(force bool) error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	if !m.mu.dirty && !force {
		m.mu.Unlock()
		return nil
	}
	f := offsetsFile{OffsetTable: make(map[string]map[string]int64, len(m.mu.table))}
	for k, qs := range m.mu.table {
		t := make(map[string]int64, len(qs))
		for q, off := range qs {
			t[strconv.Itoa(int(q))] = off
		}
		f.OffsetTable[k.topic+"@"+k.group] = t
	}
	for r, off := range m.mu.local {
		if f.LocalTable == nil {
			f.LocalTable = make(map[string]map[string]int64)
		}
		k := r.topic + "@" + r.group
		if f.LocalTable[k] == nil {
			f.LocalTable[k] = make(map[string]int64)
		}
		f.LocalTable[k][strconv.Itoa(int(r.queue))] = off
	}
	m.mu.dirty = false
	m.mu.Unlock()
	if err := m.file.save(f); err != nil {
		m.mu.Lock()
		m.mu.dirty = true
		m.mu.Unlock()
		return err
	}
	return nil
}

// wire returns the table in GET_ALL_CONSUMER_OFFSET's form.
func (m *offsetManager) wire() map[string]map[int32]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]map[int32]int64, len(m.mu.table))
	for k, qs := range m.mu.table {
		out[k.topic+"@"+k.group] = maps.Clone(qs)
	}
	return out
}

// dropLocal forgets every local offset: a controller-mode replica made
// master has them in its table already.
func (m *offsetManager) dropLocal() {
	m.mu.Lock()
	if len(m.mu.local) > 0 {
		clear(m.mu.local)
		m.mu.dirty = true
	}
	m.mu.Unlock()
}

// localChanges returns a slave's offsets its master has not taken yet.
func (m *offsetManager) localChanges() map[offsetRef]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return maps.Clone(m.mu.local)
}

// taken forgets a local offset the master now has (or has passed),
// unless a newer commit replaced it meanwhile.
func (m *offsetManager) taken(r offsetRef, offset int64) {
	m.mu.Lock()
	if off, ok := m.mu.local[r]; ok && off == offset {
		delete(m.mu.local, r)
		m.mu.dirty = true
	}
	m.mu.Unlock()
}

// adopt takes the master's offsets (SlaveSynchronize.syncConsumerOffset:
// the master's entries replace the slave's, offsets only the slave has
// stay), except those committed locally and not yet taken by the master.
// It reports whether anything changed.
func (m *offsetManager) adopt(master map[offsetRef]int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for r, off := range master {
		if _, local := m.mu.local[r]; local {
			continue
		}
		if ValidateTopic(r.topic) != nil || ValidateGroup(r.group) != nil || r.queue < 0 || off < 0 {
			continue // what this broker's own file could not hold
		}
		if m.setLocked(r, off) {
			changed = true
		}
	}
	m.mu.dirty = m.mu.dirty || changed
	return changed
}
