package record

import (
	"errors"
	"testing"
)

func TestEncodeParseProperties(t *testing.T) {
	m := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ABC"}
	b, err := EncodeProperties(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01ABC\x02" {
		t.Fatalf("encoded %q", b)
	}
	got := ParseProperties(b)
	if len(got) != 3 || got["TAGS"] != "TagA" || got["KEYS"] != "k1 k2" {
		t.Fatalf("parsed %q", got)
	}
	if v, ok := LookupProperty(b, "UNIQ_KEY"); !ok || string(v) != "ABC" {
		t.Fatalf("lookup %q %v", v, ok)
	}
	if _, ok := LookupProperty(b, "NOPE"); ok {
		t.Fatal("found a missing property")
	}
	if _, err := EncodeProperties(map[string]string{"a\x01": "b"}); !errors.Is(err, ErrPropertySeparator) {
		t.Fatalf("separator in name: %v", err)
	}
	if _, err := EncodeProperties(map[string]string{"a": "b\x02"}); !errors.Is(err, ErrPropertySeparator) {
		t.Fatalf("separator in value: %v", err)
	}
	if _, err := EncodeProperties(map[string]string{"": "b"}); err == nil {
		t.Fatal("empty name accepted")
	}
}

func TestParseLenientLikeRocketMQ(t *testing.T) {
	// Pieces without a name, a value or a 0x01 are skipped; no trailing
	// separator is fine; a later duplicate wins.
	b := []byte("\x01v\x02k\x01\x02novalue\x02a\x011\x02a\x012\x02last\x01x")
	got := ParseProperties(b)
	if len(got) != 2 || got["a"] != "2" || got["last"] != "x" {
		t.Fatalf("parsed %q", got)
	}
	if len(ParseProperties(nil)) != 0 {
		t.Fatal("nil properties gave pairs")
	}
}

func TestAppendProperty(t *testing.T) {
	var b []byte
	b = AppendProperty(b, "TAGS", "x")
	b = AppendProperty(b, "DELAY", "3")
	if string(b) != "TAGS\x01x\x02DELAY\x013\x02" {
		t.Fatalf("%q", b)
	}
	if !ValidProperty("a", "b") || ValidProperty("a", "\x01") {
		t.Fatal("ValidProperty")
	}
}

func TestTagsCodeJavaHashCode(t *testing.T) {
	cases := []struct {
		s    string
		want int64
	}{
		{"", 0},
		{"TagA", 2598919},
		{"hello", 99162322},
		{"polygenelubricants", -2147483648}, // Java's famous Integer.MIN_VALUE hash
		{"é", 233},
		{"\U0001F600", 0xD83D*31 + 0xDE00}, // a surrogate pair: two UTF-16 units
		{"TagA || TagB", int64(javaRef("TagA || TagB"))},
	}
	for _, c := range cases {
		if got := TagsCode(c.s); got != c.want {
			t.Errorf("TagsCode(%q) = %d, want %d", c.s, got, c.want)
		}
		if got := TagsCodeBytes([]byte(c.s)); got != c.want {
			t.Errorf("TagsCodeBytes(%q) = %d, want %d", c.s, got, c.want)
		}
	}
	if TagsCodeOf([]byte("KEYS\x01k\x02TAGS\x01TagA\x02")) != 2598919 || TagsCodeOf([]byte("KEYS\x01k\x02")) != 0 {
		t.Fatal("TagsCodeOf")
	}
}

// javaRef is the textbook definition over UTF-16 units (ASCII here).
func javaRef(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		h = 31*h + int32(s[i])
	}
	return h
}
