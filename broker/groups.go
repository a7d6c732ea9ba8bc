package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
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
	m := &groupManager{file: jsonFile{fs: fs, path: filepath.Join(cfg.ConfigDir(), "subscriptionGroup.json"), rep: newFileReport(cfg)},
		clock: cfg.Clock, readOnly: cfg.BrokerRole == Slave}
	m.mu.table = make(map[string]protocol.SubscriptionGroupConfig)
	m.mu.version = DataVersion{Timestamp: cfg.Clock().UnixMilli()}
	return m
}

// load reads subscriptionGroup.json. It does not fail: an unreadable file
// is set aside and bad entries are dropped (jsonfile_load.go). The error is
// for the callers' form.
func (m *groupManager) load() error {
	var f struct {
		SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
		DataVersion            DataVersion                `json:"dataVersion"`
	}
	raw, found := m.file.loadTolerant(func(b []byte) error { return json.Unmarshal(b, &f) })
	if !found {
		return nil
	}
	m.mu.Lock()
	var bad []string
	for _, name := range slices.Sorted(maps.Keys(f.SubscriptionGroupTable)) {
		var g protocol.SubscriptionGroupConfig
		if err := json.Unmarshal(f.SubscriptionGroupTable[name], &g); err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", name, err))
			continue
		}
		if err := ValidateGroup(name); err != nil {
			bad = append(bad, err.Error())
			continue
		}
		g.GroupName = name
		m.mu.table[name] = g
	}
	m.mu.version = f.DataVersion
	if len(bad) == 0 {
		m.mu.Unlock()
		return nil
	}
	m.bumpLocked()
	m.mu.Unlock()
	m.file.dropBad(raw, bad, m.save)
	return nil
}

// MaxGroups bounds the subscription group table: every group's config
// (some 600 bytes of JSON) is in GET_ALL_SUBSCRIPTIONGROUP_CONFIG's answer,
// one frame; 16,384 groups take about 10 MiB. Past it a new group is
// refused, whether by an admin or a heartbeat's auto-creation (RocketMQ
// has no such bound).
const MaxGroups = 1 << 14

var errTooManyGroups = fmt.Errorf("%w: the broker holds %d subscription groups, its limit", ErrBadGroup, MaxGroups)

// MaxGroupLength is the longest consumer or producer group name
// (RocketMQ's Validators.CHARACTER_MAX_LENGTH).
const MaxGroupLength = 255

// ErrBadGroup is wrapped by errors about a group name.
var ErrBadGroup = errors.New("broker: bad group")

// ValidateGroup checks a group name the way RocketMQ's Validators.checkGroup
// does: 1 to 255 characters of [%|a-zA-Z0-9_-].
func ValidateGroup(name string) error { return validateName(ErrBadGroup, name, MaxGroupLength) }

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
	if m.readOnly {
		return false, nil
	}
	if err := ValidateGroup(group); err != nil {
		return false, err
	}
	m.mu.Lock()
	if _, ok := m.mu.table[group]; ok {
		m.mu.Unlock()
		return false, nil
	}
	if len(m.mu.table) >= MaxGroups {
		m.mu.Unlock()
		return false, errTooManyGroups
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
	if err := ValidateGroup(g.GroupName); err != nil {
		return err
	}
	m.mu.Lock()
	old, ok := m.mu.table[g.GroupName]
	if ok && old == g {
		m.mu.Unlock()
		return nil
	}
	if !ok && len(m.mu.table) >= MaxGroups {
		m.mu.Unlock()
		return errTooManyGroups
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
