package protocol

import (
	"encoding/binary"
	"strconv"
)

// ExtHeader is a typed custom header that writes its ext fields straight
// into an encoded header, either serialization, without building the
// map[string]string that Encode returns. Set as Command.Header, it is what
// the hot paths send (a send request, its answer): the bytes are exactly
// those of the map path, ExtFields: h.Encode().
type ExtHeader interface {
	CustomHeader
	// AppendExt writes every field Encode would put in the map, with the
	// same value, keys in ascending byte order (the order the map path
	// sorts them in).
	AppendExt(w *ExtWriter)
}

// ExtWriter appends ext fields to a header being encoded: the binary
// pairs (key length 2, key, value length 4, value) or the members of the
// JSON extFields object.
type ExtWriter struct {
	dst  []byte
	json bool
	n    int // fields written
}

// Str writes a string field.
func (w *ExtWriter) Str(k, v string) {
	if w.json {
		w.jsonKey(k)
		w.dst = appendJSONString(w.dst, v)
		return
	}
	w.binaryKey(k)
	w.dst = binary.BigEndian.AppendUint32(w.dst, uint32(len(v)))
	w.dst = append(w.dst, v...)
}

// OptStr writes a string field unless it is empty (fieldWriter.optStr).
func (w *ExtWriter) OptStr(k, v string) {
	if v != "" {
		w.Str(k, v)
	}
}

// Int writes an integer field as its decimal text.
func (w *ExtWriter) Int(k string, v int64) {
	if w.json {
		w.jsonKey(k)
		w.dst = append(w.dst, '"')
		w.dst = strconv.AppendInt(w.dst, v, 10)
		w.dst = append(w.dst, '"')
		return
	}
	w.binaryKey(k)
	at := len(w.dst)
	w.dst = append(w.dst, 0, 0, 0, 0)
	w.dst = strconv.AppendInt(w.dst, v, 10)
	binary.BigEndian.PutUint32(w.dst[at:], uint32(len(w.dst)-at-4))
}

// Bool writes "true" or "false".
func (w *ExtWriter) Bool(k string, v bool) { w.Str(k, strconv.FormatBool(v)) }

// appendExt is h.AppendExt(w) with the send path's headers called
// directly: through the interface, w would escape to the heap, one
// allocation per encoded header.
func appendExt(h ExtHeader, w *ExtWriter) {
	switch h := h.(type) {
	case *SendMessageRequestHeaderV2:
		h.AppendExt(w)
	case *SendMessageRequestHeader:
		h.AppendExt(w)
	case *SendMessageResponseHeader:
		h.AppendExt(w)
	default:
		hw := new(ExtWriter)
		*hw = *w
		h.AppendExt(hw)
		*w = *hw
	}
}

func (w *ExtWriter) jsonKey(k string) {
	if w.n > 0 {
		w.dst = append(w.dst, ',')
	}
	w.n++
	w.dst = appendJSONString(w.dst, k)
	w.dst = append(w.dst, ':')
}

func (w *ExtWriter) binaryKey(k string) {
	w.n++
	w.dst = binary.BigEndian.AppendUint16(w.dst, uint16(len(k)))
	w.dst = append(w.dst, k...)
}

// extMap is the map path's view of c's ext fields: ExtFields, plus
// Header's fields when there is a Header (ExtFields winning a clash).
func (c *Command) extMap() map[string]string {
	if c.Header == nil {
		return c.ExtFields
	}
	m := c.Header.Encode()
	for k, v := range c.ExtFields {
		m[k] = v
	}
	return m
}

// typedExt reports whether c's ext fields are Header's alone, written by
// AppendExt without a map.
func (c *Command) typedExt() bool { return c.Header != nil && len(c.ExtFields) == 0 }
