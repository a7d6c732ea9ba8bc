package broker

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/samsamq/samsa/broker/internal/metalog"
	"github.com/samsamq/samsa/protocol"
)

// The topic table persists as changes (package metalog): topics.json is
// the snapshot, RocketMQ's TopicConfigSerializeWrapper as before, and
// topics.log.N beside it holds every change since, a record each — a
// create costs one small append and an fsync shared with the creates
// beside it, not a rewrite of the table. When the newest log file holds
// more records than the table has topics (at least compactMin), the
// change that crosses it compacts: a new log file, topics.json written
// whole, the older log files removed — so compaction costs a constant per
// change, and a restart reads at most about twice the table. (The table
// counted is topics.json's, the last snapshot's: counting the live table,
// which grows with every create, a run of creates never compacted.) A clean close
// compacts too, so topics.json alone is the table (RocketMQ reads it as it
// is).
//
// A record is one byte of kind and the rest:
//
//	| kind | rest                         |
//	|------|------------------------------|
//	| 'P'  | the topic's TopicConfig JSON |
//	| 'D'  | the deleted topic's name     |

const (
	topicLogBase = "topics.log"
	// compactMin: a log file of fewer records is not compacted.
	compactMin = 4096
)

// openLog replays the topic log over the table load read from topics.json
// and opens it for the changes to come.
func (m *topicManager) openLog() error {
	m.snapshotTopics.Store(int64(m.count()))
	replayed := 0
	apply := func(p []byte) error {
		if len(p) == 0 {
			return nil
		}
		replayed++
		m.mu.Lock()
		defer m.mu.Unlock()
		switch p[0] {
		case 'P':
			tc, ok := decodeTopicConfig(p[1:])
			if !ok || ValidateTopic(tc.TopicName) != nil {
				return nil // whole (its CRC held) but not ours to load: skipped
			}
			if tc.TopicName == AutoCreateTopicKey && !m.system[tc.TopicName] {
				return nil
			}
			m.mu.table[tc.TopicName] = tc
		case 'D':
			if name := string(p[1:]); !m.system[name] {
				delete(m.mu.table, name)
			}
		}
		return nil
	}
	l, err := metalog.Open(m.file.fs, filepath.Dir(m.file.path), topicLogBase, apply)
	if err != nil {
		return fmt.Errorf("broker: topic log: %w", err)
	}
	m.log = l
	if replayed > 0 {
		// topics.json's version predates the log's changes: a new one, so
		// that no slave holding that version takes the table for its own.
		m.mu.Lock()
		m.mu.version.Counter++
		m.mu.version.Timestamp = m.clock().UnixMilli()
		m.mu.Unlock()
	}
	return nil
}

// logPutLocked appends tc's config to the log (nil log: nothing); the
// caller holds mu, so the log's order is the table's.
func (m *topicManager) logPutLocked(tc TopicConfig) (metalog.Ticket, error) {
	if m.log == nil {
		return metalog.Ticket{}, nil
	}
	return m.log.Write(protocol.AppendTopicConfig([]byte{'P'}, tc.wire()))
}

// decodeTopicConfig reads a TopicConfig's JSON: by hand when it is of the
// plain shape (protocol.ParseTopicConfig), else with encoding/json.
func decodeTopicConfig(b []byte) (TopicConfig, bool) {
	if w, n, ok := protocol.ParseTopicConfig(b); ok && n == len(b) {
		return topicFromWire(w.TopicName, w), true
	}
	var tc TopicConfig
	return tc, json.Unmarshal(b, &tc) == nil
}

// encodeLocked is topics.json's bytes (RocketMQ's
// TopicConfigSerializeWrapper, a topic a line) and how many topics it
// holds; the caller holds mu (read). Written by hand: encoding/json's
// MarshalIndent of a million topics took ~10 s.
func (m *topicManager) encodeLocked() ([]byte, int) {
	b := make([]byte, 0, 64+len(m.mu.table)*160)
	b = append(b, "{\n  \"topicConfigTable\": {"...)
	first := true
	for name, tc := range m.mu.table {
		if first {
			b = append(b, "\n    "...)
		} else {
			b = append(b, ",\n    "...)
		}
		first = false
		b = protocol.AppendJSONString(b, name)
		b = append(b, ": "...)
		tc.TopicName = name
		b = protocol.AppendTopicConfig(b, tc.wire())
	}
	b = append(b, "\n  },\n  \"dataVersion\": {\"timestamp\": "...)
	b = strconv.AppendInt(b, m.mu.version.Timestamp, 10)
	b = append(b, ", \"counter\": "...)
	b = strconv.AppendInt(b, m.mu.version.Counter, 10)
	return append(b, "}\n}\n"...), len(m.mu.table)
}

// logDeleteLocked appends a topic's deletion to the log.
func (m *topicManager) logDeleteLocked(name string) (metalog.Ticket, error) {
	if m.log == nil {
		return metalog.Ticket{}, nil
	}
	return m.log.Write(append([]byte{'D'}, name...))
}

// persist makes a change durable, given its log ticket (or the error its
// write got), and compacts when the log has grown past the table; with no
// log (before openLog) it saves the table whole, as before the log.
func (m *topicManager) persist(t metalog.Ticket, werr error) error {
	if m.log == nil {
		return m.save()
	}
	if werr != nil {
		return werr
	}
	if err := m.log.Sync(t); err != nil {
		return err
	}
	if m.log.Records() < max(m.compactAt, int(m.snapshotTopics.Load())) || !m.saveMu.TryLock() {
		return nil // one compaction at a time; the next change tries again
	}
	defer m.saveMu.Unlock()
	return m.compactLocked()
}

// save writes the table whole to topics.json; with a log, as a compaction
// (a new log file first, the older ones removed after).
func (m *topicManager) save() error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	return m.compactLocked()
}

// compactLocked is save; the caller holds saveMu.
func (m *topicManager) compactLocked() error {
	var gen uint64
	if m.log != nil {
		var err error
		if gen, err = m.log.Rotate(); err != nil {
			return err
		}
	}
	m.mu.RLock()
	b, n := m.encodeLocked()
	m.mu.RUnlock()
	if err := m.file.saveBytes(b); err != nil {
		return err
	}
	m.snapshotTopics.Store(int64(n))
	if m.log != nil {
		return m.log.DropBefore(gen)
	}
	return nil
}

// closeLog closes the topic log (after the close's save).
func (m *topicManager) closeLog() error {
	if m.log == nil {
		return nil
	}
	return m.log.Close()
}
