package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/internal/metalog"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/vfs"
)

// Permission bits of a topic (RocketMQ's PermName).
const (
	PermPriority = 0x1 << 3
	PermRead     = 0x1 << 2
	PermWrite    = 0x1 << 1
	PermInherit  = 0x1 << 0
)

// System topic names (RocketMQ's TopicValidator and MixAll).
const (
	// AutoCreateTopicKey is TBW102: its config is the template a send to
	// an unknown topic is created from, when its perm has PermInherit.
	AutoCreateTopicKey = "TBW102"
	SelfTestTopic      = "SELF_TEST_TOPIC"
	OffsetMovedTopic   = "OFFSET_MOVED_EVENT"
	RetryGroupPrefix   = "%RETRY%"
	DLQGroupPrefix     = "%DLQ%"
	// MaxTopicLength is the stored record's limit (a one-byte length).
	MaxTopicLength = 127
	// MaxQueueNums bounds a topic's read and write queue counts.
	MaxQueueNums = 1024
)

// TopicConfig is one topic's settings, in RocketMQ's JSON field names (the
// same object the name server receives in REGISTER_BROKER).
type TopicConfig struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int    `json:"readQueueNums"`
	WriteQueueNums  int    `json:"writeQueueNums"`
	Perm            int    `json:"perm"`
	TopicFilterType string `json:"topicFilterType"`
	TopicSysFlag    int    `json:"topicSysFlag"`
	Order           bool   `json:"order"`
}

func newTopicConfig(name string, queues, perm int) TopicConfig {
	return TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm, TopicFilterType: "SINGLE_TAG"}
}

// DataVersion is RocketMQ's DataVersion: bumped on every topic change, so
// a name server can tell a changed registration from a repeat.
type DataVersion struct {
	Timestamp int64 `json:"timestamp"`
	Counter   int64 `json:"counter"`
}

// topicsFile is topics.json, RocketMQ's TopicConfigSerializeWrapper.
type topicsFile struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// ErrBadTopic is wrapped by errors about a topic name or settings.
var ErrBadTopic = errors.New("broker: bad topic")

// ValidateTopic checks a topic name the way RocketMQ's TopicValidator
// does: 1 to 127 characters of [%|a-zA-Z0-9_-].
func ValidateTopic(name string) error { return validateName(ErrBadTopic, name, MaxTopicLength) }

// validateName checks a topic or group name: 1 to max characters of
// [%|a-zA-Z0-9_-]; an error wraps kind.
func validateName(kind error, name string, max int) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", kind)
	}
	if len(name) > max {
		return fmt.Errorf("%w: %q is longer than %d", kind, name[:16]+"...", max)
	}
	if i := badNameChar(name); i >= 0 {
		return fmt.Errorf("%w: %q holds %q (allowed: %%|a-zA-Z0-9_-)", kind, name, name[i])
	}
	return nil
}

// badNameChar is the index of name's first byte outside RocketMQ's
// ^[%|a-zA-Z0-9_-]+$, or -1.
func badNameChar(name string) int {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '%' || c == '|' || c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return i
		}
	}
	return -1
}

// topicManager holds the topic table and persists it to topics.json. It is
// safe for concurrent use and starts no goroutines; after a change the
// caller re-registers with the name servers.
type topicManager struct {
	file  jsonFile
	clock func() time.Time
	// readOnly: a slave, whose table changes only by adopt (its master's
	// copy); every other change fails with errSlaveMetadata.
	readOnly bool
	// system names the topics the broker made itself.
	system map[string]bool
	// max bounds the table (MaxTopics; tests set less).
	max int
	// saveMu serialises writes of the file, outside mu.
	saveMu sync.Mutex
	// log holds the changes since topics.json (topics_log.go); nil until
	// load opens it.
	log *metalog.Log
	// compactAt: a log file of fewer records is not compacted
	// (compactMin; tests set less).
	compactAt int
	// snapshotTopics is how many topics topics.json holds (its last
	// write, or the load).
	snapshotTopics atomic.Int64
	// pages: the sorted names paged answers are cut from
	// (topics_page.go).
	pages pageCache
	// incarnation names this run's change seqs (topicChanges.seq starts
	// again at each start): a slave's cursor from another run is no
	// cursor (topics_page.go).
	incarnation uint64
	mu          struct {
		sync.RWMutex
		table   map[string]TopicConfig
		version DataVersion
		// changes: what changed since the registrar last took them
		// (topics_changes.go).
		changes topicChanges
	}
}

