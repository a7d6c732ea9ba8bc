package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/samsamq/samsa/protocol"
)

// A slave copies a master's topic table larger than a frame (which the
// classic GET_ALL_TOPIC_CONFIG refuses, saying so), in pages, and then
// follows it by its changes alone: a topic created or deleted on the
// master reaches the slave without another copy.
func TestSlaveCopiesATableLargerThanAFrame(t *testing.T) {
	ns := startNamesrv(t)
	master := startBroker(t, "", withNamesrv(ns.Addr(), nil))
	defer master.Close()
	const n = 120_000                 // ~18 MiB of configs: past one 16 MiB frame
	master.topics.compactAt = 1 << 30 // one topics.json at close, not one per batch
	for i := 0; i < n; i += 10_000 {
		batch := make([]TopicConfig, 0, 10_000)
		for j := i; j < i+10_000; j++ {
			batch = append(batch, newTopicConfig(fmt.Sprintf("big-%06d", j), 1, PermRead|PermWrite))
		}
		if _, err := master.topics.updateList(batch); err != nil {
			t.Fatal(err)
		}
	}
	mc := dialRaw(t, master.Addr())
	if r := mc.call(protocol.NewRequest(protocol.GetAllTopicConfig, nil, nil)); r.Code != protocol.SystemError ||
		!strings.Contains(r.Remark, "more than a frame allows") || len(r.Body) != 0 {
		t.Fatalf("classic GET_ALL_TOPIC_CONFIG of %d topics: code %d remark %q body %d", n, r.Code, r.Remark, len(r.Body))
	}

	slave := startBroker(t, "", asSlave(ns.Addr(), 1, nil))
	defer slave.Close()
	meta := slave.repl.meta
	if err := meta.round(); err != nil {
		t.Fatal(err)
	}
	if got, want := slave.topics.count(), master.topics.count(); got != want {
		t.Fatalf("slave holds %d topics, master %d", got, want)
	}
	for _, name := range []string{"big-000000", "big-054321", "big-119999", SelfTestTopic} {
		if _, ok := slave.topics.get(name); !ok {
			t.Fatalf("slave lacks %s", name)
		}
	}
	if c := meta.topicCopies.Load(); c != 1 {
		t.Fatalf("%d copies of the table, want 1", c)
	}
	if slave.topics.version() != master.topics.version() {
		t.Fatalf("slave's version %+v, master's %+v", slave.topics.version(), master.topics.version())
	}

	// Nothing changed: a round copies nothing.
	if err := meta.round(); err != nil {
		t.Fatal(err)
	}
	// A create and a delete reach the slave by the changes.
	if r := mc.call(createTopicReq("after-copy", 3)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	del := protocol.NewRequest(protocol.DeleteTopicInBroker, map[string]string{"topic": "big-000007"}, nil)
	if r := mc.call(del); r.Code != protocol.Success {
		t.Fatal(r)
	}
	waitFor(t, func() bool {
		if err := meta.round(); err != nil {
			t.Log(err)
			return false
		}
		_, gone := slave.topics.get("big-000007")
		tc, ok := slave.topics.get("after-copy")
		return ok && tc.WriteQueueNums == 3 && !gone
	}, "the master's create and delete on the slave")
	if c := meta.topicCopies.Load(); c != 1 {
		t.Fatalf("%d copies of the table after the changes, want 1", c)
	}
	if meta.topicDeltas.Load() < 2 {
		t.Fatalf("%d rounds by the changes", meta.topicDeltas.Load())
	}
	if got, want := slave.topics.count(), master.topics.count(); got != want {
		t.Fatalf("slave holds %d topics, master %d", got, want)
	}
}

// The paged GET_ALL_TOPIC_CONFIG clamps the page to MinTopicPageBytes,
// walks the table in name order without a gap or a repeat, and refuses a
// malformed request with a clear error.
func TestTopicPagesBounded(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	batch := make([]TopicConfig, 0, 2000)
	for i := 0; i < 2000; i++ {
		batch = append(batch, newTopicConfig(fmt.Sprintf("page-%s-%04d", strings.Repeat("p", 60), i), 1, PermRead|PermWrite))
	}
	if _, err := b.topics.updateList(batch); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	seen := map[string]bool{}
	h := protocol.TopicPageRequestHeader{MaxBytes: 1, HasAfter: true}
	pages, last := 0, ""
	for {
		r := c.call(protocol.NewRequest(protocol.GetAllTopicConfig, h.Encode(), nil))
		var hdr protocol.TopicPageResponseHeader
		if r.Code != protocol.Success || hdr.Decode(r.ExtFields) != nil {
			t.Fatalf("page after %q: %d %q", h.After, r.Code, r.Remark)
		}
		if len(r.Body) > protocol.MinTopicPageBytes {
			t.Fatalf("a page of %d bytes, asked for 1 (clamped to %d)", len(r.Body), protocol.MinTopicPageBytes)
		}
		var p protocol.TopicConfigPage
		if err := protocol.UnmarshalBody(r.Body, &p); err != nil {
			t.Fatal(err)
		}
		for name := range p.TopicConfigTable {
			if seen[name] || name <= last {
				t.Fatalf("%q repeated or out of order (after %q)", name, last)
			}
			seen[name] = true
		}
		last = hdr.Next
		pages++
		if !hdr.More {
			break
		}
		h.After = hdr.Next
	}
	if len(seen) != b.topics.count() || pages < 2 {
		t.Fatalf("%d topics in %d pages, the table holds %d", len(seen), pages, b.topics.count())
	}
	for _, ext := range []map[string]string{
		{protocol.TopicPageBytesField: "lots"},
		{protocol.TopicPageBytesField: "100", protocol.TopicPageAfterField: strings.Repeat("a", 200)},
		{protocol.TopicPageBytesField: "100", protocol.TopicPageDVField: "{not json"},
	} {
		r := c.call(protocol.NewRequest(protocol.GetAllTopicConfig, ext, nil))
		if r.Code == protocol.Success || r.Remark == "" {
			t.Fatalf("%v: code %d remark %q", ext, r.Code, r.Remark)
		}
	}
}
