package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// TestAdminReadRequests: GET_TOPIC_STATS_INFO gives each queue's offsets
// and its last message's store time (TOPIC_NOT_EXIST for an unknown
// topic); GET_CONSUMER_CONNECTION_LIST answers CONSUMER_NOT_ONLINE for a
// group without members; GET_BROKER_CONFIG never shows the secret key;
// GET_BROKER_RUNTIME_INFO counts the puts.
func TestAdminReadRequests(t *testing.T) {
	b := startBroker(t, "", func(c *Config) {
		_ = c.Set("accessKey", "ak-admin")
		_ = c.Set("secretKey", "sk-do-not-show")
	})
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("stats-t", 2)); r.Code != protocol.Success {
		t.Fatalf("create: %d %s", r.Code, r.Remark)
	}
	before := time.Now().Add(-time.Second).UnixMilli()
	for i := 0; i < 3; i++ {
		if r := c.call(sendReq("stats-t", 1, []byte("x"), nil)); r.Code != protocol.Success {
			t.Fatalf("send: %d %s", r.Code, r.Remark)
		}
	}
	after := time.Now().Add(time.Second).UnixMilli()
	var st protocol.TopicStatsTable
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := c.call(protocol.NewRequest(protocol.GetTopicStatsInfo, map[string]string{"topic": "stats-t"}, nil))
		if r.Code != protocol.Success {
			t.Fatalf("topic stats: %d %s", r.Code, r.Remark)
		}
		if err := st.Decode(r.Body); err != nil {
			t.Fatalf("topic stats body %s: %v", r.Body, err)
		}
		if st.OffsetTable[protocol.MessageQueue{Topic: "stats-t", BrokerName: b.Config().BrokerName, QueueID: 1}].MaxOffset == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue 1 never reached 3 messages: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	q0 := st.OffsetTable[protocol.MessageQueue{Topic: "stats-t", BrokerName: b.Config().BrokerName, QueueID: 0}]
	q1 := st.OffsetTable[protocol.MessageQueue{Topic: "stats-t", BrokerName: b.Config().BrokerName, QueueID: 1}]
	if len(st.OffsetTable) != 2 || q0 != (protocol.TopicOffset{}) || q1.LastUpdateTimestamp < before || q1.LastUpdateTimestamp > after {
		t.Fatalf("topic stats: %+v", st)
	}
	if r := c.call(protocol.NewRequest(protocol.GetTopicStatsInfo, map[string]string{"topic": "nope"}, nil)); r.Code != protocol.TopicNotExist {
		t.Fatalf("stats of an unknown topic: %d %s", r.Code, r.Remark)
	}
	if r := c.call(protocol.NewRequest(protocol.GetConsumerConnectionList, map[string]string{"consumerGroup": "nobody"}, nil)); r.Code != protocol.ConsumerNotOnline {
		t.Fatalf("connections of an empty group: %d %s", r.Code, r.Remark)
	}
	r := c.call(protocol.NewRequest(protocol.GetBrokerConfig, nil, nil))
	if r.Code != protocol.Success || strings.Contains(string(r.Body), "sk-do-not-show") || !strings.Contains(string(r.Body), "secretKey=(set)\n") ||
		!strings.Contains(string(r.Body), "brokerName="+b.Config().BrokerName+"\n") {
		t.Fatalf("broker config: %d %s", r.Code, r.Body)
	}
	// INVOKE_BROKER_TO_RESET_OFFSET: an unknown group is refused; a group
	// with offsets and no member online gets CONSUMER_NOT_ONLINE (the
	// caller then moves the offsets itself, as mqadmin does).
	reset := func(group string) *protocol.Command {
		return c.call(protocol.NewRequest(protocol.InvokeBrokerToResetOffset,
			map[string]string{"topic": "stats-t", "group": group, "timestamp": "-1", "isForce": "true"}, nil))
	}
	if r := reset("no-offsets"); r.Code != protocol.SystemError {
		t.Fatalf("reset of a group with no offsets: %d %s", r.Code, r.Remark)
	}
	for q := int32(0); q < 2; q++ {
		h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "rg", Topic: "stats-t", QueueID: q, CommitOffset: 0}
		if r := c.call(protocol.NewRequest(protocol.UpdateConsumerOffset, h.Encode(), nil)); r.Code != protocol.Success {
			t.Fatalf("commit: %d %s", r.Code, r.Remark)
		}
	}
	if r := reset("rg"); r.Code != protocol.ConsumerNotOnline {
		t.Fatalf("reset of an offline group: %d %s", r.Code, r.Remark)
	}
	// GET_CONSUME_STATS: the group's progress per queue, on the topics
	// it has offsets on.
	h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "rg", Topic: "stats-t", QueueID: 1, CommitOffset: 2}
	if r := c.call(protocol.NewRequest(protocol.UpdateConsumerOffset, h.Encode(), nil)); r.Code != protocol.Success {
		t.Fatalf("commit: %d %s", r.Code, r.Remark)
	}
	r = c.call(protocol.NewRequest(protocol.GetConsumeStats, map[string]string{"consumerGroup": "rg"}, nil))
	var cs protocol.ConsumeStats
	if r.Code != protocol.Success || cs.Decode(r.Body) != nil || len(cs.OffsetTable) != 2 {
		t.Fatalf("consume stats: %d %s", r.Code, r.Body)
	}
	w := cs.OffsetTable[protocol.MessageQueue{Topic: "stats-t", BrokerName: b.Config().BrokerName, QueueID: 1}]
	if w.BrokerOffset != 3 || w.ConsumerOffset != 2 || w.LastTimestamp < before || w.LastTimestamp > after {
		t.Fatalf("consume stats of queue 1: %+v", w)
	}
	r = c.call(protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	var kv protocol.KVTable
	if r.Code != protocol.Success || protocol.UnmarshalBody(r.Body, &kv) != nil || kv.Table["msgPutTotal"] != "3" || kv.Table["bootTimestamp"] == "" ||
		len(strings.Fields(kv.Table["putTps"])) != 3 || len(strings.Fields(kv.Table["getTransferedTps"])) != 3 {
		t.Fatalf("runtime info: %d %s", r.Code, r.Body)
	}
}

// TestSecretPropertyNames: the names GET_BROKER_CONFIG masks.
func TestSecretPropertyNames(t *testing.T) {
	for name, secret := range map[string]bool{"secretKey": true, "tlsKeyPassword": true, "authToken": true, "brokerName": false,
		"accessKey": false, "tlsServerKeyPath": false} {
		if secretProperty.MatchString(name) != secret {
			t.Errorf("%s: secret %v", name, !secret)
		}
	}
}
