package protocol

import (
	"encoding/json"
	"testing"
)

// AppendTopicConfig writes json.Marshal's bytes; ParseTopicConfig reads
// them back, and refuses (to encoding/json) what it does not know.
func TestTopicConfigJSON(t *testing.T) {
	for _, tc := range []TopicConfig{
		{TopicName: "t-1", ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", TopicSysFlag: -3, Order: true},
		{},
		{TopicName: "a<b\"c", TopicFilterType: "x"},
		{TopicName: "attr", Attributes: map[string]string{"+k": "v"}},
	} {
		want, err := json.Marshal(tc)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendTopicConfig([]byte("x"), tc)
		if string(got[1:]) != string(want) {
			t.Fatalf("AppendTopicConfig\n got %s\nwant %s", got[1:], want)
		}
		back, n, ok := ParseTopicConfig(append(got[1:], " ,"...))
		plain := len(tc.Attributes) == 0 && plainString(tc.TopicName)
		if ok != plain || ok && (n != len(want) || back.TopicName != tc.TopicName || back.ReadQueueNums != tc.ReadQueueNums ||
			back.WriteQueueNums != tc.WriteQueueNums || back.Perm != tc.Perm || back.TopicFilterType != tc.TopicFilterType ||
			back.TopicSysFlag != tc.TopicSysFlag || back.Order != tc.Order) {
			t.Fatalf("ParseTopicConfig(%s) = %+v %d %v", want, back, n, ok)
		}
	}
	for _, bad := range []string{``, `{`, `{"perm":}`, `{"perm":99999999999}`, `{"perm":1,}`, `{"x":1}`, `{"order":tru}`,
		`{"topicName":"a\"b"}`, `{topicName:"a"}`, `{"perm":-}`} {
		if _, _, ok := ParseTopicConfig([]byte(bad)); ok {
			t.Errorf("ParseTopicConfig(%s) took it", bad)
		}
	}
	if tc, n, ok := ParseTopicConfig([]byte(" { \"perm\" : 6 , \"order\":false }rest")); !ok || tc.Perm != 6 || n != 31 {
		t.Fatalf("spaced object: %+v %d %v", tc, n, ok)
	}
}

// ParseTopicTable reads what encoding/json writes of a wrapper, indented
// or not, and refuses other shapes.
func TestParseTopicTable(t *testing.T) {
	w := TopicConfigSerializeWrapper{TopicConfigTable: map[string]TopicConfig{
		"a": {TopicName: "a", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 6, TopicFilterType: "SINGLE_TAG"},
		"b": {TopicName: "b", Order: true},
	}, DataVersion: DataVersion{StateVersion: 1, Timestamp: 1700000000000, Counter: 42}}
	compact, _ := json.Marshal(w)
	indented, _ := json.MarshalIndent(w, "", "  ")
	for _, b := range [][]byte{compact, indented} {
		got := map[string]TopicConfig{}
		dv, ok := ParseTopicTable(b, func(n string, tc TopicConfig) { got[n] = tc })
		if !ok || dv != w.DataVersion || len(got) != 2 || got["a"].WriteQueueNums != 2 || !got["b"].Order {
			t.Fatalf("ParseTopicTable(%s) = %v %+v %+v", b, ok, dv, got)
		}
	}
	for _, bad := range []string{`{"topicConfigTable":{}}x`, `{"other":1}`, `{"topicConfigTable":{"a":{"x":1}}}`, `[]`,
		`{"dataVersion":{"counter":1.5}}`} {
		if _, ok := ParseTopicTable([]byte(bad), func(string, TopicConfig) {}); ok {
			t.Errorf("ParseTopicTable(%s) took it", bad)
		}
	}
}
