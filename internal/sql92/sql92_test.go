package sql92

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// props encodes m in the stored form (name\x01value\x02), sorted.
func props(m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	for _, k := range keys {
		b = append(b, k...)
		b = append(b, 1)
		b = append(b, m[k]...)
		b = append(b, 2)
	}
	return b
}

type kv = map[string]string

// TestMatch: each case's expectation is what RocketMQ's filter module
// gives (ComparisonExpression, LogicExpression, UnaryExpression with
// string property values and convertStringExpressions on).
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		expr  string
		props kv
		want  bool
	}{
		// Numbers against string properties: converted after the literal's type.
		{"a > 5", kv{"a": "10"}, true},
		{"a > 5", kv{"a": "3"}, false},
		{"a > 5", kv{}, false},                          // NULL
		{"a > 5", kv{"a": "abc"}, false},                // Integer.valueOf throws
		{"a > 5", kv{"a": "10.5"}, false},               // Integer.valueOf throws
		{"a > 5", kv{"a": "3000000000"}, false},         // out of Integer: throws
		{"a > 3000000000", kv{"a": "4000000000"}, true}, // a Long literal
		{"a > 5", kv{"a": "+7"}, true},
		{"a > -5", kv{"a": "-3"}, true},
		{"a < 5", kv{"a": "\u0663"}, true}, // Character.digit reads ARABIC-INDIC THREE
		{"a > 5.5", kv{"a": "10"}, true},
		{"a > 5.5", kv{"a": " 10 "}, true}, // Double.valueOf trims
		{"a > 5.5", kv{"a": "1e3"}, true},
		{"a > 5.5", kv{"a": "10f"}, true},
		{"a > 5.5", kv{"a": "NaN"}, true}, // Double.compare puts NaN on top
		{"a > 5.5", kv{"a": "0x1p4"}, true},
		{"a > 5.5", kv{"a": "inf"}, false},
		{"a >= 10 AND a <= 10", kv{"a": "10"}, true},
		{"a = 5", kv{"a": "5"}, true},
		{"a = 5", kv{"a": "05"}, true},
		{"a = 5", kv{"a": "5.0"}, false},
		{"a = 5.0", kv{"a": "5"}, true},
		{"a = 2147483648", kv{"a": "2147483648"}, true},
		{"a = 5L", kv{"a": "5"}, true},
		// Strings.
		{"a = 'abc'", kv{"a": "abc"}, true},
		{"a = 'abc'", kv{"a": "ABC"}, false},
		{"a = 'it''s'", kv{"a": "it's"}, true},
		{"a = b", kv{"a": "3.14", "b": "3.14"}, true},
		{"a <> b", kv{"a": "3.14", "b": "3.141"}, true},
		{"a > b", kv{"a": "20", "b": "10"}, true}, // two strings compare as Doubles
		{"a > b", kv{"a": "x", "b": "10"}, false},
		{"a <> 'x'", kv{}, false},
		{"a <> 'x'", kv{"a": "y"}, true},
		// Booleans.
		{"a = TRUE", kv{"a": "true"}, true},
		{"a = TRUE", kv{"a": "TRUE"}, true},
		{"a = FALSE", kv{"a": "yes"}, true}, // Boolean.valueOf("yes") is false
		{"TRUE = (a = 'x')", kv{"a": "x"}, true},
		{"TRUE", kv{}, true},
		{"FALSE", kv{}, false},
		{"NULL", kv{}, false},
		{"a", kv{"a": "true"}, false}, // a string is no Boolean
		{"a", kv{}, false},
		{"NOT a", kv{"a": "x"}, true},
		{"NOT a", kv{}, false},
		{"NOT a = 1", kv{"a": "x"}, false}, // (NOT a) = 1: a Boolean is less than a number
		// NULL.
		{"a IS NULL", kv{}, true},
		{"a IS NULL", kv{"a": ""}, true}, // an empty value is dropped
		{"a IS NULL", kv{"a": "x"}, false},
		{"a IS NOT NULL", kv{"a": "x"}, true},
		{"a IS NOT NULL", kv{}, false},
		{"5 IS NULL", kv{}, false},
		// BETWEEN, IN.
		{"a BETWEEN 1 AND 10", kv{"a": "5"}, true},
		{"a BETWEEN 1 AND 10", kv{"a": "11"}, false},
		{"a BETWEEN 1 AND 10", kv{"a": "x"}, false},
		{"a BETWEEN -1 AND 1", kv{"a": "0"}, true},
		{"a NOT BETWEEN 1 AND 10", kv{"a": "11"}, true},
		{"a NOT BETWEEN 1 AND 10", kv{}, false},
		{"a IN ('x', 'y')", kv{"a": "x"}, true},
		{"a IN ('x', 'y')", kv{}, false},
		{"a NOT IN ('x', 'y')", kv{}, false},
		{"a NOT IN ('x', 'y')", kv{"a": "z"}, true},
		{"a IN ('1','2','3','4','5','6')", kv{"a": "6"}, true},
		{"a NOT IN ('1','2','3','4','5','6')", kv{"a": "6"}, false},
		{"TAGS IN ('red', 'blue') AND KEYS = 'k1'", kv{"TAGS": "red", "KEYS": "k1"}, true},
		// CONTAINS and its kin.
		{"a CONTAINS 'x'", kv{"a": "axb"}, true},
		{"a STARTSWITH 'ax'", kv{"a": "axb"}, true},
		{"a ENDSWITH 'xb'", kv{"a": "axb"}, true},
		{"a NOT CONTAINS 'x'", kv{"a": "ab"}, true},
		{"a NOT CONTAINS 'x'", kv{}, false},
		{"a NOT STARTSWITH 'x'", kv{}, false},
		{"a CONTAINS ''", kv{"a": "ab"}, false},
		{"a NOT ENDSWITH ''", kv{"a": "ab"}, false},
		{"'axb' contains 'x'", kv{}, true},
		// Three-valued logic and errors.
		{"a = 1 OR b = 2", kv{"b": "2"}, true},
		{"a = 1 AND b = 2", kv{"a": "1"}, false},
		{"NOT (a = 1 AND b = 2)", kv{"b": "3"}, true},         // NULL AND FALSE is FALSE
		{"NOT (a = 1 OR b = 2)", kv{"b": "3"}, false},         // NULL OR FALSE is NULL
		{"a = 1 OR b = 'x'", kv{"a": "abc", "b": "x"}, false}, // the left throws
		{"b = 'x' OR a = 1", kv{"a": "abc", "b": "x"}, true},  // the left decides
		{"-a < 0", kv{"a": "5"}, false},                       // -'5' is NULL
		// Syntax RocketMQ takes.
		{"a = 1 b", kv{"a": "1"}, true}, // the parse stops at b
		{"a = 1 -- comment\n AND b = 2", kv{"a": "1", "b": "2"}, true},
		{"a = 1 /* c */ AND b = 2", kv{"a": "1", "b": "2"}, true},
		{"a between 1 and 10 And b is not null", kv{"a": "3", "b": ""}, false},
		{"+a = 1", kv{"a": "1"}, true},
		{"$x_1 = 'v'", kv{"$x_1": "v"}, true},
		{"a = 1 --", kv{"a": "1"}, true}, // "--" without a line end is two minus signs, never read
		{"a = 007", kv{"a": "0"}, true},  // three tokens: 0, 0, 7
		{"a = 007", kv{"a": "7"}, false},
		{"t'''", kv{"t": "x"}, false}, // an unterminated literal falls back to '' and a quote
		{"a = 'x''y'", kv{"a": "x'y"}, true},
	} {
		e, err := Compile(tc.expr)
		if err != nil {
			t.Errorf("Compile(%q): %v", tc.expr, err)
			continue
		}
		if got := e.Match(props(tc.props)); got != tc.want {
			t.Errorf("%q on %v: %v, want %v", tc.expr, tc.props, got, tc.want)
		}
		if got := e.MatchMap(tc.props); got != tc.want {
			t.Errorf("%q on %v (map): %v, want %v", tc.expr, tc.props, got, tc.want)
		}
	}
}

