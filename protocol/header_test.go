package protocol

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestJSONHeaderFromJava(t *testing.T) {
	// What fastjson writes for a Java response (alphabetical keys, enum
	// names, serializeTypeCurrentRPC, remark omitted when null).
	h := `{"code":17,"extFields":{"a":"1","b":"x"},"flag":1,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":401}`
	var c Command
	if err := DecodeHeader(SerializeJSON, []byte(h), &c); err != nil {
		t.Fatal(err)
	}
	want := Command{Code: 17, Language: "JAVA", Version: 401, Opaque: 9, Flag: 1,
		ExtFields: map[string]string{"a": "1", "b": "x"}, Serialize: SerializeJSON}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v", c)
	}
}

func TestJSONHeaderFromGoClient(t *testing.T) {
	// What rocketmq-client-go's jsoniter writes (struct order, empty remark,
	// extFields always present).
	h := `{"code":105,"language":"GO","version":317,"opaque":3,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`
	var c Command
	if err := DecodeHeader(SerializeJSON, []byte(h), &c); err != nil {
		t.Fatal(err)
	}
	if c.Code != GetRouteInfoByTopic || c.Language != "GO" || c.Version != 317 || c.Opaque != 3 || c.Ext("topic") != "TopicTest" {
		t.Fatalf("got %+v", c)
	}
}

func TestJSONHeaderTolerance(t *testing.T) {
	cases := map[string]Command{
		`{"code":1,"remark":null,"extFields":null,"language":null}`:                        {Code: 1},
		` { "code" : -3 , "language" : 9 , "unknown" : {"x":[1,2,{"y":null}],"z":true} } `: {Code: -3, Language: "GO"},
		`{"extFields":{"n":12,"t":true,"f":false,"z":null,"e":"\u00e9\ud83d\ude00\n\"\\/"}}`: {ExtFields: map[string]string{
			"n": "12", "t": "true", "f": "false", "e": "é😀\n\"\\/"}},
		`{"remark":"\ud800x"}`: {Remark: "\uFFFDx"}, // a lone surrogate, as encoding/json does
		`{}`:                   {},
	}
	for in, want := range cases {
		var c Command
		if err := decodeJSONHeader([]byte(in), &c, false); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", in, c, want)
		}
	}
}

func TestJSONHeaderRejects(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{`, `{"code":}`, `{"code":1.5}`, `{"code":3000000000}`, `{"opaque":"1"}`,
		`{"code":1}x`, `{"remark":"a` + "\x01" + `"}`, `{"remark":"\x"}`, `{"extFields":[]}`,
		`{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, `{"code":1,}`, `{"extFields":{"a":--}}`,
	} {
		var c Command
		if err := decodeJSONHeader([]byte(in), &c, false); !errors.Is(err, ErrBadHeader) {
			t.Errorf("%q: err %v", in, err)
		}
	}
}

func TestJSONHeaderEncodeIsJSON(t *testing.T) {
	c := &Command{Code: 310, Language: "GO", Version: 317, Opaque: -5, Flag: 3,
		Remark:    "tab\tnl\nctl\x01quote\"back\\é",
		ExtFields: map[string]string{"b": "2", "a": "1\x00", "é": "ü"}, Serialize: SerializeJSON}
	h := appendJSONHeader(nil, c)
	var generic map[string]any
	if err := json.Unmarshal(h, &generic); err != nil {
		t.Fatalf("not JSON: %s: %v", h, err)
	}
	if generic["remark"] != c.Remark || generic["serializeTypeCurrentRPC"] != "JSON" {
		t.Fatalf("decoded by encoding/json: %v", generic)
	}
	want := `{"code":310,"extFields":{"a":"1\u0000","b":"2","é":"ü"},"flag":3,"language":"GO","opaque":-5,` +
		`"remark":"tab\tnl\nctl\u0001quote\"back\\é","serializeTypeCurrentRPC":"JSON","version":317}`
	if string(h) != want {
		t.Fatalf("encoding\n got %s\nwant %s", h, want)
	}
}

func TestBinaryHeaderLayout(t *testing.T) {
	c := &Command{Code: 105, Language: "GO", Version: 317, Opaque: 0x01020304, Flag: 2, Remark: "hi",
		ExtFields: map[string]string{"topic": "T"}, Serialize: SerializeRocketMQ}
	h, err := appendBinaryHeader(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	want = binary.BigEndian.AppendUint16(want, 105)
	want = append(want, 9)
	want = binary.BigEndian.AppendUint16(want, 317)
	want = append(want, 1, 2, 3, 4, 0, 0, 0, 2)
	want = append(want, 0, 0, 0, 2, 'h', 'i')
	want = append(want, 0, 0, 0, 2+5+4+1, 0, 5, 't', 'o', 'p', 'i', 'c', 0, 0, 0, 1, 'T')
	if string(h) != string(want) {
		t.Fatalf("layout\n got % x\nwant % x", h, want)
	}
	var back Command
	if err := DecodeHeader(SerializeRocketMQ, h, &back); err != nil {
		t.Fatal(err)
	}
	c.Body = nil
	if !reflect.DeepEqual(&back, c) {
		t.Fatalf("back %+v", back)
	}
}

func TestBinaryHeaderRejects(t *testing.T) {
	good, _ := appendBinaryHeader(nil, &Command{Code: 1, Remark: "r", ExtFields: map[string]string{"k": "v"}})
	// Every truncation of a good header must fail cleanly, never panic.
	for n := 0; n < len(good); n++ {
		var c Command
		if err := decodeBinaryHeader(good[:n], &c, false); !errors.Is(err, ErrBadHeader) {
			t.Errorf("truncated to %d: err %v", n, err)
		}
	}
	bad := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(bad[13:], 0x7FFFFFFF) // remark length past the end
	if err := decodeBinaryHeader(bad, &Command{}, false); !errors.Is(err, ErrBadHeader) {
		t.Errorf("huge remark: %v", err)
	}
	bad = append([]byte(nil), good...)
	binary.BigEndian.PutUint32(bad[13:], 0xFFFFFFFF) // negative
	if err := decodeBinaryHeader(bad, &Command{}, false); !errors.Is(err, ErrBadHeader) {
		t.Errorf("negative remark: %v", err)
	}
}

func TestLanguageCodes(t *testing.T) {
	for code, name := range languages {
		if LanguageCode(name) != byte(code) || LanguageName(byte(code)) != name {
			t.Errorf("%d %s", code, name)
		}
	}
	if LanguageCode("KLINGON") != 7 || LanguageName(200) != "OTHER" {
		t.Error("unknown languages should be OTHER")
	}
}

func TestNewResponse(t *testing.T) {
	req := NewRequest(GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	req.Opaque, req.Serialize = 41, SerializeRocketMQ
	resp := NewResponse(req, TopicNotExist, "no")
	if !resp.IsResponse() || resp.IsOneway() || resp.Opaque != 41 || resp.Serialize != SerializeRocketMQ || resp.Code != TopicNotExist {
		t.Fatalf("%+v", resp)
	}
	req.MarkOneway()
	if !req.IsOneway() || req.IsResponse() {
		t.Fatal("flags")
	}
	if !strings.Contains(resp.String(), "TOPIC_NOT_EXIST") || !strings.Contains(req.String(), "GET_ROUTEINFO_BY_TOPIC") {
		t.Fatalf("String: %s / %s", resp, req)
	}
}
