package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fullHeaders has one value of every typed header with every field set.
func fullHeaders() map[string]CustomHeader {
	send := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 3, SysFlag: 4, BornTimestamp: 1700000000123, Flag: 7, Properties: "KEYS\x01k\x02", ReconsumeTimes: 1,
		UnitMode: true, Batch: true, MaxReconsumeTimes: 16, HasMaxReconsumeTimes: true, BrokerName: "broker-a"}
	return map[string]CustomHeader{
		"SendMessageRequestHeader":              &send,
		"SendMessageRequestHeaderV2":            send.V2(),
		"SendMessageResponseHeader":             &SendMessageResponseHeader{MsgID: "0A000001000027F700000000000003E8", QueueID: 2, QueueOffset: 99, TransactionID: "tx", BatchUniqID: "b", MsgRegion: "DefaultRegion", TraceOn: "true"},
		"ConsumerSendMsgBackRequestHeader":      &ConsumerSendMsgBackRequestHeader{Offset: 1000, Group: "cg", DelayLevel: 3, OriginMsgID: "m", OriginTopic: "T", UnitMode: true, MaxReconsumeTimes: 5, HasMaxReconsumeTimes: true, BrokerName: "b"},
		"EndTransactionRequestHeader":           &EndTransactionRequestHeader{Topic: "T", ProducerGroup: "pg", TranStateTableOffset: 5, CommitLogOffset: 6, CommitOrRollback: TransactionCommit, FromTransactionCheck: true, MsgID: "m", TransactionID: "t", BrokerName: "b"},
		"CheckTransactionStateRequestHeader":    &CheckTransactionStateRequestHeader{Topic: "T", TranStateTableOffset: 1, CommitLogOffset: 2, MsgID: "m", TransactionID: "t", OffsetMsgID: "o", BrokerName: "b"},
		"PullMessageRequestHeader":              &PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 1, QueueOffset: 42, MaxMsgNums: 32, SysFlag: BuildPullSysFlag(true, true, true, false), CommitOffset: 40, SuspendTimeoutMillis: 15000, Subscription: "TagA || TagB", SubVersion: 123, ExpressionType: ExpressionTag, MaxMsgBytes: 1 << 20, HasMaxMsgBytes: true, BrokerName: "b"},
		"PullMessageResponseHeader":             &PullMessageResponseHeader{SuggestWhichBrokerID: 1, NextBeginOffset: 43, MinOffset: 0, MaxOffset: 100, TopicSysFlag: 1, GroupSysFlag: 2},
		"QueryMessageRequestHeader":             &QueryMessageRequestHeader{Topic: "T", Key: "k", MaxNum: 32, BeginTimestamp: 1, EndTimestamp: 2},
		"QueryMessageResponseHeader":            &QueryMessageResponseHeader{IndexLastUpdateTimestamp: 3, IndexLastUpdatePhyoffset: 4},
		"ViewMessageRequestHeader":              &ViewMessageRequestHeader{Topic: "T", Offset: 77},
		"QueryConsumerOffsetRequestHeader":      &QueryConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 2, SetZeroIfNotFound: false, HasSetZeroIfNotFound: true, BrokerName: "b"},
		"OffsetResponseHeader":                  &OffsetResponseHeader{Offset: -1},
		"UpdateConsumerOffsetRequestHeader":     &UpdateConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 2, CommitOffset: 9, BrokerName: "b"},
		"QueueRequestHeader":                    &QueueRequestHeader{Topic: "T", QueueID: 5, BrokerName: "b"},
		"GetMaxOffsetRequestHeader":             &GetMaxOffsetRequestHeader{Topic: "T", QueueID: 5, Committed: true, BrokerName: "b"},
		"SearchOffsetRequestHeader":             &SearchOffsetRequestHeader{Topic: "T", QueueID: 5, Timestamp: 1700000000000, BoundaryType: "UPPER", BrokerName: "b"},
		"GetEarliestMsgStoretimeResponseHeader": &GetEarliestMsgStoretimeResponseHeader{Timestamp: 5},
		"GetRouteInfoRequestHeader":             &GetRouteInfoRequestHeader{Topic: "T", AcceptStandardJSONOnly: true},
		"RegisterBrokerRequestHeader":           &RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "1.2.3.4:10911", ClusterName: "c", HAServerAddr: "1.2.3.4:10912", BrokerID: 1, HeartbeatTimeoutMillis: 30000, EnableActingMaster: true, Compressed: true, BodyCrc32: 12345},
		"RegisterBrokerResponseHeader":          &RegisterBrokerResponseHeader{HAServerAddr: "h:1", MasterAddr: "m:1"},
		"UnregisterBrokerRequestHeader":         &UnregisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "a:1", ClusterName: "c", BrokerID: 2},
		"KVConfigRequestHeader":                 &KVConfigRequestHeader{Namespace: NamespaceOrderTopicConfig, Key: "T"},
		"PutKVConfigRequestHeader":              &PutKVConfigRequestHeader{Namespace: "ns", Key: "k", Value: "v"},
		"GetKVConfigResponseHeader":             &GetKVConfigResponseHeader{Value: "v"},
		"TopicRequestHeader":                    &TopicRequestHeader{Topic: "T", ClusterName: "c"},
		"QueryDataVersionRequestHeader":         &QueryDataVersionRequestHeader{BrokerName: "b", BrokerAddr: "a:1", ClusterName: "c", BrokerID: 0},
		"QueryDataVersionResponseHeader":        &QueryDataVersionResponseHeader{Changed: true},
		"BrokerHeartbeatRequestHeader":          &BrokerHeartbeatRequestHeader{ClusterName: "c", BrokerAddr: "a:1", BrokerName: "b", BrokerID: 1},
		"UnregisterClientRequestHeader":         &UnregisterClientRequestHeader{ClientID: "127.0.0.1@1", ProducerGroup: "pg", ConsumerGroup: "cg"},
		"GetConsumerListByGroupRequestHeader":   &GetConsumerListByGroupRequestHeader{ConsumerGroup: "cg"},
		"NotifyConsumerIdsChangedRequestHeader": &NotifyConsumerIdsChangedRequestHeader{ConsumerGroup: "cg"},
		"CreateTopicRequestHeader":              &CreateTopicRequestHeader{Topic: "T", DefaultTopic: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: PermRead | PermWrite, TopicFilterType: TopicFilterSingleTag, TopicSysFlag: 0, Order: true, Attributes: "+a=b"},
		"GetAllTopicConfigResponseHeader":       &GetAllTopicConfigResponseHeader{TotalTopicNum: 3},
	}
}