// TestCompileErrors: selectors RocketMQ's SelectorParser refuses.
func TestCompileErrors(t *testing.T) {
	for _, src := range []string{
		"", "   ", "a >", "a = NULL", "NULL = a", "a <> NULL", "a > 'x'", "a > TRUE", "(a = 1) > 2",
		"NOT a > 1", "a BETWEEN 10 AND 1", "a BETWEEN 'a' AND 'b'", "5 IN ('a')", "a IN (1)", "a IN ()",
		"a contains x", "a contains 123", "TRUE = 1", "5", "'abc'", "a AND 5", "a NOT b", "a IS 5",
		"a #", "a = 'unterminated", "a = 99999999999999999999", "a.b = 1", "a = 1 #", "/* open",
		"a > 0.0", "a > 1e400", "a > 1e-400", "a = 1 AND", "(a = 1", "-a", "a BETWEEN NULL AND 1",
		"a NOT", "a IS NOT", "a = é", "007 = 7", "a = 1 'x", "t '",
	} {
		if e, err := Compile(src); err == nil {
			t.Errorf("Compile(%q) = %v, want an error", src, e.root.op)
		} else if !errors.Is(err, ErrSyntax) {
			t.Errorf("Compile(%q): %v does not wrap ErrSyntax", src, err)
		}
	}
	// What RocketMQ never reads is never refused.
	for _, src := range []string{"a = 1 b #", "a = 1 ) é"} {
		if _, err := Compile(src); err != nil {
			t.Errorf("Compile(%q): %v", src, err)
		}
	}
}

