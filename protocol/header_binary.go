package protocol

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// binaryFixed is the fixed part of a binary header: code 2, language 1,
// version 2, opaque 4, flag 4, remark length 4, ext length 4.
const binaryFixed = 21

// appendBinaryHeader appends RocketMQSerializable's layout. Ext fields go in
// sorted key order so equal commands encode to equal bytes.
func appendBinaryHeader(dst []byte, c *Command) ([]byte, error) {
	if len(c.Remark) > math.MaxInt32 {
		return dst, fmt.Errorf("%w: remark of %d bytes", ErrBadHeader, len(c.Remark))
	}
	if c.Code != int32(int16(c.Code)) {
		// RocketMQSerializable writes the code as a short: RocketMQ 5's
		// POP codes (200050...) travel only in JSON headers.
		return dst, fmt.Errorf("%w: code %d does not fit the binary header's int16", ErrBadHeader, c.Code)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Code))
	lang := c.Language
	if lang == "" {
		lang = LanguageGo
	}
	dst = append(dst, LanguageCode(lang))
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	if c.typedExt() {
		w := ExtWriter{dst: dst}
		appendExt(c.Header, &w)
		dst = w.dst
		binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
		return dst, nil
	}
	var err error
	forEachSorted(c.extMap(), func(k, v string) {
		if err != nil {
			return
		}
		if len(k) > math.MaxInt16 {
			err = fmt.Errorf("%w: ext key of %d bytes", ErrBadHeader, len(k))
			return
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	})
	if err != nil {
		return dst[:lenAt], err
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst, nil
}

// splitBinaryHeader checks a binary header's lengths against h and
// returns its remark and ext-field bytes.
func splitBinaryHeader(h []byte) (remark, ext []byte, err error) {
	if len(h) < binaryFixed {
		return nil, nil, fmt.Errorf("%w: binary header of %d bytes, need at least %d", ErrBadHeader, len(h), binaryFixed)
	}
	p := h[13:]
	rl := int64(int32(binary.BigEndian.Uint32(p)))
	p = p[4:]
	if rl < 0 || rl > int64(len(p)) {
		return nil, nil, fmt.Errorf("%w: remark length %d, %d bytes left", ErrBadHeader, rl, len(p))
	}
	remark, p = p[:rl], p[rl:]
	if len(p) < 4 {
		return nil, nil, fmt.Errorf("%w: no ext length after the remark", ErrBadHeader)
	}
	el := int64(int32(binary.BigEndian.Uint32(p)))
	p = p[4:]
	if el < 0 || el > int64(len(p)) {
		return nil, nil, fmt.Errorf("%w: ext length %d, %d bytes left", ErrBadHeader, el, len(p))
	}
	return remark, p[:el], nil
}

// setBinaryFixed sets c's fixed fields from a header splitBinaryHeader
// took.
func setBinaryFixed(h []byte, c *Command) {
	c.Code = int32(int16(binary.BigEndian.Uint16(h)))
	c.Language = LanguageName(h[2])
	c.Version = int16(binary.BigEndian.Uint16(h[3:]))
	c.Opaque = int32(binary.BigEndian.Uint32(h[5:]))
	c.Flag = int32(binary.BigEndian.Uint32(h[9:]))
}

// decodeBinaryHeader parses RocketMQSerializable's layout; every length is
// checked against what is left of h. With typed, a send request's ext
// fields go into c.Header when decodeSendExtBinary takes them.
func decodeBinaryHeader(h []byte, c *Command, typed bool) error {
	remark, ext, err := splitBinaryHeader(h)
	if err != nil {
		return err
	}
	setBinaryFixed(h, c)
	c.Remark = string(remark)
	if len(ext) == 0 {
		return nil
	}
	if typed && c.Flag&FlagResponse == 0 {
		if ok, v2 := typedSendCode(c.Code); ok && decodeSendExtBinary(ext, c, v2) {
			return nil
		}
	}
	c.ExtFields = make(map[string]string, 8)
	for len(ext) > 0 {
		if len(ext) < 2 {
			return fmt.Errorf("%w: ext key length cut short", ErrBadHeader)
		}
		kl := int(int16(binary.BigEndian.Uint16(ext)))
		ext = ext[2:]
		if kl < 0 || kl > len(ext) {
			return fmt.Errorf("%w: ext key length %d, %d bytes left", ErrBadHeader, kl, len(ext))
		}
		k := intern(ext[:kl])
		ext = ext[kl:]
		if len(ext) < 4 {
			return fmt.Errorf("%w: ext value length of %q cut short", ErrBadHeader, k)
		}
		vl := int64(int32(binary.BigEndian.Uint32(ext)))
		ext = ext[4:]
		if vl < 0 || vl > int64(len(ext)) {
			return fmt.Errorf("%w: ext value length %d of %q, %d bytes left", ErrBadHeader, vl, k, len(ext))
		}
		c.ExtFields[k] = intern(ext[:vl])
		ext = ext[vl:]
	}
	return nil
}

// forEachSorted calls f for each pair of m in key order, without allocating
// for small maps.
func forEachSorted(m map[string]string, f func(k, v string)) {
	if len(m) == 0 {
		return
	}
	var arr [32]string
	keys := arr[:0]
	if len(m) > len(arr) {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f(k, m[k])
	}
}
