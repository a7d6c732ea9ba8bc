package protocol

import (
	"encoding/json"
	"strconv"
)

// A broker with a million topics writes and reads a TopicConfig's JSON a
// million times at each registration, snapshot and start; encoding/json's
// reflection took most of those (a restart at a million topics spent ~20 s
// of CPU in it). AppendTopicConfig and ParseTopicConfig do the one shape
// by hand: the same bytes json.Marshal writes, and any object of the
// known fields with plain strings read; anything else (escapes,
// attributes, unknown fields, bare keys) is left to encoding/json.

// AppendTopicConfig appends tc's JSON, byte for byte json.Marshal's.
func AppendTopicConfig(dst []byte, tc TopicConfig) []byte {
	if len(tc.Attributes) > 0 || !plainString(tc.TopicName) || !plainString(tc.TopicFilterType) {
		b, err := json.Marshal(tc)
		if err != nil { // a struct of strings, ints and a string map: cannot fail
			panic(err)
		}
		return append(dst, b...)
	}
	dst = append(dst, `{"topicName":"`...)
	dst = append(dst, tc.TopicName...)
	dst = append(dst, `","readQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(tc.ReadQueueNums), 10)
	dst = append(dst, `,"writeQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(tc.WriteQueueNums), 10)
	dst = append(dst, `,"perm":`...)
	dst = strconv.AppendInt(dst, int64(tc.Perm), 10)
	dst = append(dst, `,"topicFilterType":"`...)
	dst = append(dst, tc.TopicFilterType...)
	dst = append(dst, `","topicSysFlag":`...)
	dst = strconv.AppendInt(dst, int64(tc.TopicSysFlag), 10)
	dst = append(dst, `,"order":`...)
	dst = strconv.AppendBool(dst, tc.Order)
	return append(dst, '}')
}

// plainString: s goes into JSON as it is (json.Marshal would escape
// nothing in it).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// ParseTopicConfig reads the TopicConfig object at the start of b
// (leading white space allowed) and returns it and the bytes it took. ok
// is false when the object is not of the plain shape (see above): the
// caller then decodes it with UnmarshalBody, which knows every shape.
func ParseTopicConfig(b []byte) (tc TopicConfig, n int, ok bool) {
	p := jsonScan{b: b}
	if !p.byte('{') {
		return tc, 0, false
	}
	if p.byte('}') {
		return tc, p.i, true
	}
	for {
		key, ok := p.rawStr()
		if !ok || !p.byte(':') {
			return tc, 0, false
		}
		switch string(key) {
		case "topicName":
			tc.TopicName, ok = p.strValue()
		case "topicFilterType":
			tc.TopicFilterType, ok = p.strValue()
		case "readQueueNums":
			tc.ReadQueueNums, ok = p.int32()
		case "writeQueueNums":
			tc.WriteQueueNums, ok = p.int32()
		case "perm":
			tc.Perm, ok = p.int32()
		case "topicSysFlag":
			tc.TopicSysFlag, ok = p.int32()
		case "order":
			tc.Order, ok = p.boolean()
		default:
			return tc, 0, false
		}
		if !ok {
			return tc, 0, false
		}
		if p.byte('}') {
			return tc, p.i, true
		}
		if !p.byte(',') {
			return tc, 0, false
		}
	}
}

// jsonScan reads the plain JSON ParseTopicConfig accepts.
type jsonScan struct {
	b []byte
	i int
}

func (p *jsonScan) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte takes c after white space, if it is next.
func (p *jsonScan) byte(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// rawStr takes a string without escapes and returns its bytes.
func (p *jsonScan) rawStr() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// strValue is str for a value: a copy of the bytes.
func (p *jsonScan) strValue() (string, bool) {
	raw, ok := p.rawStr()
	if !ok {
		return "", false
	}
	return string(raw), true
}

func (p *jsonScan) int32() (int32, bool) {
	n, ok := p.int64()
	if !ok || n < -1<<31 || n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}

func (p *jsonScan) boolean() (bool, bool) {
	p.ws()
	rest := p.b[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// ParseTopicTable reads a TopicConfigSerializeWrapper's JSON (topics.json,
// GET_ALL_TOPIC_CONFIG's body) of the plain shape, calling put for each
// topic in the file's order, and returns its data version. ok is false
// when b is not of that shape (put may have been called for some topics
// by then): the caller then decodes it with encoding/json.
func ParseTopicTable(b []byte, put func(name string, tc TopicConfig)) (dv DataVersion, ok bool) {
	p := jsonScan{b: b}
	if !p.byte('{') {
		return dv, false
	}
	for first := true; ; first = false {
		if p.byte('}') {
			p.ws()
			return dv, p.i == len(p.b)
		}
		if !first && !p.byte(',') {
			return dv, false
		}
		key, ok := p.rawStr()
		if !ok || !p.byte(':') {
			return dv, false
		}
		switch string(key) {
		case "topicConfigTable":
			ok = p.table(put)
		case "dataVersion":
			dv, ok = p.dataVersion()
		default:
			return dv, false
		}
		if !ok {
			return dv, false
		}
	}
}

func (p *jsonScan) table(put func(string, TopicConfig)) bool {
	if !p.byte('{') {
		return false
	}
	for first := true; ; first = false {
		if p.byte('}') {
			return true
		}
		if !first && !p.byte(',') {
			return false
		}
		name, ok := p.strValue()
		if !ok || !p.byte(':') {
			return false
		}
		tc, n, ok := ParseTopicConfig(p.b[p.i:])
		if !ok {
			return false
		}
		p.i += n
		put(name, tc)
	}
}

func (p *jsonScan) dataVersion() (dv DataVersion, ok bool) {
	if !p.byte('{') {
		return dv, false
	}
	for first := true; ; first = false {
		if p.byte('}') {
			return dv, true
		}
		if !first && !p.byte(',') {
			return dv, false
		}
		key, ok := p.rawStr()
		if !ok || !p.byte(':') {
			return dv, false
		}
		var v int64
		if v, ok = p.int64(); !ok {
			return dv, false
		}
		switch string(key) {
		case "stateVersion":
			dv.StateVersion = v
		case "timestamp":
			dv.Timestamp = v
		case "counter":
			dv.Counter = v
		default:
			return dv, false
		}
	}
}

func (p *jsonScan) int64() (int64, bool) {
	p.ws()
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	var n int64
	digits := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		n = n*10 + int64(p.b[p.i]-'0')
		p.i++
		if digits++; digits > 18 {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, digits > 0
}

// AppendJSONString appends s as json.Marshal writes it.
func AppendJSONString(dst []byte, s string) []byte {
	if plainString(s) {
		return append(append(append(dst, '"'), s...), '"')
	}
	b, err := json.Marshal(s)
	if err != nil { // a string always encodes
		panic(err)
	}
	return append(dst, b...)
}
