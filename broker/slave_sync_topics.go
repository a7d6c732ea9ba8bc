package broker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// A slave copies its master's topic table with the paged
// GET_ALL_TOPIC_CONFIG (protocol/body_topic_page.go), which holds a table
// of any size, and then follows it by its changes: each round asks for
// the changes since the master's cursor the table is as of, and gets
// nothing when nothing changed, a few topics when a few did. Only a new
// master, a master restarted, or a slave that fell behind the master's
// recentCap changes copies the table again. A master that does not know
// the extension (an official RocketMQ broker, an older Samsa) answers
// the whole table as before, and the slave adopts it as before.

// pageCallTimeout bounds one page's request: a page is up to a frame
// (16 MiB) that the master builds from a sorted copy of its names.
const pageCallTimeout = 15 * time.Second

// syncTopics brings the slave's topic table to the master's.
func (s *slaveSync) syncTopics(master string) error {
	since := ""
	if s.topicMaster == master {
		since = s.topicCursor
	}
	v := s.topics.version()
	dv, err := json.Marshal(protocol.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter})
	if err != nil {
		return err
	}
	resp, hdr, err := s.topicCall(master, protocol.TopicPageRequestHeader{Since: since, DataVersion: string(dv)})
	if err != nil {
		return err
	}
	if hdr == nil {
		return s.adoptWhole(master, resp)
	}
	if hdr.Kind == protocol.TopicPageKindDelta {
		return s.applyTopicDelta(master, resp, hdr)
	}
	if err := s.copyTopics(master, resp, hdr); err != nil {
		return err
	}
	// What changed while the pages came: the delta since the first.
	resp, hdr, err = s.topicCall(master, protocol.TopicPageRequestHeader{Since: s.topicCursor})
	if err != nil {
		return err
	}
	if hdr == nil || hdr.Kind != protocol.TopicPageKindDelta {
		s.topicCursor = "" // too much changed: the next round copies again
		return nil
	}
	return s.applyTopicDelta(master, resp, hdr)
}

// topicCall sends one paged GET_ALL_TOPIC_CONFIG; hdr is nil when the
// master answered without the extension (the whole table in resp).
func (s *slaveSync) topicCall(master string, h protocol.TopicPageRequestHeader) (*protocol.Command, *protocol.TopicPageResponseHeader, error) {
	h.MaxBytes = int32(s.pageBytes)
	req := protocol.NewRequest(protocol.GetAllTopicConfig, h.Encode(), nil)
	resp, err := s.rpc.call(master, req, pageCallTimeout)
	if err != nil {
		return nil, nil, fmt.Errorf("broker: %s to master %s: %w", protocol.RequestName(req.Code), master, err)
	}
	if resp.Code != protocol.Success {
		return nil, nil, fmt.Errorf("broker: %s to master %s: code %d: %s", protocol.RequestName(req.Code), master, resp.Code, resp.Remark)
	}
	if _, ok := resp.ExtFields["samsaKind"]; !ok {
		return resp, nil, nil
	}
	var hdr protocol.TopicPageResponseHeader
	if err := hdr.Decode(resp.ExtFields); err != nil {
		return nil, nil, fmt.Errorf("broker: %s from master %s: %w", protocol.RequestName(req.Code), master, err)
	}
	return resp, &hdr, nil
}

