package protocol

import (
	"reflect"
	"strings"
	"testing"
)

// A route as a Java name server writes it for clients older than 4.9.4:
// fastjson's bare numeric keys.
const fastjsonRoute = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`

func TestRouteFromFastjson(t *testing.T) {
	var rd TopicRouteData
	if err := UnmarshalBody([]byte(fastjsonRoute), &rd); err != nil {
		t.Fatal(err)
	}
	want := TopicRouteData{
		QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		BrokerDatas: []BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a",
			BrokerAddrs: map[int64]string{0: "127.0.0.1:10911", 1: "127.0.0.1:10921"}}},
		FilterServerTable: map[string][]string{},
	}
	if !reflect.DeepEqual(rd, want) {
		t.Fatalf("got %+v", rd)
	}
}

func TestQuoteBareKeys(t *testing.T) {
	cases := map[string]string{
		`{0:"a"}`:                         `{"0":"a"}`,
		`{ -1 : "a" , 22:"b"}`:            `{ "-1" : "a" , "22":"b"}`,
		`{"k":"{0:\"x\"}","m":{3:[1,2]}}`: `{"k":"{0:\"x\"}","m":{"3":[1,2]}}`,
		`[1,{2:3},"4"]`:                   `[1,{"2":3},"4"]`,
		`{"plain":1}`:                     `{"plain":1}`,
	}
	for in, want := range cases {
		if got := string(quoteBareKeys([]byte(in))); got != want {
			t.Errorf("%s → %s, want %s", in, got, want)
		}
	}
}

// TestRouteForGoClient checks the text the Go client slices by hand: it
// cuts brokerAddrs' first and last characters, splits on ',' then on the
// first ':' and strips quotes. Compact, quoted keys, never null.
func TestRouteForGoClient(t *testing.T) {
	rd := TopicRouteData{QueueDatas: []QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		BrokerDatas: []BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{1: "h:2", 0: "h:1"}}, {Cluster: "c", BrokerName: "e"}}}
	b, err := MarshalBody(rd)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"brokerAddrs":{"0":"h:1","1":"h:2"}`, `"brokerAddrs":{}`, `"filterServerTable":{}`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in %s", want, s)
		}
	}
	var empty TopicRouteData
	b, _ = MarshalBody(empty)
	if string(b) != `{"queueDatas":[],"brokerDatas":[],"filterServerTable":{}}` {
		t.Errorf("empty route %s", b)
	}
}

// TestHeartbeatFromGoClient parses what rocketmq-client-go sends with
// HEART_BEAT (its utils.Set writes sets as sorted arrays, codes as strings).
func TestHeartbeatFromGoClient(t *testing.T) {
	in := `{"clientID":"10.0.0.5@1234#987","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"TagA || TagB","tagsSet":["TagA","TagB"],"codeSet":["2598919","2598920"],"subVersion":1700000000000000000,"expressionType":"TAG"}],"unitMode":false}]}`
	var hb HeartbeatData
	if err := UnmarshalBody([]byte(in), &hb); err != nil {
		t.Fatal(err)
	}
	if hb.ClientID != "10.0.0.5@1234#987" || len(hb.ProducerDataSet) != 1 || hb.ProducerDataSet[0].GroupName != "pg" {
		t.Fatalf("%+v", hb)
	}
	cd := hb.ConsumerDataSet[0]
	sd := cd.SubscriptionDataSet[0]
	if cd.ConsumeType != ConsumePassively || cd.MessageModel != MessageModelClustering || cd.ConsumeFromWhere != ConsumeFromFirstOffset ||
		!reflect.DeepEqual(sd.TagsSet, []string{"TagA", "TagB"}) || !reflect.DeepEqual(sd.CodeSet, CodeSet{2598919, 2598920}) ||
		sd.SubVersion != 1700000000000000000 || sd.ExpressionType != ExpressionTag {
		t.Fatalf("%+v", cd)
	}
	// Java's form: numbers.
	var sd2 SubscriptionData
	if err := UnmarshalBody([]byte(`{"codeSet":[1,-2],"tagsSet":[]}`), &sd2); err != nil || !reflect.DeepEqual(sd2.CodeSet, CodeSet{1, -2}) {
		t.Fatalf("%+v %v", sd2, err)
	}
}

