// Package sql92 compiles and evaluates RocketMQ's SQL92 message selectors
// (consumer.MessageSelector{Type: SQL92}), with the semantics of RocketMQ's
// filter module (SelectorParser.jj and the expression classes, a JMS
// selector subset): what a missing property, a type mismatch or an
// evaluation error does is what RocketMQ does, because a consumer group
// moving between RocketMQ and Samsa must get the same messages.
//
// # Grammar
//
//	selector   = or
//	or         = and { OR and }
//	and        = equality { AND equality }
//	equality   = comparison { "=" comparison | "<>" comparison | IS NULL | IS NOT NULL }
//	comparison = unary { (">" | ">=" | "<" | "<=") unary
//	                   | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string
//	                   | [NOT] BETWEEN unary AND unary
//	                   | [NOT] IN "(" string { "," string } ")" }
//	unary      = "+" unary | "-" unary | NOT unary | primary
//	primary    = literal | identifier | "(" or ")"
//	literal    = 'string' | decimal | float | TRUE | FALSE | NULL
//
// Keywords are case-insensitive. Identifiers are [A-Za-z_$][A-Za-z0-9_$]*
// (no dots). Strings are in single quotes, a quote inside written twice.
// Decimals that fit 32 bits are Java Integers, others Longs (an L suffix
// is allowed); floats are Doubles. -- comments run to a line end, /* */ comments
// anywhere. As in RocketMQ, nothing checks for the end of the input: the
// parse stops at the first token that continues nothing ("a = 1 b" is
// "a = 1"), and NOT binds tighter than a comparison ("NOT a > 1" is an
// error: write NOT (a > 1)).
//
// # Semantics (RocketMQ's, to the letter)
//
// Property values are strings; a property that is absent (or has an empty
// value: RocketMQ's decoding drops those) is NULL. Comparing a string
// with a number converts the string with Java's Integer.valueOf,
// Long.valueOf or Double.valueOf, after the number's type; a string that
// does not convert is an evaluation error, and an error anywhere makes the
// message not match. >, >=, <, <= of two strings compare them as Doubles.
// Logic is three-valued (NULL AND FALSE is FALSE, NULL OR TRUE is TRUE,
// otherwise NULL wins); a message matches only when the result is TRUE.
// CONTAINS, STARTSWITH, ENDSWITH and their NOT forms are FALSE on NULL and
// on an empty search string. IN is NULL on NULL. A bare property used as a
// condition is FALSE when present (a string is not a boolean) and NULL
// when absent. Compile-time checks follow RocketMQ: no NULL in = or <>,
// only numbers and non-boolean expressions in >, >=, <, <=, BETWEEN
// bounds in order, IN on a property only, a float literal of 0 or out of
// range refused (RocketMQ's createFloat compares with Double.MIN_VALUE).
//
// An Expr is immutable and safe for concurrent use; Match allocates
// nothing for expressions naming up to 8 properties.
package sql92

import "fmt"

// tokKind is a token's kind.
type tokKind uint8

const (
	tEOF tokKind = iota
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tContains
	tStartsWith
	tEndsWith
	tDecimal
	tFloat
	tString
	tID
	tEq // =
	tNe // <>
	tGt // >
	tGe // >=
	tLt // <
	tLe // <=
	tLParen
	tComma
	tRParen
	tPlus
	tMinus
)

var keywords = map[string]tokKind{
	"NOT": tNot, "AND": tAnd, "OR": tOr, "BETWEEN": tBetween, "IN": tIn, "TRUE": tTrue, "FALSE": tFalse,
	"NULL": tNull, "IS": tIs, "CONTAINS": tContains, "STARTSWITH": tStartsWith, "ENDSWITH": tEndsWith,
}

type token struct {
	kind tokKind
	text string // the image (decimal, float, id); the decoded value (string)
	pos  int
}

// lexer cuts tokens one at a time, when the parser asks (as JavaCC's
// token manager does): a lexical error past the point where the parse
// stops is never seen, in RocketMQ or here.
type lexer struct {
	src string
	pos int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}
func isIDPart(c byte) bool { return isIDStart(c) || isDigit(c) }

// skip passes white space and comments. A "--" comment needs its line
// end (RocketMQ's LINE_COMMENT): at the end of the input "--" is two
// minus signs.
func (l *lexer) skip() error {
	s := l.src
	for l.pos < len(s) {
		c := s[l.pos]
		switch {
		case isSpace(c):
			l.pos++
		case c == '-' && l.pos+1 < len(s) && s[l.pos+1] == '-':
			i := l.pos + 2
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
			if i == len(s) {
				return nil
			}
			l.pos = i + 1
		case c == '/' && l.pos+1 < len(s) && s[l.pos+1] == '*':
			end := -1
			for i := l.pos + 2; i+1 < len(s); i++ {
				if s[i] == '*' && s[i+1] == '/' {
					end = i + 2
					break
				}
			}
			if end < 0 {
				return fmt.Errorf("unterminated comment at %d", l.pos)
			}
			l.pos = end
		default:
			return nil
		}
	}
	return nil
}

