package broker

import (
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/testutil"
	"github.com/samsamq/samsa/protocol"
)

func queryOffsetReq(group, topic string, queue int32, zero *bool) *protocol.Command {
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue}
	if zero != nil {
		h.HasSetZeroIfNotFound, h.SetZeroIfNotFound = true, *zero
	}
	return protocol.NewRequest(protocol.QueryConsumerOffset, h.Encode(), nil)
}

// TestQueryConsumerOffsetStart: a group without a committed offset is
// told 0 only for a queue that holds nothing older than the group's run
// (offsets/start.go), else QUERY_NOT_FOUND, so CONSUME_FROM_LAST_OFFSET
// starts at the tail of a topic that has messages.
func TestQueryConsumerOffsetStart(t *testing.T) {
	clk := testutil.NewClock(time.UnixMilli(1_000_000))
	b := startBroker(t, "", func(c *Config) { c.Clock = clk.Now })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("sp", 4))
	if r := c.call(sendReq("sp", 0, []byte("old"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("sp", 0) == 1 }, "dispatch")
	clk.Set(time.UnixMilli(1_001_000))
	if r := c.call(heartbeatReq(t, "c1", "late", "sp")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	clk.Set(time.UnixMilli(1_002_000))
	if r := c.call(sendReq("sp", 1, []byte("new"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("sp", 1) == 1 }, "dispatch")
	no := false
	for _, tc := range []struct {
		name  string
		group string
		queue int32
		zero  *bool
		want  int32
	}{
		{"queue older than the group", "late", 0, nil, protocol.QueryNotFound},
		{"queue younger than the group", "late", 1, nil, protocol.Success},
		{"empty queue", "late", 2, nil, protocol.Success},
		{"setZeroIfNotFound=false", "late", 1, &no, protocol.QueryNotFound},
		{"group without members", "ghost", 1, nil, protocol.QueryNotFound},
		{"group without members, empty queue", "ghost", 3, nil, protocol.Success},
	} {
		r := c.call(queryOffsetReq(tc.group, "sp", tc.queue, tc.zero))
		if r.Code != tc.want || r.Code == protocol.Success && ext64(t, r, "offset") != 0 {
			t.Errorf("%s: %s", tc.name, r)
		}
	}
	// A committed offset wins over everything.
	b.offsets.Commit("late", "sp", 0, 1)
	if r := c.call(queryOffsetReq("late", "sp", 0, &no)); r.Code != protocol.Success || ext64(t, r, "offset") != 1 {
		t.Errorf("committed: %s", r)
	}
}

// TestSearchOffsetByTimestamp checks both boundaries against RocketMQ 5's
// ConsumeQueue.getOffsetInQueueByTime, equal timestamps included.
func TestSearchOffsetByTimestamp(t *testing.T) {
	clk := testutil.NewClock(time.Time{})
	b := startBroker(t, "", func(c *Config) { c.Clock = clk.Now })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("ts", 2))
	for _, ms := range []int64{2000, 2000, 2005, 2010} {
		clk.Set(time.UnixMilli(ms))
		if r := c.call(sendReq("ts", 0, []byte("m"), nil)); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("ts", 0) == 4 }, "dispatch")
	for _, tc := range []struct {
		queue  int32
		ts     int64
		bound  string
		expect int64
	}{
		{0, 1999, "", 0}, {0, 2000, "LOWER", 0}, {0, 2001, "", 2}, {0, 2005, "", 2}, {0, 2006, "", 3}, {0, 2011, "", 4},
		{0, 1999, "UPPER", 0}, {0, 2000, "UPPER", 1}, {0, 2001, "UPPER", 1}, {0, 2005, "UPPER", 2},
		{0, 2010, "UPPER", 3}, {0, 9999, "UPPER", 3},
		{1, 2000, "", 0}, {1, 2000, "UPPER", 0},
	} {
		h := protocol.SearchOffsetRequestHeader{Topic: "ts", QueueID: tc.queue, Timestamp: tc.ts, BoundaryType: tc.bound}
		r := c.call(protocol.NewRequest(protocol.SearchOffsetByTimestamp, h.Encode(), nil))
		if r.Code != protocol.Success || ext64(t, r, "offset") != tc.expect {
			t.Errorf("queue %d at %d %s: %s, want %d", tc.queue, tc.ts, tc.bound, r, tc.expect)
		}
	}
}