func newTopicManager(fs vfs.FS, cfg *Config) *topicManager {
	m := &topicManager{file: jsonFile{fs: fs, path: filepath.Join(cfg.ConfigDir(), "topics.json"), rep: newFileReport(cfg)},
		clock: cfg.Clock, system: make(map[string]bool), readOnly: cfg.BrokerRole == Slave, max: MaxTopics, compactAt: compactMin,
		incarnation: rand.Uint64()}
	m.mu.table = make(map[string]TopicConfig)
	add := func(tc TopicConfig) {
		m.mu.table[tc.TopicName] = tc
		m.system[tc.TopicName] = true
	}
	add(newTopicConfig(SelfTestTopic, 1, PermRead|PermWrite))
	if cfg.AutoCreateTopicEnable {
		add(newTopicConfig(AutoCreateTopicKey, cfg.DefaultTopicQueueNums, PermInherit|PermRead|PermWrite))
	}
	add(newTopicConfig(cfg.BrokerClusterName, 16, PermInherit|PermRead|PermWrite))
	add(newTopicConfig(cfg.BrokerName, 1, PermInherit|PermRead|PermWrite))
	add(newTopicConfig(OffsetMovedTopic, 1, PermRead|PermWrite))
	m.mu.version = DataVersion{Timestamp: cfg.Clock().UnixMilli()}
	return m
}

// load merges topics.json over the built-in topics, then the topic log's
// changes since (topics_log.go). An unreadable file is set aside and bad
// entries are dropped (jsonfile_load.go); it fails only when the log
// cannot be opened.
func (m *topicManager) load() error {
	// One pass straight into configs (a million topics load in seconds);
	// only a file where that fails is read entry by entry, to keep the
	// good ones.
	var fast struct {
		TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
		DataVersion      DataVersion            `json:"dataVersion"`
	}
	var f struct {
		TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
		DataVersion      DataVersion                `json:"dataVersion"`
	}
	whole := false
	raw, found := m.file.loadTolerant(func(b []byte) error {
		// The file as the broker writes it is read by hand
		// (protocol.ParseTopicTable: encoding/json took ~5 s for a
		// million topics), into a table sized for it at once.
		fast.TopicConfigTable = make(map[string]TopicConfig, len(b)/160)
		dv, ok := protocol.ParseTopicTable(b, func(name string, tc protocol.TopicConfig) {
			fast.TopicConfigTable[name] = topicFromWire(name, tc)
		})
		if ok {
			fast.DataVersion = DataVersion{Timestamp: dv.Timestamp, Counter: dv.Counter}
			whole = true
			return nil
		}
		fast.TopicConfigTable = nil
		if json.Unmarshal(b, &fast) == nil {
			whole = true
			return nil
		}
		fast.TopicConfigTable = nil
		return json.Unmarshal(b, &f)
	})
	if !found {
		return m.openLog()
	}
	if whole {
		f.DataVersion = fast.DataVersion
	}
	m.mu.Lock()
	var bad []string
	put := func(name string, tc TopicConfig) {
		if err := ValidateTopic(name); err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", name, err))
			return
		}
		if tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0 || tc.ReadQueueNums > MaxQueueNums || tc.WriteQueueNums > MaxQueueNums {
			bad = append(bad, fmt.Sprintf("%q: %d/%d queues", name, tc.ReadQueueNums, tc.WriteQueueNums))
			return
		}
		if name == AutoCreateTopicKey && !m.system[name] {
			return // autoCreateTopicEnable was turned off since
		}
		tc.TopicName = name
		m.mu.table[name] = tc
	}
	if len(fast.TopicConfigTable) > len(m.mu.table) {
		// The file's table becomes the table (no second map of a
		// million); the built-in topics it lacks join it.
		builtin := m.mu.table
		m.mu.table = fast.TopicConfigTable
		for name, tc := range m.mu.table {
			if ValidateTopic(name) != nil || tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0 ||
				tc.ReadQueueNums > MaxQueueNums || tc.WriteQueueNums > MaxQueueNums ||
				name == AutoCreateTopicKey && !m.system[name] {
				delete(m.mu.table, name)
				put(name, tc) // says why (or drops TBW102 quietly)
				continue
			}
			if tc.TopicName != name {
				tc.TopicName = name
				m.mu.table[name] = tc
			}
		}
		for name, tc := range builtin {
			if _, ok := m.mu.table[name]; !ok {
				m.mu.table[name] = tc
			}
		}
	} else {
		for name, tc := range fast.TopicConfigTable {
			put(name, tc)
		}
	}
	for name, rm := range f.TopicConfigTable {
		var tc TopicConfig
		if err := json.Unmarshal(rm, &tc); err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", name, err))
			continue
		}
		put(name, tc)
	}
	slices.Sort(bad)
	if f.DataVersion.Counter > m.mu.version.Counter {
		m.mu.version = f.DataVersion
	}
	if len(bad) == 0 {
		m.mu.Unlock()
		return m.openLog()
	}
	m.changedLocked()
	m.mu.Unlock()
	if err := m.openLog(); err != nil {
		return err
	}
	m.file.dropBad(raw, bad, m.save)
	return nil
}