// next cuts the next token.
func (l *lexer) next() (token, error) {
	if err := l.skip(); err != nil {
		return token{}, err
	}
	s, start := l.src, l.pos
	if start == len(s) {
		return token{kind: tEOF, pos: start}, nil
	}
	c := s[start]
	op := func(k tokKind, n int) (token, error) {
		l.pos += n
		return token{kind: k, text: s[start:l.pos], pos: start}, nil
	}
	switch {
	case c == '=':
		return op(tEq, 1)
	case c == '<' && start+1 < len(s) && s[start+1] == '>':
		return op(tNe, 2)
	case c == '<' && start+1 < len(s) && s[start+1] == '=':
		return op(tLe, 2)
	case c == '<':
		return op(tLt, 1)
	case c == '>' && start+1 < len(s) && s[start+1] == '=':
		return op(tGe, 2)
	case c == '>':
		return op(tGt, 1)
	case c == '(':
		return op(tLParen, 1)
	case c == ')':
		return op(tRParen, 1)
	case c == ',':
		return op(tComma, 1)
	case c == '+':
		return op(tPlus, 1)
	case c == '-':
		return op(tMinus, 1)
	case c == '\'':
		return l.str()
	case isDigit(c) || c == '.':
		return l.number()
	case isIDStart(c):
		i := start + 1
		for i < len(s) && isIDPart(s[i]) {
			i++
		}
		l.pos = i
		word := s[start:i]
		if k, ok := keywords[upperASCII(word)]; ok {
			return token{kind: k, text: word, pos: start}, nil
		}
		return token{kind: tID, text: word, pos: start}, nil
	}
	return token{}, fmt.Errorf("lexical error at %d: unexpected %q", start, rune(c))
}

func upperASCII(s string) string {
	if len(s) > 10 {
		return s // longer than any keyword
	}
	var b [10]byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		b[i] = c
	}
	return string(b[:len(s)])
}

// str cuts a string literal: a quote, then characters or doubled quotes,
// then a quote. As JavaCC's longest match, an unterminated literal falls
// back to the longest complete one it began with: three quotes are an
// empty string and a quote.
func (l *lexer) str() (token, error) {
	s, start := l.src, l.pos
	var out []byte
	acceptEnd, acceptLen := -1, 0 // where the last complete literal ended, and its value's length
	for i := start + 1; i < len(s); i++ {
		if s[i] != '\'' {
			out = append(out, s[i])
			continue
		}
		acceptEnd, acceptLen = i+1, len(out)
		if i+1 < len(s) && s[i+1] == '\'' {
			out = append(out, '\'')
			i++
			continue
		}
		break
	}
	if acceptEnd < 0 {
		return token{}, fmt.Errorf("lexical error at %d: unterminated string", start)
	}
	l.pos = acceptEnd
	return token{kind: tString, text: string(out[:acceptLen]), pos: start}, nil
}

// number cuts the longest decimal or floating-point literal (JavaCC's
// longest match): "0" alone or [1-9][0-9]*[lL]?; a float is digits "."
// digits? exponent?, "." digits exponent?, or digits exponent.
func (l *lexer) number() (token, error) {
	s, start := l.src, l.pos
	digits := func(i int) int {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i
	}
	exponent := func(i int) int { // end of an exponent at i, or i
		j := i
		if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
			j++
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if k := digits(j); k > j {
				return k
			}
		}
		return i
	}
	// The longest float match.
	floatEnd := -1
	if s[start] == '.' {
		if k := digits(start + 1); k > start+1 {
			floatEnd = exponent(k)
		}
	} else {
		k := digits(start)
		if k < len(s) && s[k] == '.' {
			floatEnd = exponent(digits(k + 1))
		} else if e := exponent(k); e > k {
			floatEnd = e
		}
	}
	// The longest decimal match.
	decEnd := -1
	switch {
	case s[start] == '0':
		decEnd = start + 1
	case isDigit(s[start]):
		decEnd = digits(start)
		if decEnd < len(s) && (s[decEnd] == 'l' || s[decEnd] == 'L') {
			decEnd++
		}
	}
	switch {
	case floatEnd > decEnd:
		l.pos = floatEnd
		return token{kind: tFloat, text: s[start:floatEnd], pos: start}, nil
	case decEnd > 0:
		l.pos = decEnd
		return token{kind: tDecimal, text: s[start:decEnd], pos: start}, nil
	}
	return token{}, fmt.Errorf("lexical error at %d: unexpected %q", start, s[start])
}
