package protocol

import (
	"reflect"
	"testing"
)

// GET_ALL_CONSUMER_OFFSET as a Java master writes it (fastjson: bare
// queue ids).
func TestConsumerOffsetWrapperFromFastjson(t *testing.T) {
	in := `{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"offsetTable":{"T@g":{0:12,1:3},"%RETRY%g@g":{0:0}}}`
	var w ConsumerOffsetSerializeWrapper
	if err := UnmarshalBody([]byte(in), &w); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]int64{"T@g": {0: 12, 1: 3}, "%RETRY%g@g": {0: 0}}
	if !reflect.DeepEqual(w.OffsetTable, want) || w.DataVersion.Counter != 3 {
		t.Fatalf("got %+v", w)
	}
	out, err := MarshalBody(w)
	if err != nil {
		t.Fatal(err)
	}
	var back ConsumerOffsetSerializeWrapper
	if err := UnmarshalBody(out, &back); err != nil || !reflect.DeepEqual(back, w) {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if b, _ := MarshalBody(ConsumerOffsetSerializeWrapper{}); string(b) != `{"offsetTable":{},"dataVersion":{"stateVersion":0,"timestamp":0,"counter":0}}` {
		t.Fatalf("empty: %s", b)
	}
}

// A partial SubscriptionGroupConfig (what admin tools send) takes
// RocketMQ's defaults for what it lacks.
func TestSubscriptionGroupDefaults(t *testing.T) {
	in := `{"subscriptionGroupTable":{"g":{"groupName":"g","whichBrokerWhenConsumeSlowly":2,"consumeEnable":false,"subscriptionDataSet":[],"attributes":{}}},"forbiddenTable":{},"dataVersion":{"counter":1,"timestamp":5}}`
	var w SubscriptionGroupWrapper
	if err := UnmarshalBody([]byte(in), &w); err != nil {
		t.Fatal(err)
	}
	want := DefaultSubscriptionGroup("g")
	want.WhichBrokerWhenConsumeSlowly = 2
	want.ConsumeEnable = false
	if got := w.SubscriptionGroupTable["g"]; got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	d := DefaultSubscriptionGroup("x")
	if d.BrokerID != MasterID || d.WhichBrokerWhenConsumeSlowly != 1 || d.RetryMaxTimes != 16 || !d.ConsumeEnable {
		t.Fatalf("defaults %+v", d)
	}
}