// get returns a topic's config.
func (m *topicManager) get(name string) (TopicConfig, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tc, ok := m.mu.table[name]
	return tc, ok
}

// snapshot returns a copy of the table and its version.
func (m *topicManager) snapshot() (map[string]TopicConfig, DataVersion) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return maps.Clone(m.mu.table), m.mu.version
}

// names returns every topic name, sorted.
func (m *topicManager) names() []string {
	m.mu.RLock()
	out := make([]string, 0, len(m.mu.table))
	for n := range m.mu.table {
		out = append(out, n)
	}
	m.mu.RUnlock()
	sort.Strings(out)
	return out
}

// changedLocked bumps the version after a change to the named topics (all
// of them when none is named).
func (m *topicManager) changedLocked(names ...string) {
	m.mu.version.Counter++
	m.mu.version.Timestamp = m.clock().UnixMilli()
	m.mu.changes.note(names)
}

// update creates or replaces a topic (UPDATE_AND_CREATE_TOPIC). changed is
// false when the stored config was already equal.
func (m *topicManager) update(tc TopicConfig) (changed bool, err error) {
	if m.readOnly {
		return false, errSlaveMetadata
	}
	if err := checkTopicConfig(&tc); err != nil {
		return false, err
	}
	m.mu.Lock()
	if old, ok := m.mu.table[tc.TopicName]; ok && old == tc {
		m.mu.Unlock()
		return false, nil
	}
	if err := m.roomLocked(tc.TopicName); err != nil {
		m.mu.Unlock()
		return false, err
	}
	m.mu.table[tc.TopicName] = tc
	m.changedLocked(tc.TopicName)
	t, werr := m.logPutLocked(tc)
	m.mu.Unlock()
	return true, m.persist(t, werr)
}

// checkTopicConfig validates an admin's topic config and fills in the
// default filter type.
func checkTopicConfig(tc *TopicConfig) error {
	if err := ValidateTopic(tc.TopicName); err != nil {
		return err
	}
	if tc.ReadQueueNums < 1 || tc.WriteQueueNums < 1 || tc.ReadQueueNums > MaxQueueNums || tc.WriteQueueNums > MaxQueueNums {
		return fmt.Errorf("%w: %q queues read %d write %d, want 1..%d", ErrBadTopic, tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, MaxQueueNums)
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = "SINGLE_TAG"
	}
	return nil
}

// createInSend returns topic's config, creating it from defaultTopic's when
// that template exists and has PermInherit (RocketMQ's
// createTopicInSendMessageMethod): min(clientQueues, the template's write
// queues) queues, the template's perm without PermInherit.
func (m *topicManager) createInSend(topic, defaultTopic string, clientQueues, sysFlag int) (tc TopicConfig, created bool, err error) {
	if tc, ok := m.get(topic); ok {
		return tc, false, nil
	}
	if m.readOnly {
		return TopicConfig{}, false, errSlaveMetadata
	}
	if err := ValidateTopic(topic); err != nil {
		return TopicConfig{}, false, err
	}
	m.mu.Lock()
	if tc, ok := m.mu.table[topic]; ok {
		m.mu.Unlock()
		return tc, false, nil
	}
	def, ok := m.mu.table[defaultTopic]
	if !ok || def.Perm&PermInherit == 0 {
		m.mu.Unlock()
		return TopicConfig{}, false, fmt.Errorf("%w: topic %q does not exist and default topic %q cannot create it (auto-creation disabled)", ErrBadTopic, topic, defaultTopic)
	}
	q := min(clientQueues, def.WriteQueueNums)
	if q < 1 {
		q = 1
	}
	if err := m.roomLocked(topic); err != nil {
		m.mu.Unlock()
		return TopicConfig{}, false, err
	}
	tc = newTopicConfig(topic, q, def.Perm&^PermInherit)
	tc.TopicSysFlag = sysFlag
	tc.TopicFilterType = def.TopicFilterType
	m.mu.table[topic] = tc
	m.changedLocked(topic)
	t, werr := m.logPutLocked(tc)
	m.mu.Unlock()
	return tc, true, m.persist(t, werr)
}

