package protocol

import (
	"encoding/json"
	"fmt"
)

// ErrBadBody: a body does not decode.
var ErrBadBody = fmt.Errorf("protocol: bad body")

// MarshalBody encodes a body as standard JSON (quoted map keys), which Java's
// fastjson and rocketmq-client-go both parse.
func MarshalBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("protocol: marshal %T: %w", v, err)
	}
	return b, nil
}

// UnmarshalBody decodes a RocketMQ JSON body into v. It accepts what fastjson
// writes beyond JSON: object keys that are bare numbers ({0:"addr"}).
func UnmarshalBody(data []byte, v any) error {
	if err := json.Unmarshal(quoteBareKeys(data), v); err != nil {
		return fmt.Errorf("%w: %T: %v", ErrBadBody, v, err)
	}
	return nil
}

// quoteBareKeys rewrites object keys that are not strings ({0:"a",-1:"b"})
// into quoted ones. It returns data itself when nothing needs a change.
// Malformed input is passed on for json.Unmarshal to reject.
func quoteBareKeys(data []byte) []byte {
	var out []byte // nil until the first fix
	var stack []byte
	expectKey := false
	last := 0 // data[:last] is already in out
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case '"':
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			i = j
			expectKey = false
		case '{':
			stack = append(stack, '{')
			expectKey = true
		case '[':
			stack = append(stack, '[')
			expectKey = false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case ' ', '\t', '\n', '\r', ':':
		default:
			if !expectKey {
				continue
			}
			j := i
			for j < len(data) && data[j] != ':' && data[j] != ' ' && data[j] != '\t' && data[j] != '\n' && data[j] != '\r' && data[j] != '}' && data[j] != ',' {
				j++
			}
			if out == nil {
				out = make([]byte, 0, len(data)+16)
			}
			out = append(out, data[last:i]...)
			out = append(out, '"')
			out = append(out, data[i:j]...)
			out = append(out, '"')
			last = j
			i = j - 1
			expectKey = false
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}
