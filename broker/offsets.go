package broker

import (
	"fmt"
	"path/filepath"
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
}

// offsetKey is a (topic, group) pair.
type offsetKey struct{ topic, group string }

// offsetManager holds committed consumer offsets, persisted by save (the
// broker calls it every FlushConsumerOffsetInterval and on close). Safe for
// concurrent use; no goroutines.
type offsetManager struct {
	file   jsonFile
	saveMu sync.Mutex
	mu     struct {
		sync.RWMutex
		table map[offsetKey]map[int32]int64
		dirty bool
	}
}

func newOffsetManager(fs vfs.FS, cfg *Config) *offsetManager {
	m := &offsetManager{file: jsonFile{fs: fs, path: filepath.Join(cfg.ConfigDir(), "consumerOffset.json")}}
	m.mu.table = make(map[offsetKey]map[int32]int64)
	return m
}

func (m *offsetManager) load() error {
	var f offsetsFile
	found, err := m.file.load(&f)
	if err != nil || !found {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, qs := range f.OffsetTable {
		topic, group, ok := strings.Cut(k, "@")
		if !ok || topic == "" || group == "" {
			return fmt.Errorf("broker: consumerOffset.json: bad key %q (want topic@group)", k)
		}
		t := make(map[int32]int64, len(qs))
		for q, off := range qs {
			id, err := strconv.ParseInt(q, 10, 32)
			if err != nil || id < 0 {
				return fmt.Errorf("broker: consumerOffset.json: %s: bad queue id %q", k, q)
			}
			t[int32(id)] = off
		}
		m.mu.table[offsetKey{topic, group}] = t
	}
	return nil
}

// commit records group's offset for (topic, queue).
func (m *offsetManager) commit(group, topic string, queue int32, offset int64) {
	k := offsetKey{topic, group}
	m.mu.Lock()
	t := m.mu.table[k]
	if t == nil {
		t = make(map[int32]int64)
		m.mu.table[k] = t
	}
	if old, ok := t[queue]; !ok || old != offset {
		t[queue] = offset
		m.mu.dirty = true
	}
	m.mu.Unlock()
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
	m.mu.Lock()
	for k := range m.mu.table {
		if k.topic == topic {
			delete(m.mu.table, k)
			m.mu.dirty = true
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
