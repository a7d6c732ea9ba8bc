package protocol

import (
	"strings"
	"testing"
)

// TestTopicStatsTableWire: the offset table's keys are MessageQueue
// objects on the wire (fastjson's form); a table goes out and back, and
// the form RocketMQ writes (keys in another order, spaces) is read.
func TestTopicStatsTableWire(t *testing.T) {
	in := TopicStatsTable{OffsetTable: map[MessageQueue]TopicOffset{
		{Topic: "t", BrokerName: "b", QueueID: 1}: {MinOffset: 1, MaxOffset: 9, LastUpdateTimestamp: 1700000000000},
		{Topic: "t", BrokerName: "b", QueueID: 0}: {MaxOffset: 3},
	}}
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"offsetTable":{{"topic":"t","brokerName":"b","queueId":0}:{"minOffset":0,"maxOffset":3`) {
		t.Fatalf("wire form: %s", b)
	}
	var out TopicStatsTable
	if err := out.Decode(b); err != nil {
		t.Fatal(err)
	}
	if len(out.OffsetTable) != 2 || out.OffsetTable[MessageQueue{Topic: "t", BrokerName: "b", QueueID: 1}].MaxOffset != 9 {
		t.Fatalf("round trip: %+v", out)
	}
	java := `{"offsetTable":{{"brokerName":"broker-a","queueId":3,"topic":"T"} : {"lastUpdateTimestamp":5,"maxOffset":7,"minOffset":2}}, "x":1}`
	if err := out.Decode([]byte(java)); err != nil {
		t.Fatal(err)
	}
	if got := out.OffsetTable[MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}]; got != (TopicOffset{2, 7, 5}) {
		t.Fatalf("java form: %+v", out)
	}
	for _, bad := range []string{`{"offsetTable":{{"topic":"t"}:}}`, `{"offsetTable":{{"topic":"t"}:{"minOffset":1}`, `[1]`, `{"offsetTable":7}`} {
		if err := out.Decode([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestConsumeStatsWire: ConsumeStats goes out and back in the
// object-keyed form, and RocketMQ's consumeTps member is skipped.
func TestConsumeStatsWire(t *testing.T) {
	in := ConsumeStats{OffsetTable: map[MessageQueue]OffsetWrapper{{Topic: "t", BrokerName: "b", QueueID: 2}: {BrokerOffset: 9, ConsumerOffset: 4, PullOffset: 4, LastTimestamp: 7}}}
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var out ConsumeStats
	if err := out.Decode(b); err != nil || out.OffsetTable[MessageQueue{Topic: "t", BrokerName: "b", QueueID: 2}] != in.OffsetTable[MessageQueue{Topic: "t", BrokerName: "b", QueueID: 2}] {
		t.Fatalf("round trip %s: %v %+v", b, err, out)
	}
	java := `{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"brokerOffset":3,"consumerOffset":1,"lastTimestamp":0,"pullOffset":2}}}`
	if err := out.Decode([]byte(java)); err != nil || out.OffsetTable[MessageQueue{Topic: "t", BrokerName: "b"}].PullOffset != 2 {
		t.Fatalf("java form: %v %+v", err, out)
	}
}
