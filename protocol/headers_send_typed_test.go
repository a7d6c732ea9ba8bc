package protocol

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// randomSendHeader makes a send header with every field varied: empty and
// escaped strings, extreme numbers, optional fields present or not.
func randomSendHeader(r *rand.Rand) SendMessageRequestHeader {
	strs := []string{"", "T", "TBW102", "topic-\"quoted\"", "é\x01\x02\n\\", "pg", "broker-a", "KEYS\x01k\x02TAGS\x01t\x02"}
	str := func() string { return strs[r.IntN(len(strs))] }
	i32 := func() int32 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return -1 << 31
		case 2:
			return 1<<31 - 1
		}
		return int32(r.Uint32())
	}
	i64 := func() int64 {
		if r.IntN(3) == 0 {
			return -1 << 63
		}
		return int64(r.Uint64())
	}
	return SendMessageRequestHeader{
		ProducerGroup: str(), Topic: str(), DefaultTopic: str(), DefaultTopicQueueNums: i32(), QueueID: i32(),
		SysFlag: i32(), BornTimestamp: i64(), Flag: i32(), Properties: str(), ReconsumeTimes: i32(),
		UnitMode: r.IntN(2) == 0, Batch: r.IntN(2) == 0, MaxReconsumeTimes: i32(), HasMaxReconsumeTimes: r.IntN(2) == 0,
		BrokerName: str(),
	}
}

// typedHeaders gives the three typed headers of a random send.
func typedHeaders(r *rand.Rand) []ExtHeader {
	h := randomSendHeader(r)
	if !h.HasMaxReconsumeTimes {
		h.MaxReconsumeTimes = 0 // not sent, so not decoded
	}
	resp := &SendMessageResponseHeader{MsgID: h.Topic, QueueID: h.QueueID, QueueOffset: h.BornTimestamp,
		TransactionID: h.BrokerName, BatchUniqID: h.Properties, MsgRegion: h.ProducerGroup, TraceOn: h.DefaultTopic}
	end := &EndTransactionRequestHeader{Topic: h.Topic, ProducerGroup: h.ProducerGroup, TranStateTableOffset: h.BornTimestamp,
		CommitLogOffset: int64(h.Flag), CommitOrRollback: h.SysFlag, FromTransactionCheck: h.Batch, MsgID: h.Properties,
		TransactionID: h.DefaultTopic, BrokerName: h.BrokerName}
	return []ExtHeader{&h, h.V2(), resp, end}
}

// The typed encoders write exactly the map path's bytes, both
// serializations, alone and beside extra ExtFields.
func TestTypedEncodeMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		for _, h := range typedHeaders(r) {
			for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
				typed := &Command{Code: SendMessageV2, Opaque: int32(i), Header: h, Body: []byte("b"), Serialize: st}
				viaMap := &Command{Code: SendMessageV2, Opaque: int32(i), ExtFields: h.Encode(), Body: []byte("b"), Serialize: st}
				if i%3 == 0 {
					typed.ExtFields = map[string]string{"zzExtra": "1", "AAextra": "2"}
					for k, v := range typed.ExtFields {
						viaMap.ExtFields[k] = v
					}
				}
				a, err1 := AppendCommand(nil, typed)
				b, err2 := AppendCommand(nil, viaMap)
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Fatalf("%T %s: typed %v %q\nmap %v %q", h, st, err1, a, err2, b)
				}
				if typed.String() != viaMap.String() {
					t.Fatalf("String differs:\n%s\n%s", typed.String(), viaMap.String())
				}
			}
		}
	}
}

// sendVariants gives ext maps of a send around h: the map as encoded, and
// variations the typed decoder must take or hand to the map path.
func sendVariants(r *rand.Rand, h *SendMessageRequestHeader, v2 bool) []map[string]string {
	base := func() map[string]string {
		if v2 {
			return h.V2().Encode()
		}
		return h.Encode()
	}
	keys := []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
		"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname"}
	if v2 {
		keys = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"}
	}
	values := []string{"", "+5", "-0", "007", "9223372036854775808", "2147483648", "-2147483649", "TRUE", "tRuE",
		"1e3", " 1", "0x10", "12345678901234567890", "-", "x"}
	out := []map[string]string{base()}
	for range 6 {
		m := base()
		switch r.IntN(3) {
		case 0:
			delete(m, keys[r.IntN(len(keys))])
		case 1:
			m[keys[r.IntN(len(keys))]] = values[r.IntN(len(values))]
		case 2:
			m["extra"+strconv.Itoa(r.IntN(3))] = values[r.IntN(len(values))]
		}
		out = append(out, m)
	}
	return out
}

// The typed decoder gives what the map path gives: the same header or an
// error both ways, and the other fields in ExtFields.
func TestTypedDecodeMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	typedTaken := 0
	for range 1000 {
		h := randomSendHeader(r)
		for _, code := range []int32{SendMessage, SendMessageV2, SendBatchMessage, SendReplyMessageV2} {
			for _, ext := range sendVariants(r, &h, code != SendMessage) {
				for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
					frame, err := AppendCommand(nil, &Command{Code: code, Opaque: 9, ExtFields: ext, Serialize: st})
					if err != nil {
						t.Fatal(err)
					}
					if compareTypedDecode(t, frame[4:]) {
						typedTaken++
					}
				}
			}
		}
	}
	if typedTaken < 4000 {
		t.Fatalf("the typed decoder took only %d frames", typedTaken)
	}
}

