package broker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/vfs"
)

// An answer that grows with the tables (GET_ALL_TOPIC_CONFIG here) and
// would not fit a frame is answered SYSTEM_ERROR saying so; a query
// answers the newest records that fit.
func TestAnswersFitAFrame(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.MaxFrameSize, c.MaxMessageSize = 128<<10, 40<<10 })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	limit := b.ans.limit()
	for i := 0; ; i++ {
		if r := c.call(createTopicReq(fmt.Sprintf("topic-%s-%04d", strings.Repeat("x", 100), i), 1)); r.Code != protocol.Success {
			t.Fatal(r)
		}
		if len(b.topicWrapperBody(t)) > limit {
			break
		}
		if i > 10_000 {
			t.Fatal("the topic table never outgrew the answer limit")
		}
	}
	r := c.call(protocol.NewRequest(protocol.GetAllTopicConfig, nil, nil))
	if r.Code != protocol.SystemError || !strings.Contains(r.Remark, "more than a frame allows") || len(r.Body) != 0 {
		t.Fatalf("GET_ALL_TOPIC_CONFIG past the limit: code %d remark %q body %d", r.Code, r.Remark, len(r.Body))
	}

	c.call(createTopicReq("q", 1))
	body := bytes.Repeat([]byte("b"), 30<<10)
	for i := 0; i < 4; i++ {
		if r := c.call(sendReq("q", 0, body, map[string]string{"KEYS": "k"})); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	var recs int
	waitFor(t, func() bool {
		r = c.call(queryReq("q", "k", 64, 0, 1<<62, false))
		if r.Code != protocol.Success {
			return false
		}
		recs = len(decodeRecords(t, r.Body))
		return len(r.Body) <= limit && recs == limit/(30<<10)
	}, "a query answer within the limit")
	if recs < 1 || recs >= 4 {
		t.Fatalf("query answered %d records of 30 KiB within %d bytes", recs, limit)
	}
}

// topicWrapperBody is GET_ALL_TOPIC_CONFIG's body as built now.
func (b *Broker) topicWrapperBody(t *testing.T) []byte {
	t.Helper()
	body, err := protocol.MarshalBody(b.topicWrapper())
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// The topic and group tables stop at their bounds: a new name past them
// is refused from every path; names already there may change.
func TestTableBounds(t *testing.T) {
	fs := vfs.NewMem()
	cfg := testConfig(t, fs)
	tm := newTopicManager(fs, cfg)
	tm.max = 1000 // MaxTopics itself would take a while to fill
	tm.mu.Lock()
	for i := len(tm.mu.table); i < tm.max; i++ {
		name := fmt.Sprint("t", i)
		tm.mu.table[name] = newTopicConfig(name, 1, PermRead|PermWrite)
	}
	tm.mu.Unlock()
	if _, err := tm.update(newTopicConfig("one-more", 1, PermRead|PermWrite)); err != ErrTooManyTopics {
		t.Fatalf("update past MaxTopics: %v", err)
	}
	if _, _, err := tm.createInSend("one-more", AutoCreateTopicKey, 4, 0); err != ErrTooManyTopics {
		t.Fatalf("send-created past MaxTopics: %v", err)
	}
	if _, _, err := tm.createIfMissing("%RETRY%g", 1, PermRead|PermWrite); err != ErrTooManyTopics {
		t.Fatalf("retry topic past MaxTopics: %v", err)
	}
	if ch, err := tm.update(newTopicConfig("t5", 2, PermRead|PermWrite)); err != nil || !ch {
		t.Fatalf("changing a topic in a full table: %v %v", ch, err)
	}

	gm := newGroupManager(fs, cfg)
	gm.mu.Lock()
	for i := 0; i < MaxGroups; i++ {
		name := fmt.Sprint("g", i)
		gm.mu.table[name] = protocol.DefaultSubscriptionGroup(name)
	}
	gm.mu.Unlock()
	if _, err := gm.createIfMissing("one-more"); err != errTooManyGroups {
		t.Fatalf("heartbeat group past MaxGroups: %v", err)
	}
	if err := gm.update(protocol.DefaultSubscriptionGroup("one-more")); err != errTooManyGroups {
		t.Fatalf("admin group past MaxGroups: %v", err)
	}
	g := protocol.DefaultSubscriptionGroup("g7")
	g.RetryMaxTimes = 3
	if err := gm.update(g); err != nil {
		t.Fatalf("changing a group in a full table: %v", err)
	}
}

// LOCK_BATCH_MQ: a batch past MaxLockBatch or with a bad group is refused;
// queues the broker does not have are not locked.
func TestLockBatchBounds(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("lk", 2))
	lock := func(group string, mqs []protocol.MessageQueue) *protocol.Command {
		body, err := protocol.MarshalBody(protocol.LockBatchRequestBody{ConsumerGroup: group, ClientID: "c1", MQSet: mqs})
		if err != nil {
			t.Fatal(err)
		}
		return c.call(protocol.NewRequest(protocol.LockBatchMQ, nil, body))
	}
	many := make([]protocol.MessageQueue, MaxLockBatch+1)
	for i := range many {
		many[i] = protocol.MessageQueue{Topic: "lk", QueueID: int32(i)}
	}
	if r := lock("g", many); r.Code != protocol.SystemError || !strings.Contains(r.Remark, "at most") {
		t.Fatalf("lock batch past the bound: %s", r)
	}
	if r := lock("", many[:1]); r.Code != protocol.SystemError {
		t.Fatalf("lock batch without a group: %s", r)
	}
	r := lock("g", []protocol.MessageQueue{{Topic: "lk", QueueID: 0}, {Topic: "lk", QueueID: 1}, {Topic: "lk", QueueID: 2}, {Topic: "nosuch", QueueID: 0}})
	var out protocol.LockBatchResponseBody
	if err := protocol.UnmarshalBody(r.Body, &out); err != nil || r.Code != protocol.Success {
		t.Fatalf("lock batch: %s %v", r, err)
	}
	if len(out.LockOKMQSet) != 2 {
		t.Fatalf("locked %v, want lk's queues 0 and 1 only", out.LockOKMQSet)
	}
}

// The lock table holds at most MaxGroups groups; expired locks make room.
func TestLockTableBounded(t *testing.T) {
	m := newLockManager(DefaultLockMaxLive)
	t0 := time.Unix(1_700_000_000, 0)
	q := []QueueKey{{"t", 0}}
	for i := 0; i < MaxGroups; i++ {
		if got := m.tryLock(fmt.Sprint("g", i), "c", q, t0); len(got) != 1 {
			t.Fatalf("group %d: locked %v", i, got)
		}
	}
	if got := m.tryLock("one-more", "c", q, t0.Add(time.Second)); len(got) != 0 {
		t.Fatalf("a group past MaxGroups locked %v", got)
	}
	if got := m.tryLock("g1", "c", q, t0.Add(time.Second)); len(got) != 1 {
		t.Fatalf("a group already there renewing: %v", got)
	}
	later := t0.Add(DefaultLockMaxLive + time.Minute)
	if got := m.tryLock("one-more", "c", q, later); len(got) != 1 {
		t.Fatalf("after the locks expired: %v", got)
	}
	if n := len(m.mu.groups); n != 1 {
		t.Fatalf("%d groups after the sweep, want the new one", n)
	}
}
