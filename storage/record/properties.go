package record

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
)

// ErrPropertySeparator: a property name or value holds a separator byte
// (0x01 or 0x02), which the "name\x01value\x02" form cannot carry.
var ErrPropertySeparator = errors.New("record: property holds a separator byte")

// EncodeProperties returns m as "name\x01value\x02" pairs, sorted by name
// so the same map always gives the same bytes. An empty name is an error;
// an empty value is written but, as in RocketMQ, dropped by
// ParseProperties.
func EncodeProperties(m map[string]string) ([]byte, error) {
	names := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		if k == "" {
			return nil, fmt.Errorf("%w: empty name", ErrPropertySeparator)
		}
		if !ValidProperty(k, v) {
			return nil, fmt.Errorf("%w: %q", ErrPropertySeparator, k)
		}
		names = append(names, k)
		n += len(k) + len(v) + 2
	}
	sort.Strings(names)
	b := make([]byte, 0, n)
	for _, k := range names {
		b = AppendProperty(b, k, m[k])
	}
	return b, nil
}

// ValidProperty reports whether name and value can be encoded: neither
// holds a separator byte.
func ValidProperty(name, value string) bool {
	return !containsSep(name) && !containsSep(value)
}

func containsSep(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == NameValueSeparator || s[i] == PropertySeparator {
			return true
		}
	}
	return false
}

// AppendProperty appends one "name\x01value\x02" pair to dst, without a
// map (it allocates only if dst must grow). The caller ensures
// ValidProperty(name, value).
func AppendProperty(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, NameValueSeparator)
	dst = append(dst, value...)
	return append(dst, PropertySeparator)
}

// ForEachProperty calls fn for every pair of props as RocketMQ's
// string2messageProperties reads them (pieces between PropertySeparator
// bytes; a piece without a name, a value or the 0x01 is skipped) until fn
// returns false. name and value alias props.
func ForEachProperty(props []byte, fn func(name, value []byte) bool) {
	for len(props) > 0 {
		end := bytes.IndexByte(props, PropertySeparator)
		piece := props
		if end >= 0 {
			piece, props = props[:end], props[end+1:]
		} else {
			props = nil
		}
		kv := bytes.IndexByte(piece, NameValueSeparator)
		if kv <= 0 || kv == len(piece)-1 {
			continue
		}
		if !fn(piece[:kv], piece[kv+1:]) {
			return
		}
	}
}

// ParseProperties returns the pairs of props as a map (a later duplicate
// name wins, as in RocketMQ).
func ParseProperties(props []byte) map[string]string {
	m := make(map[string]string)
	ForEachProperty(props, func(k, v []byte) bool {
		m[string(k)] = string(v)
		return true
	})
	return m
}

// LookupProperty returns the value of the last pair named name in props,
// without allocating.
func LookupProperty(props []byte, name string) (value []byte, ok bool) {
	ForEachProperty(props, func(k, v []byte) bool {
		if string(k) == name {
			value, ok = v, true
		}
		return true
	})
	return value, ok
}
