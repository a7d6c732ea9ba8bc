package protocol

import (
	"strconv"
)

// appendJSONHeader writes the header as fastjson writes RemotingCommand:
// keys in alphabetical order, remark and extFields omitted when empty, ext
// fields in key order.
func appendJSONHeader(dst []byte, c *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	if c.typedExt() {
		at := len(dst)
		dst = append(dst, `,"extFields":{`...)
		w := ExtWriter{dst: dst, json: true}
		appendExt(c.Header, &w)
		dst = w.dst
		if w.n == 0 {
			dst = dst[:at] // omitted when empty, as the map path does
		} else {
			dst = append(dst, '}')
		}
	} else if ext := c.extMap(); len(ext) > 0 {
		dst = append(dst, `,"extFields":{`...)
		first := true
		forEachSorted(ext, func(k, v string) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendJSONString(dst, v)
		})
		dst = append(dst, '}')
	}
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"language":`...)
	lang := c.Language
	if lang == "" {
		lang = LanguageGo
	}
	dst = appendJSONString(dst, lang)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	if c.Remark != "" {
		dst = append(dst, `,"remark":`...)
		dst = appendJSONString(dst, c.Remark)
	}
	dst = append(dst, `,"serializeTypeCurrentRPC":"JSON","version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s: quote, backslash and control characters are
// escaped; other bytes (UTF-8 or not) pass through as they are.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// decodeJSONHeader parses a RemotingCommand JSON header. Unknown keys are
// skipped; null is accepted wherever Java could write one; the language may
// be a name or a LanguageCode number; ext values that are numbers or
// booleans keep their literal text.
//
// With typed, the extFields object is only checked on the way and decoded
// at the end, once code and flag are known: a send request's goes into
// c.Header when decodeSendExtJSON takes it, anything else the map path.
func decodeJSONHeader(h []byte, c *Command, typed bool) error {
	s := &jsonScanner{b: h}
	if !s.consume('{') {
		return s.errf("want '{'")
	}
	extAt := -1 // a deferred extFields object
	if !s.consume('}') {
		for {
			key, err := s.str()
			if err != nil {
				return err
			}
			if !s.consume(':') {
				return s.errf("want ':'")
			}
			switch {
			case key == "extFields" && typed && extAt < 0 && c.ExtFields == nil && s.peek() == '{':
				extAt = s.i
				err = s.skipValue(0)
			case key == "extFields" && extAt >= 0:
				// A second one: decode both in order, as the map path does.
				if err = decodeJSONExt(&jsonScanner{b: h, i: extAt}, c); err == nil {
					err = decodeJSONField(s, key, c)
				}
				extAt = -1
			default:
				err = decodeJSONField(s, key, c)
			}
			if err != nil {
				return err
			}
			if s.consume('}') {
				break
			}
			if !s.consume(',') {
				return s.errf("want ',' or '}'")
			}
		}
	}
	if s.peek() != 0 {
		return s.errf("trailing data")
	}
	if extAt >= 0 {
		if ok, v2 := typedSendCode(c.Code); ok && c.Flag&FlagResponse == 0 && decodeSendExtJSON(h, extAt, c, v2) {
			return nil
		}
		return decodeJSONExt(&jsonScanner{b: h, i: extAt}, c)
	}
	return nil
}

func decodeJSONField(s *jsonScanner, key string, c *Command) error {
	var err error
	var v int64
	switch key {
	case "code":
		v, err = s.integer(key, -1<<31, 1<<31-1) // RocketMQ 5's POP codes pass int16
		c.Code = int32(v)
	case "version":
		v, err = s.integer(key, -1<<15, 1<<15-1)
		c.Version = int16(v)
	case "opaque":
		v, err = s.integer(key, -1<<31, 1<<31-1)
		c.Opaque = int32(v)
	case "flag":
		v, err = s.integer(key, -1<<31, 1<<31-1)
		c.Flag = int32(v)
	case "language":
		switch p := s.peek(); {
		case p == 'n' && s.null():
			c.Language = ""
		case p == '"':
			c.Language, err = s.str()
		default:
			v, err = s.integer(key, 0, 255)
			c.Language = LanguageName(byte(v))
		}
	case "remark":
		if s.null() {
			c.Remark = ""
			return nil
		}
		c.Remark, err = s.str()
	case "extFields":
		if s.null() {
			return nil
		}
		err = decodeJSONExt(s, c)
	default:
		err = s.skipValue(0)
	}
	return err
}

func decodeJSONExt(s *jsonScanner, c *Command) error {
	if !s.consume('{') {
		return s.errf("extFields: want an object")
	}
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 8)
	}
	if s.consume('}') {
		return nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return err
		}
		if !s.consume(':') {
			return s.errf("want ':'")
		}
		switch p := s.peek(); {
		case p == '"':
			v, err := s.str()
			if err != nil {
				return err
			}
			c.ExtFields[k] = v
		case p == 'n' && s.null():
		case p == 't' && s.literal("true"):
			c.ExtFields[k] = "true"
		case p == 'f' && s.literal("false"):
			c.ExtFields[k] = "false"
		default:
			t, err := s.numberText()
			if err != nil {
				return err
			}
			c.ExtFields[k] = string(t)
		}
		if s.consume('}') {
			return nil
		}
		if !s.consume(',') {
			return s.errf("want ',' or '}'")
		}
	}
}