func TestProperties(t *testing.T) {
	e, err := Compile("b = 1 AND a = 2 OR b IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(e.Properties()); got != "[b a]" {
		t.Fatalf("properties %s", got)
	}
	// The last of a repeated name wins; items without a value are skipped.
	if !e.Match([]byte("b\x011\x02a\x01x\x02a\x012\x02")) || e.Match([]byte("b\x011\x02a\x012\x02a\x01\x02a\x013")) {
		t.Fatal("repeated properties")
	}
	if !strings.Contains(e.String(), "b IS NULL") {
		t.Fatal(e.String())
	}
}

func TestJavaParse(t *testing.T) {
	for _, tc := range []struct {
		s    string
		bits int
		want int64
		ok   bool
	}{
		{"0", 32, 0, true}, {"-2147483648", 32, -2147483648, true}, {"2147483648", 32, 0, false},
		{"2147483647", 32, 2147483647, true}, {"+", 32, 0, false}, {"-", 64, 0, false}, {"", 64, 0, false},
		{"9223372036854775807", 64, 9223372036854775807, true}, {"-9223372036854775808", 64, -9223372036854775808, true},
		{"9223372036854775808", 64, 0, false}, {"1_000", 64, 0, false}, {" 1", 64, 0, false}, {"\uff11\uff12", 32, 12, true},
	} {
		if got, ok := javaParseInt(tc.s, tc.bits); got != tc.want || ok != tc.ok {
			t.Errorf("javaParseInt(%q, %d) = %d %v", tc.s, tc.bits, got, ok)
		}
	}
	for _, tc := range []struct {
		s  string
		ok bool
	}{
		{"1", true}, {"1.", true}, {".5", true}, {"1e5", true}, {"1E+5", true}, {"1e", false}, {".", false},
		{"e5", false}, {"1.5d", true}, {"1.5F", true}, {"1.5ff", false}, {"-Infinity", true}, {"NaN", true},
		{"nan", false}, {"inf", false}, {"0x1p3", true}, {"0x1", false}, {"0x.8p1", true}, {"1_0", false},
		{"\t 2.5 \n", true}, {"", false}, {"+", false}, {"Infinityd", false},
	} {
		if _, ok := javaParseDouble(tc.s); ok != tc.ok {
			t.Errorf("javaParseDouble(%q): ok %v", tc.s, ok)
		}
	}
}
