package broker

import (
	"fmt"

	"github.com/samsamq/samsa/broker/internal/metalog"
)

// updateList creates or replaces several topics at once
// (UPDATE_AND_CREATE_TOPIC_LIST): every config is checked before any is
// stored, and the table is saved once for the batch. changed lists the
// topics whose stored config differed, in tcs' order.
func (m *topicManager) updateList(tcs []TopicConfig) (changed []TopicConfig, err error) {
	if m.readOnly {
		return nil, errSlaveMetadata
	}
	seen := make(map[string]bool, len(tcs))
	for i := range tcs {
		if err := checkTopicConfig(&tcs[i]); err != nil {
			return nil, err
		}
		if m.system[tcs[i].TopicName] || tcs[i].TopicName == AutoCreateTopicKey {
			return nil, fmt.Errorf("%w: the topic[%s] is conflict with system topic", ErrBadTopic, tcs[i].TopicName)
		}
		if seen[tcs[i].TopicName] {
			return nil, fmt.Errorf("%w: topic %q twice in one batch", ErrBadTopic, tcs[i].TopicName)
		}
		seen[tcs[i].TopicName] = true
	}
	m.mu.Lock()
	added := 0
	for _, tc := range tcs {
		if _, ok := m.mu.table[tc.TopicName]; !ok {
			added++
		}
	}
	if len(m.mu.table)+added > m.max {
		m.mu.Unlock()
		return nil, ErrTooManyTopics
	}
	names := make([]string, 0, len(tcs))
	var t metalog.Ticket
	var werr error
	for _, tc := range tcs {
		if old, ok := m.mu.table[tc.TopicName]; ok && old == tc {
			continue
		}
		m.mu.table[tc.TopicName] = tc
		names = append(names, tc.TopicName)
		changed = append(changed, tc)
		if werr == nil {
			t, werr = m.logPutLocked(tc)
		}
	}
	if len(names) == 0 {
		m.mu.Unlock()
		return nil, nil
	}
	m.changedLocked(names...)
	m.mu.Unlock()
	return changed, m.persist(t, werr)
}
