package protocol

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadField: a custom header lacks a required field or a field does not
// parse. Wrapped with the field's name.
var ErrBadField = errors.New("protocol: bad header field")

// CustomHeader is what every typed header implements: RocketMQ's flattening
// of a header object into Command.ExtFields and back.
type CustomHeader interface {
	Encode() map[string]string
	Decode(m map[string]string) error
}

// fieldReader decodes ext fields the way RocketMQ's decodeCommandCustomHeader
// does: required fields must be present, numbers parse strictly (Java's
// Integer.parseInt / Long.parseLong), booleans are "true" in any case or
// false. It collects every error, not just the first.
type fieldReader struct {
	m    map[string]string
	errs []error
}

func (r *fieldReader) fail(key, why string) {
	r.errs = append(r.errs, fmt.Errorf("%w: %s: %s", ErrBadField, key, why))
}

func (r *fieldReader) has(key string) bool {
	_, ok := r.m[key]
	return ok
}

// str reads an optional string.
func (r *fieldReader) str(key string) string { return r.m[key] }

// reqStr reads a required string.
func (r *fieldReader) reqStr(key string) string {
	v, ok := r.m[key]
	if !ok {
		r.fail(key, "missing")
	}
	return v
}

func (r *fieldReader) integer(key string, required bool, bits int) int64 {
	v, ok := r.m[key]
	if !ok || (v == "" && !required) {
		if required {
			r.fail(key, "missing")
		}
		return 0
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		r.fail(key, fmt.Sprintf("%q is not an int%d", v, bits))
	}
	return n
}

func (r *fieldReader) i32(key string, required bool) int32 {
	return int32(r.integer(key, required, 32))
}

func (r *fieldReader) i64(key string, required bool) int64 {
	return r.integer(key, required, 64)
}

// boolean reads an optional boolean with Java's Boolean.parseBoolean rules.
func (r *fieldReader) boolean(key string) bool { return strings.EqualFold(r.m[key], "true") }

// boolOr reads an optional boolean, def when absent.
func (r *fieldReader) boolOr(key string, def bool) bool {
	if v, ok := r.m[key]; ok {
		return strings.EqualFold(v, "true")
	}
	return def
}

func (r *fieldReader) err() error { return errors.Join(r.errs...) }

// fieldWriter builds an ext-field map.
type fieldWriter map[string]string

func newFields(n int) fieldWriter { return make(fieldWriter, n) }

func (w fieldWriter) str(k, v string) { w[k] = v }

// optStr writes v only when it is not empty (Java's writeIfNotNull of a null).
func (w fieldWriter) optStr(k, v string) {
	if v != "" {
		w[k] = v
	}
}

func (w fieldWriter) i64(k string, v int64) { w[k] = strconv.FormatInt(v, 10) }
func (w fieldWriter) i32(k string, v int32) { w[k] = strconv.FormatInt(int64(v), 10) }

// optI32 writes v only when present says so.
func (w fieldWriter) optI32(k string, v int32, present bool) {
	if present {
		w.i32(k, v)
	}
}

func (w fieldWriter) boolean(k string, v bool) { w[k] = strconv.FormatBool(v) }