func TestHeadersRoundTrip(t *testing.T) {
	for name, h := range fullHeaders() {
		t.Run(name, func(t *testing.T) {
			m := h.Encode()
			back := reflect.New(reflect.TypeOf(h).Elem()).Interface().(CustomHeader)
			if err := back.Decode(m); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, h) {
				t.Fatalf("round trip\n got %+v\nwant %+v\next %v", back, h, m)
			}
		})
	}
}

func TestHeadersRequiredFields(t *testing.T) {
	for name, h := range fullHeaders() {
		back := reflect.New(reflect.TypeOf(h).Elem()).Interface().(CustomHeader)
		err := back.Decode(map[string]string{})
		optionalOnly := map[string]bool{"RegisterBrokerResponseHeader": true, "GetKVConfigResponseHeader": true,
			"GetAllTopicConfigResponseHeader": true}
		if optionalOnly[name] {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadField) {
			t.Errorf("%s: empty map gave %v", name, err)
		}
	}
}

func TestHeaderBadNumbers(t *testing.T) {
	m := (&PullMessageRequestHeader{ConsumerGroup: "g", Topic: "T"}).Encode()
	m["queueId"] = "x"
	m["queueOffset"] = "99999999999999999999"
	var h PullMessageRequestHeader
	err := h.Decode(m)
	if !errors.Is(err, ErrBadField) || !strings.Contains(err.Error(), "queueId") || !strings.Contains(err.Error(), "queueOffset") {
		t.Fatalf("every bad field should be named: %v", err)
	}
}

// TestSendV2FromGoClient decodes the one-letter map rocketmq-client-go's
// SendMessageRequestV2Header.Encode writes for SEND_BATCH_MESSAGE.
func TestSendV2FromGoClient(t *testing.T) {
	m := map[string]string{"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "2", "f": "0", "g": "1700000000000",
		"h": "0", "i": "UNIQ_KEY\x01abc\x02", "j": "0", "k": "false", "l": "0", "m": "true", "n": "broker-a"}
	c := &Command{Code: SendBatchMessage, ExtFields: m}
	h, err := DecodeSendMessageRequest(c)
	if err != nil {
		t.Fatal(err)
	}
	want := &SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 2, BornTimestamp: 1700000000000, Properties: "UNIQ_KEY\x01abc\x02", Batch: true,
		HasMaxReconsumeTimes: true, BrokerName: "broker-a"}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %+v", h)
	}
	// And the long form the Go client sends with SEND_MESSAGE.
	long := map[string]string{"producerGroup": "pg", "topic": "T", "queueId": "1", "sysFlag": "0", "bornTimestamp": "5",
		"flag": "0", "reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0", "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "batch": "false", "properties": "", "bname": "broker-a"}
	h, err = DecodeSendMessageRequest(&Command{Code: SendMessage, ExtFields: long})
	if err != nil || h.QueueID != 1 || h.BrokerName != "broker-a" || h.Batch {
		t.Fatalf("long form: %+v %v", h, err)
	}
	if _, err := DecodeSendMessageRequest(&Command{Code: PullMessage}); !errors.Is(err, ErrBadField) {
		t.Fatalf("not a send: %v", err)
	}
}

func TestSendV2Letters(t *testing.T) {
	m := fullHeaders()["SendMessageRequestHeaderV2"].Encode()
	want := map[string]string{"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "4", "g": "1700000000123",
		"h": "7", "i": "KEYS\x01k\x02", "j": "1", "k": "true", "l": "16", "m": "true", "n": "broker-a"}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("letters\n got %v\nwant %v", m, want)
	}
}

func TestPullSysFlag(t *testing.T) {
	if PullFlagCommitOffset != 1 || PullFlagSuspend != 2 || PullFlagSubscription != 4 || PullFlagClassFilter != 8 || PullFlagLitePullMessage != 16 {
		t.Fatal("PullSysFlag bits")
	}
	h := PullMessageRequestHeader{SysFlag: BuildPullSysFlag(false, true, false, true)}
	if h.HasFlag(PullFlagCommitOffset) || !h.HasFlag(PullFlagSuspend) || !h.HasFlag(PullFlagClassFilter) {
		t.Fatalf("flag %b", h.SysFlag)
	}
}

func TestGetMaxOffsetCommittedDefault(t *testing.T) {
	var h GetMaxOffsetRequestHeader
	if err := h.Decode(map[string]string{"topic": "T", "queueId": "0"}); err != nil || !h.Committed {
		t.Fatalf("committed should default to true: %+v %v", h, err)
	}
}
