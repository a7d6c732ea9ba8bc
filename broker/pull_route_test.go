package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// tinyMemory makes "far behind" testable: 40% of 1000 bytes, so a pull
// more than 400 bytes behind the CommitLog's end reads "from disk".
func tinyMemory(slaveRead bool) func(*Config) {
	return func(c *Config) {
		c.SlaveReadEnable = slaveRead
		c.TotalPhysicalMemorySize = 1000
		c.AccessMessageInMemoryMaxRatio = 40
	}
}

// tenMessages are ten records of about 150 bytes each.
func tenMessages() []string {
	out := make([]string, 10)
	for i := range out {
		out[i] = fmt.Sprintf("%02d-%s", i, strings.Repeat("x", 60))
	}
	return out
}

// suggested pulls one message at offset and returns the answer's code and
// suggestWhichBrokerId.
func suggested(t *testing.T, c *rawClient, group, topic string, offset int64) (int32, int64) {
	t.Helper()
	r := c.call(pullReq(group, topic, 0, offset, 1, 0, "*"))
	return r.Code, ext64(t, r, "suggestWhichBrokerId")
}

func TestPullSuggestionOnMaster(t *testing.T) {
	for _, tc := range []struct {
		name      string
		slaveRead bool
		far, near int64 // suggestions
	}{
		{"slaveReadEnable", true, 1, 0},
		{"default", false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t, "", tinyMemory(tc.slaveRead))
			defer b.Close()
			c := dialRaw(t, b.Addr())
			if r := c.call(createTopicReq("sg-t", 1)); r.Code != protocol.Success {
				t.Fatal(r)
			}
			seedMessages(t, b, "sg-t", 0, tenMessages()...)
			if code, id := suggested(t, c, "g", "sg-t", 0); code != protocol.Success || id != tc.far {
				t.Fatalf("far behind: code %d, suggested %d, want %d", code, id, tc.far)
			}
			if code, id := suggested(t, c, "g", "sg-t", 9); code != protocol.Success || id != tc.near {
				t.Fatalf("at the tail: code %d, suggested %d, want %d", code, id, tc.near)
			}
			// The group's whichBrokerWhenConsumeSlowly and brokerId steer it.
			if r := c.call(groupReq(t, protocol.SubscriptionGroupConfig{GroupName: "g2", BrokerID: 2, WhichBrokerWhenConsumeSlowly: 3})); r.Code != protocol.Success {
				t.Fatal(r)
			}
			far, near := int64(3), int64(2)
			if !tc.slaveRead {
				far, near = 0, 0
			}
			if _, id := suggested(t, c, "g2", "sg-t", 0); id != far {
				t.Fatalf("group g2 far behind: suggested %d, want %d", id, far)
			}
			if _, id := suggested(t, c, "g2", "sg-t", 9); id != near {
				t.Fatalf("group g2 at the tail: suggested %d, want %d", id, near)
			}
		})
	}
}

func TestPullSuggestionOnSlave(t *testing.T) {
	for _, tc := range []struct {
		name      string
		slaveRead bool
		far, near int64
	}{
		{"slaveReadEnable", true, 1, 0},
		{"default", false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t, "", asSlave("", 1, tinyMemory(tc.slaveRead)))
			defer b.Close()
			seedTopic(t, b, "sg-t", 1)
			seedMessages(t, b, "sg-t", 0, tenMessages()...)
			c := dialRaw(t, b.Addr())
			if code, id := suggested(t, c, "g", "sg-t", 0); code != protocol.Success || id != tc.far {
				t.Fatalf("far behind: code %d, suggested %d, want %d", code, id, tc.far)
			}
			if code, id := suggested(t, c, "g", "sg-t", 9); code != protocol.Success || id != tc.near {
				t.Fatalf("at the tail: code %d, suggested %d, want %d", code, id, tc.near)
			}
		})
	}
}

// TestSlavePullNeverMovesOffsets: a slave ignores a pull's commit flag,
// and a pull past what it holds (it lags the master) waits at the offset
// asked for instead of being moved back.
func TestSlavePullNeverMovesOffsets(t *testing.T) {
	b := startBroker(t, "", asSlave("", 1, nil))
	defer b.Close()
	seedTopic(t, b, "sl-t", 1)
	seedMessages(t, b, "sl-t", 0, "a", "b", "c")
	c := dialRaw(t, b.Addr())

	h := protocol.PullMessageRequestHeader{ConsumerGroup: "g", Topic: "sl-t", QueueID: 0, QueueOffset: 1, MaxMsgNums: 8,
		SysFlag: protocol.BuildPullSysFlag(true, false, true, false), CommitOffset: 1, Subscription: "*", ExpressionType: "TAG"}
	if r := c.call(protocol.NewRequest(protocol.PullMessage, h.Encode(), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if off := offsetOf(t, b, "g", "sl-t", 0); off != -1 {
		t.Fatalf("a pull committed %d on the slave", off)
	}

	// Offset 10 of 3: a master answers PULL_OFFSET_MOVED to 3.
	r := c.call(pullReq("g", "sl-t", 0, 10, 8, 0, "*"))
	if r.Code != protocol.PullNotFound || ext64(t, r, "nextBeginOffset") != 10 || ext64(t, r, "suggestWhichBrokerId") != 0 {
		t.Fatalf("pull past the slave's end: %s", r)
	}
	// A suspended one is held until the slave reaches the offset.
	held := c.start(pullReq("g", "sl-t", 0, 4, 8, 20*time.Second, "*"))
	seedMessages(t, b, "sl-t", 0, "d")
	select {
	case r := <-held:
		t.Fatalf("answered before the slave held offset 4: %s", r)
	case <-time.After(50 * time.Millisecond):
	}
	seedMessages(t, b, "sl-t", 0, "e")
	select {
	case r := <-held:
		if r.Code != protocol.Success || len(decodeRecords(t, r.Body)) != 1 {
			t.Fatalf("held pull: %s", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("held pull not woken")
	}
}
