package broker

import (
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/vfs"
)

// groupsFile is subscriptionGroup.json, RocketMQ's SubscriptionGroupWrapper.
type groupsFile struct {
	SubscriptionGroupTable map[string]protocol.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            DataVersion                                 `json:"dataVersion"`
}

// groupManager holds the subscription group configs (RocketMQ's
// SubscriptionGroupManager) and persists them to subscriptionGroup.json. A
// group nobody configured reads as protocol.DefaultSubscriptionGroup. On a
// slave the table changes only by adopt (the master's copy). Safe for
// concurrent use; no goroutines.
type groupManager struct {
	file     jsonFile
	clock    func() time.Time
	readOnly bool // a slave: only adopt changes the table
	saveMu   sync.Mutex
	mu       struct {
		sync.RWMutex
		table   map[string]protocol.SubscriptionGroupConfig
		version DataVersion
	}
}

func newGroupManager(fs vfs.FS, cfg *Config) *groupManager {
	m := &groupManager{file: jsonFile{fs: fs, path: filepath.Join(cfg.ConfigDir(), "subscriptionGroup.json")},
		clock: cfg.Clock, readOnly: cfg.BrokerRole == Slave}
	m.mu.table = make(map[string]protocol.SubscriptionGroupConfig)
	m.mu.version = DataVersion{Timestamp: cfg.Clock().UnixMilli()}
	return m
}

func (m *groupManager) load() error {
	var f groupsFile
	found, err := m.file.load(&f)
	if err != nil || !found {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, g := range f.SubscriptionGroupTable {
		if name == "" {
			return fmt.Errorf("broker: subscriptionGroup.json holds a group without a name")
		}
		g.GroupName = name
		m.mu.table[name] = g
	}
	m.mu.version = f.DataVersion
	return nil
}

func (m *groupManager) save() error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.RLock()
	f := groupsFile{SubscriptionGroupTable: maps.Clone(m.mu.table), DataVersion: m.mu.version}
	m.mu.RUnlock()
	return m.file.save(f)
}

// find returns group's config, or RocketMQ's default for an unknown group.
func (m *groupManager) find(group string) protocol.SubscriptionGroupConfig {
	m.mu.RLock()
	g, ok := m.mu.table[group]
	m.mu.RUnlock()
	if !ok {
		return protocol.DefaultSubscriptionGroup(group)
	}
	return g
}

// snapshot returns a copy of the table and its version.
func (m *groupManager) snapshot() (map[string]protocol.SubscriptionGroupConfig, DataVersion) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return maps.Clone(m.mu.table), m.mu.version
}

func (m *groupManager) bumpLocked() {
	m.mu.version.Counter++
	m.mu.version.Timestamp = m.clock().UnixMilli()
}

// createIfMissing adds group with the default config (a heartbeat's
// auto-creation); created is false when it exists or on a slave.
func (m *groupManager) createIfMissing(group string) (created bool, err error) {
	if m.readOnly || group == "" {
		return false, nil
	}
	m.mu.Lock()
	if _, ok := m.mu.table[group]; ok {
		m.mu.Unlock()
		return false, nil
	}
	m.mu.table[group] = protocol.DefaultSubscriptionGroup(group)
	m.bumpLocked()
	m.mu.Unlock()
	return true, m.save()
}

// update creates or replaces a group's config.
func (m *groupManager) update(g protocol.SubscriptionGroupConfig) error {
	if m.readOnly {
		return errSlaveMetadata
	}
	if g.GroupName == "" {
		return fmt.Errorf("broker: subscription group without a name")
	}
	m.mu.Lock()
	if old, ok := m.mu.table[g.GroupName]; ok && old == g {
		m.mu.Unlock()
		return nil
	}
	m.mu.table[g.GroupName] = g
	m.bumpLocked()
	m.mu.Unlock()
	return m.save()
}

// remove deletes a group's config; it reports whether it existed.
func (m *groupManager) remove(group string) (bool, error) {
	if m.readOnly {
		return false, errSlaveMetadata
	}
	m.mu.Lock()
	if _, ok := m.mu.table[group]; !ok {
		m.mu.Unlock()
		return false, nil
	}
	delete(m.mu.table, group)
	m.bumpLocked()
	m.mu.Unlock()
	return true, m.save()
}

// adopt replaces the table with the master's when its version differs
// (SlaveSynchronize.syncSubscriptionGroupConfig), keeping the master's
// version; changed reports a replacement (saved).
func (m *groupManager) adopt(table map[string]protocol.SubscriptionGroupConfig, v DataVersion) (changed bool, err error) {
	m.mu.Lock()
	if m.mu.version == v {
		m.mu.Unlock()
		return false, nil
	}
	m.mu.table = make(map[string]protocol.SubscriptionGroupConfig, len(table))
	for name, g := range table {
		if name == "" {
			continue
		}
		g.GroupName = name
		m.mu.table[name] = g
	}
	m.mu.version = v
	m.mu.Unlock()
	return true, m.save()
}