func TestBodiesRoundTrip(t *testing.T) {
	bodies := []any{
		&TopicRouteData{OrderTopicConf: "b:4", QueueDatas: []QueueData{{BrokerName: "b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicSysFlag: 1}},
			BrokerDatas:       []BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{0: "a:1"}, ZoneName: "z", EnableActingMaster: true}},
			FilterServerTable: map[string][]string{"a:1": {"f:1"}}},
		&ClusterInfo{BrokerAddrTable: map[string]BrokerData{"b": {Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{0: "a:1"}}},
			ClusterAddrTable: map[string][]string{"c": {"b"}}},
		&TopicList{TopicList: []string{"A", "B"}, BrokerAddr: "a:1"},
		&RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]TopicConfig{"T": {TopicName: "T", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: TopicFilterSingleTag, Order: true, Attributes: map[string]string{"+x": "y"}}},
			DataVersion:      DataVersion{StateVersion: 1, Timestamp: 2, Counter: 3}}, FilterServerList: []string{}},
		&KVTable{Table: map[string]string{"T": "b:4"}},
		&HeartbeatData{ClientID: "id", ProducerDataSet: []ProducerData{{GroupName: "pg"}}, ConsumerDataSet: []ConsumerData{{GroupName: "cg",
			ConsumeType: ConsumeActively, MessageModel: MessageModelBroadcasting, ConsumeFromWhere: ConsumeFromTimestamp,
			SubscriptionDataSet: []SubscriptionData{{Topic: "T", SubString: SubAll, TagsSet: []string{}, CodeSet: CodeSet{}, SubVersion: 9, ExpressionType: ExpressionTag}}}}},
		&GetConsumerListByGroupResponseBody{ConsumerIDList: []string{"a", "b"}},
		&LockBatchRequestBody{ConsumerGroup: "cg", ClientID: "id", OnlyThisBroker: true, MQSet: []MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 3}}},
		&LockBatchResponseBody{LockOKMQSet: []MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 3}}},
	}
	for _, v := range bodies {
		b, err := MarshalBody(v)
		if err != nil {
			t.Fatal(err)
		}
		back := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := UnmarshalBody(b, back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Errorf("%T round trip\n got %+v\nwant %+v\njson %s", v, back, v, b)
		}
	}
}

func TestRegisterBodyCompressed(t *testing.T) {
	body := &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]TopicConfig{
			"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: TopicFilterSingleTag},
			"B": {TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 4, TopicFilterType: TopicFilterMultiTag},
		},
		DataVersion: DataVersion{Timestamp: 5, Counter: 6}}, FilterServerList: []string{"f:1"}}
	for _, v := range []int16{VersionV4_5_2, VersionV5_0_0} {
		z, err := body.EncodeCompressed(v)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRegisterBrokerBody(z, true, v)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, body) {
			t.Fatalf("version %d:\n got %+v\nwant %+v", v, back, body)
		}
		if _, err := DecodeRegisterBrokerBody(z[:len(z)/2], true, v); err == nil {
			t.Fatal("truncated compressed body accepted")
		}
	}
	empty, err := DecodeRegisterBrokerBody(nil, false, VersionV4_5_2)
	if err != nil || empty.TopicConfigSerializeWrapper.TopicConfigTable == nil {
		t.Fatalf("empty body: %+v %v", empty, err)
	}
	if _, err := DecodeRegisterBrokerBody([]byte("{nope"), false, VersionV4_5_2); err == nil {
		t.Fatal("bad JSON accepted")
	}
}

func TestBodyCRC32(t *testing.T) {
	// java.util.zip.CRC32 of "123456789" is 0xCBF43926; UtilAll.crc32 clears the sign bit.
	if got := BodyCRC32([]byte("123456789")); got != 0x4BF43926 {
		t.Fatalf("crc %#x", got)
	}
}