// compareTypedDecode checks DecodeRequestFrame against DecodeFrame on one
// frame and reports whether the typed decoder took it.
func compareTypedDecode(t *testing.T, frame []byte) bool {
	t.Helper()
	plain, err1 := DecodeFrame(frame)
	typed, err2 := DecodeRequestFrame(frame)
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("frame errors differ: map %v, typed %v\n%q", err1, err2, frame)
	}
	if err1 != nil {
		return false
	}
	if typed.Code != plain.Code || typed.Opaque != plain.Opaque || typed.Flag != plain.Flag ||
		typed.Remark != plain.Remark || !bytes.Equal(typed.Body, plain.Body) {
		t.Fatalf("commands differ:\n%v\n%v", plain, typed)
	}
	if typed.Header == nil {
		if !reflect.DeepEqual(typed, plain) {
			t.Fatalf("untaken frame decodes differently:\n%#v\n%#v", plain, typed)
		}
		return false
	}
	if ok, _ := typedSendCode(plain.Code); !ok || plain.IsResponse() {
		t.Fatalf("typed header on %v", plain)
	}
	h1, e1 := DecodeSendMessageRequest(plain)
	h2, e2 := DecodeSendMessageRequest(typed)
	if e1 != nil || e2 != nil {
		t.Fatalf("a frame the typed decoder took fails: map %v, typed %v", e1, e2)
	}
	if *h1 != *h2 {
		t.Fatalf("headers differ:\nmap   %+v\ntyped %+v", *h1, *h2)
	}
	for k, v := range typed.ExtFields {
		if plain.ExtFields[k] != v {
			t.Fatalf("rest field %q=%q, map has %q", k, v, plain.ExtFields[k])
		}
	}
	if typed.String() == "" {
		t.Fatal("no String")
	}
	return true
}

// A frame the typed decoder refuses decodes the map way, so the field
// error is what it was.
func TestTypedDecodeRefusalKeepsError(t *testing.T) {
	h := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4}
	ext := h.V2().Encode()
	ext["e"] = "not-a-number"
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		frame, _ := AppendCommand(nil, &Command{Code: SendMessageV2, ExtFields: ext, Serialize: st})
		c, err := DecodeRequestFrame(frame[4:])
		if err != nil || c.Header != nil || c.ExtFields["e"] != "not-a-number" {
			t.Fatalf("%s: %v %+v", st, err, c)
		}
		if _, err := DecodeSendMessageRequest(c); !errors.Is(err, ErrBadField) {
			t.Fatalf("%s: %v, want ErrBadField", st, err)
		}
	}
}

// JSON headers in any key order, with extFields repeated, null or first.
func TestTypedDecodeJSONShapes(t *testing.T) {
	for _, hdr := range []string{
		`{"extFields":{"a":"g","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"5","h":"0"},"code":310,"flag":0}`,
		`{"code":310,"extFields":{"a":"g","b":"T","c":"TBW102","d":4,"e":1,"f":0,"g":5,"h":0,"k":true,"m":false,"n":null}}`,
		`{"code":310,"extFields":{"a":"g","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"5","h":"0"},"extFields":{"b":"U","x":"y"}}`,
		`{"code":310,"extFields":{"a":"g\u00e9\n","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"5","h":"0"}}`,
		`{"code":310,"extFields":null,"extFields":{"a":"g","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"5","h":"0"}}`,
		`{"code":310,"flag":1,"extFields":{"a":"g","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"5","h":"0"}}`,
		`{"code":310,"extFields":{"a":"g","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"5","h":"0"},"bad":[}`,
		`{"code":310,"extFields":{"a":"g","b":"T","c":"TBW102","d":"4","e":{},"f":"0","g":"5","h":"0"}}`,
	} {
		frame := append([]byte{0, 0, 0, byte(len(hdr))}, hdr...)
		compareTypedDecode(t, frame)
	}
}

func FuzzDecodeRequestFrame(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for _, h := range typedHeaders(r)[:2] {
			code := SendMessageV2
			if _, v1 := h.(*SendMessageRequestHeader); v1 {
				code = SendMessage
			}
			fr, _ := AppendCommand(nil, &Command{Code: code, Header: h, Body: []byte("x"), Serialize: st})
			f.Add(fr[4:])
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		compareTypedDecode(t, frame)
	})
}

func BenchmarkDecodeSendRequest(b *testing.B) {
	h := SendMessageRequestHeader{ProducerGroup: "loadgen-producer", Topic: "loadgen-0", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 3, BornTimestamp: 1700000000123, Properties: "UNIQ_KEY\x01AC1100020000000000000000000001\x02WAIT\x01true\x02",
		BrokerName: "broker-a"}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		frame, _ := AppendCommand(nil, &Command{Code: SendMessageV2, Header: h.V2(), Body: make([]byte, 1024), Serialize: st})
		for _, typed := range []bool{false, true} {
			name := "header=" + st.String() + "/decode=map"
			if typed {
				name = "header=" + st.String() + "/decode=typed"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c, err := decodeFrame(frame[4:], typed)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := DecodeSendMessageRequest(c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkEncodeSendRequest(b *testing.B) {
	h := SendMessageRequestHeader{ProducerGroup: "loadgen-producer", Topic: "loadgen-0", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 3, BornTimestamp: 1700000000123, Properties: "UNIQ_KEY\x01AC1100020000000000000000000001\x02",
		BrokerName: "broker-a"}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for _, typed := range []bool{false, true} {
			name := "header=" + st.String() + "/encode=map"
			if typed {
				name = "header=" + st.String() + "/encode=typed"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				var buf []byte
				for b.Loop() {
					c := &Command{Code: SendMessageV2, Serialize: st}
					if typed {
						c.Header = h.V2()
					} else {
						c.ExtFields = h.V2().Encode()
					}
					buf, _ = AppendFrameHead(buf[:0], c, 1024)
				}
			})
		}
	}
}