// createIfMissing returns topic's config, creating it with queues and perm
// when absent (retry and dead-letter topics: RocketMQ's
// createTopicInSendMessageBackMethod).
func (m *topicManager) createIfMissing(topic string, queues, perm int) (tc TopicConfig, created bool, err error) {
	if tc, ok := m.get(topic); ok {
		return tc, false, nil
	}
	if m.readOnly {
		return TopicConfig{}, false, errSlaveMetadata
	}
	if err := ValidateTopic(topic); err != nil {
		return TopicConfig{}, false, err
	}
	m.mu.Lock()
	if tc, ok := m.mu.table[topic]; ok {
		m.mu.Unlock()
		return tc, false, nil
	}
	if err := m.roomLocked(topic); err != nil {
		m.mu.Unlock()
		return TopicConfig{}, false, err
	}
	tc = newTopicConfig(topic, queues, perm)
	m.mu.table[topic] = tc
	m.changedLocked(topic)
	t, werr := m.logPutLocked(tc)
	m.mu.Unlock()
	return tc, true, m.persist(t, werr)
}

// MaxTopics bounds the topic table. A registration with the name servers
// carries what changed, and a full one goes in chunks (register.go), so
// the table is no longer bound by a frame, nor is a slave's copy of it
// (paged, slave_sync_topics.go); what still is: GET_ALL_TOPIC_CONFIG's
// classic answer, what official admin tools ask, is one frame, refused
// past it (answers.bounded), about 50,000 topics; and a name server lists every topic in one answer
// (namesrv.MaxTopicListBytes, 15 MiB of names: about 1.2 million topics
// of 10 characters; past it the name server refuses their routes, and a
// create answers so). Past MaxTopics a new topic is refused
// (ErrTooManyTopics), whether created by an admin, a send or a heartbeat.
const MaxTopics = 1 << 21

// ErrTooManyTopics is a topic refused because the table holds its bound
// (MaxTopics).
var ErrTooManyTopics = fmt.Errorf("%w: the broker holds the most topics it may", ErrBadTopic)

// roomLocked refuses a new topic when the table is full; a topic already
// there may always change.
func (m *topicManager) roomLocked(name string) error {
	if _, ok := m.mu.table[name]; !ok && len(m.mu.table) >= m.max {
		return ErrTooManyTopics
	}
	return nil
}

// remove deletes a topic; it reports whether it existed.
func (m *topicManager) remove(topic string) (bool, error) {
	if m.readOnly {
		return false, errSlaveMetadata
	}
	m.mu.Lock()
	if _, ok := m.mu.table[topic]; !ok || m.system[topic] {
		m.mu.Unlock()
		return false, nil
	}
	delete(m.mu.table, topic)
	m.changedLocked(topic)
	t, werr := m.logDeleteLocked(topic)
	m.mu.Unlock()
	return true, m.persist(t, werr)
}

// adopt replaces the table with the master's when its version differs
// (SlaveSynchronize.syncTopicConfig: topics the master lacks go, the
// master's are put, its version kept). It returns the topics that went
// (their offsets go too) and whether anything changed (then saved).
func (m *topicManager) adopt(table map[string]TopicConfig, v DataVersion) (removed []string, changed bool, err error) {
	m.mu.Lock()
	if m.mu.version == v {
		m.mu.Unlock()
		return nil, false, nil
	}
	for name := range m.mu.table {
		if _, ok := table[name]; !ok {
			removed = append(removed, name)
		}
	}
	m.mu.table = make(map[string]TopicConfig, len(table))
	for name, tc := range table {
		if ValidateTopic(name) != nil {
			continue
		}
		tc.TopicName = name
		m.mu.table[name] = tc
	}
	m.mu.version = v
	m.mu.changes.note(nil)
	m.mu.Unlock()
	sort.Strings(removed)
	return removed, true, m.save()
}

// addSystem adds a built-in topic unless the table has it (a slave's
// copy of its master's table has it already).
func (m *topicManager) addSystem(tc TopicConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.system[tc.TopicName] = true
	if _, ok := m.mu.table[tc.TopicName]; !ok {
		m.mu.table[tc.TopicName] = tc
	}
}
