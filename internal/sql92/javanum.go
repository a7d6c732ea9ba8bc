package sql92

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// javaParseInt is Integer.parseInt (bits 32) or Long.parseLong (bits 64):
// an optional sign, then decimal digits of any script (Character.digit),
// nothing else, in range.
func javaParseInt(s string, bits int) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	limit := uint64(1)<<(bits-1) - 1
	if neg {
		limit++
	}
	var n uint64
	for len(s) > 0 {
		r, size := rune(s[0]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s)
		}
		d, ok := digitValue(r)
		if !ok {
			return 0, false
		}
		if n > (limit-uint64(d))/10 {
			return 0, false
		}
		n = n*10 + uint64(d)
		s = s[size:]
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// digitValue is Character.digit(r, 10): ASCII digits and the other
// Unicode decimal digits (category Nd, in runs of ten from zero).
func digitValue(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r < utf8.RuneSelf || !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	return 0, false
}

// javaParseDouble is Double.parseDouble: surrounding characters up to
// U+0020 trimmed, an optional sign, "NaN", "Infinity", a decimal number
// (ASCII digits, "1.", ".5", an exponent) or a hexadecimal one with a
// binary exponent, then optionally one of f F d D.
func javaParseDouble(s string) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if s == "" {
		return 0, false
	}
	body := s
	if body[0] == '+' || body[0] == '-' {
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(body); n > 0 && strings.IndexByte("fFdD", body[n-1]) >= 0 {
		body, s = body[:n-1], s[:len(s)-1]
	}
	var ok bool
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		ok = hexFloat(body[2:])
	} else {
		ok = decFloat(body)
	}
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
			return f, true // ±Inf or 0, as Java rounds
		}
		return 0, false
	}
	return f, true
}

// decFloat checks digits [. digits] [e [sign] digits] with a digit
// somewhere before the exponent.
func decFloat(s string) bool {
	i, mant := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, mant = i+1, mant+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, mant = i+1, mant+1
		}
	}
	if mant == 0 {
		return false
	}
	return exponentOK(s[i:], 'e', 'E')
}

// hexFloat checks hexdigits [. hexdigits] p [sign] digits.
func hexFloat(s string) bool {
	isHex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	i, mant := 0, 0
	for i < len(s) && isHex(s[i]) {
		i, mant = i+1, mant+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHex(s[i]) {
			i, mant = i+1, mant+1
		}
	}
	if mant == 0 || i == len(s) {
		return false // Java requires the binary exponent
	}
	return exponentOK(s[i:], 'p', 'P')
}

// exponentOK: s is empty (for 'e' only) or an exponent marker, an
// optional sign and at least one digit.
func exponentOK(s string, lo, up byte) bool {
	if s == "" {
		return lo == 'e'
	}
	if s[0] != lo && s[0] != up {
		return false
	}
	s = s[1:]
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
