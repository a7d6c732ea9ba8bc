package protocol

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting skipValue follows, so hostile input
// cannot exhaust the stack.
const maxJSONDepth = 64

// jsonScanner is a minimal JSON reader over one header.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) errf(format string, args ...any) error {
	return fmt.Errorf("%w: json at byte %d: %s", ErrBadHeader, s.i, fmt.Sprintf(format, args...))
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScanner) consume(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

func (s *jsonScanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// str reads a string; the scanner is at its opening quote.
func (s *jsonScanner) str() (string, error) {
	b, alias, err := s.strBytes()
	switch {
	case err != nil:
		return "", err
	case alias:
		return intern(b), nil
	}
	return string(b), nil
}

// strBytes reads a string as bytes: a slice of the input (alias) when it
// has no escapes, else a new decoded copy.
func (s *jsonScanner) strBytes() (v []byte, alias bool, err error) {
	if !s.consume('"') {
		return nil, false, s.errf("want a string")
	}
	start := s.i
	for s.i < len(s.b) { // fast path: no escapes
		b := s.b[s.i]
		if b == '"' {
			v := s.b[start:s.i]
			s.i++
			return v, true, nil
		}
		if b == '\\' || b < 0x20 {
			break
		}
		s.i++
	}
	out := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		b := s.b[s.i]
		switch {
		case b == '"':
			s.i++
			return out, false, nil
		case b < 0x20:
			return nil, false, s.errf("control character in string")
		case b != '\\':
			out = append(out, b)
			s.i++
			continue
		}
		s.i++
		if s.i >= len(s.b) {
			break
		}
		e := s.b[s.i]
		s.i++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, false, s.errf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				save := s.i
				if s.literal(`\u`) {
					if x, ok := s.hex4(); ok {
						r2 = x
					}
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
				} else {
					s.i = save
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false, s.errf("bad escape \\%c", e)
		}
	}
	return nil, false, s.errf("unterminated string")
}

func (s *jsonScanner) hex4() (rune, bool) {
	if len(s.b)-s.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.i += 4
	return r, true
}

// numberText reads a JSON number (RFC 8259 grammar) and returns its text.
func (s *jsonScanner) numberText() ([]byte, error) {
	s.ws()
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return nil, s.errf("want a number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, s.errf("want digits after '.'")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, s.errf("want an exponent")
		}
	}
	return s.b[start:s.i], nil
}

// integer reads an integer within [lo, hi].
func (s *jsonScanner) integer(field string, lo, hi int64) (int64, error) {
	t, err := s.numberText()
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseInt(string(t), 10, 64)
	if perr != nil || v < lo || v > hi {
		return 0, s.errf("%s: %q is not an integer in [%d, %d]", field, t, lo, hi)
	}
	return v, nil
}

// skipValue skips any JSON value.
func (s *jsonScanner) skipValue(depth int) error {
	if depth > maxJSONDepth {
		return s.errf("nested deeper than %d", maxJSONDepth)
	}
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.strBytes()
		return err
	case c == '{' || c == '[':
		s.i++
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		if s.consume(end) {
			return nil
		}
		for {
			if c == '{' {
				if _, _, err := s.strBytes(); err != nil {
					return err
				}
				if !s.consume(':') {
					return s.errf("want ':'")
				}
			}
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			if s.consume(end) {
				return nil
			}
			if !s.consume(',') {
				return s.errf("want ',' or '%c'", end)
			}
		}
	case c == 't':
		if s.literal("true") {
			return nil
		}
	case c == 'f':
		if s.literal("false") {
			return nil
		}
	case c == 'n':
		if s.literal("null") {
			return nil
		}
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.numberText()
		return err
	}
	return s.errf("want a value")
}

// null consumes a null literal if one is next.
func (s *jsonScanner) null() bool {
	return s.peek() == 'n' && s.literal("null")
}