// copyTopics reads the table page by page from the first (resp) and
// adopts it; the table is then as of the first page's cursor.
func (s *slaveSync) copyTopics(master string, resp *protocol.Command, hdr *protocol.TopicPageResponseHeader) error {
	first := hdr.Seq
	table := make(map[string]TopicConfig, min(max(int(hdr.TotalTopicNum), 0), MaxTopics))
	var v protocol.DataVersion
	pages := 0
	for {
		got := 0
		dv, ok := protocol.ParseTopicTable(resp.Body, func(name string, tc protocol.TopicConfig) {
			table[name] = topicFromWire(name, tc)
			got++
		})
		if !ok { // not of the plain shape: encoding/json reads it
			var p protocol.TopicConfigPage
			if err := protocol.UnmarshalBody(resp.Body, &p); err != nil {
				return fmt.Errorf("broker: a topic page from master %s: %w", master, err)
			}
			for name, tc := range p.TopicConfigTable {
				table[name] = topicFromWire(name, tc)
			}
			got, dv = len(p.TopicConfigTable), p.DataVersion
		}
		v = dv
		pages++
		if !hdr.More {
			break
		}
		if len(table) > MaxTopics || got == 0 {
			return fmt.Errorf("broker: master %s's topic pages do not end (%d topics in %d pages)", master, len(table), pages)
		}
		after := hdr.Next
		var err error
		if resp, hdr, err = s.topicCall(master, protocol.TopicPageRequestHeader{After: after, HasAfter: true}); err != nil {
			return err
		}
		if hdr == nil || hdr.Kind != protocol.TopicPageKindPage || (hdr.More && hdr.Next <= after) {
			return fmt.Errorf("broker: master %s answered a topic page after %q out of order", master, after)
		}
	}
	removed, changed, err := s.topics.adopt(table, DataVersion{Timestamp: v.Timestamp, Counter: v.Counter})
	s.topicsAdopted(master, removed, changed, len(table), pages)
	if err != nil {
		return err
	}
	s.topicCursor, s.topicMaster = first, master
	return nil
}

// adoptWhole adopts a master's classic answer: the whole table.
func (s *slaveSync) adoptWhole(master string, resp *protocol.Command) error {
	var w protocol.TopicConfigSerializeWrapper
	if err := protocol.UnmarshalBody(resp.Body, &w); err != nil {
		return fmt.Errorf("broker: %s from master %s: %w", protocol.RequestName(protocol.GetAllTopicConfig), master, err)
	}
	table := make(map[string]TopicConfig, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		table[name] = topicFromWire(name, tc)
	}
	removed, changed, err := s.topics.adopt(table, DataVersion{Timestamp: w.DataVersion.Timestamp, Counter: w.DataVersion.Counter})
	s.topicsAdopted(master, removed, changed, len(table), 1)
	s.topicCursor, s.topicMaster = "", ""
	return err
}

// topicsAdopted follows an adopted table: the topics gone lose their
// offsets; a changed table is registered.
func (s *slaveSync) topicsAdopted(master string, removed []string, changed bool, topics, pages int) {
	s.topicCopies.Add(1)
	for _, t := range removed {
		s.offsets.RemoveTopic(t)
	}
	if changed {
		s.log.Info("broker: topic table copied from the master", "master", master, "topics", topics, "pages", pages, "removed", len(removed))
		s.topicsChanged()
	}
}

// applyTopicDelta applies a delta answer and moves the cursor.
func (s *slaveSync) applyTopicDelta(master string, resp *protocol.Command, hdr *protocol.TopicPageResponseHeader) error {
	var p protocol.TopicConfigPage
	if err := protocol.UnmarshalBody(resp.Body, &p); err != nil {
		return fmt.Errorf("broker: topic changes from master %s: %w", master, err)
	}
	puts := make(map[string]TopicConfig, len(p.TopicConfigTable))
	for name, tc := range p.TopicConfigTable {
		puts[name] = topicFromWire(name, tc)
	}
	removed, changed, err := s.topics.applyDelta(puts, p.DeletedTopics, DataVersion{Timestamp: p.DataVersion.Timestamp, Counter: p.DataVersion.Counter})
	for _, t := range removed {
		s.offsets.RemoveTopic(t)
	}
	if changed && len(puts)+len(removed) > 0 {
		s.log.Debug("broker: topic changes copied from the master", "master", master, "changed", len(puts), "removed", len(removed))
		s.topicsChanged()
	}
	if err != nil {
		return err
	}
	s.topicCursor, s.topicMaster = hdr.Seq, master
	s.topicDeltas.Add(1)
	return nil
}
