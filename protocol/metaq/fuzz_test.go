package metaq

import (
	"errors"
	"testing"
)

// FuzzParse: any line parses or is refused with an *Error, never panics,
// and what it accepts stays inside the limits.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"put t 0 5 0 7\r\n", "put t -1 5 1 123 TX:a 7", "get t g 0 0 1024 1", "offset t g 0 5 2",
		"transaction TX:1 s BEGIN 30 q 5", "stats topics 3", "version 1", "quit", "auth a b", "put t 0 -1 0 1", "get t g 0 0 -5 1"} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxValue: 1 << 20, MaxGetSize: 1 << 20}
	f.Fuzz(func(t *testing.T, line []byte) {
		c, err := Parse(line, lim)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) && !errors.Is(err, ErrEmpty) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if e != nil && (e.ValueLen < -1 || e.ValueLen > lim.MaxValue) {
				t.Fatalf("error's value length %d out of bounds", e.ValueLen)
			}
			return
		}
		switch c.Kind {
		case Put:
			if c.ValueLen < 0 || c.ValueLen > lim.MaxValue || c.Partition < -1 || !c.HasOpaque {
				t.Fatalf("accepted put %+v", c)
			}
		case Get:
			if c.MaxSize <= 0 || c.MaxSize > lim.MaxGetSize || c.Offset < 0 || c.Partition < 0 {
				t.Fatalf("accepted get %+v", c)
			}
		}
	})
}

// FuzzDecodeSet: any bytes decode or fail cleanly, and what decodes
// re-encodes to the same bytes.
func FuzzDecodeSet(f *testing.F) {
	f.Add(AppendMessage(AppendMessage(nil, 1, 0, false, nil, []byte("a")), 2, 1, true, []byte("x"), []byte("b")))
	f.Fuzz(func(t *testing.T, set []byte) {
		msgs, used, err := DecodeSet(set)
		if used > len(set) {
			t.Fatalf("used %d of %d", used, len(set))
		}
		if err != nil {
			return
		}
		var out []byte
		for _, m := range msgs {
			out = AppendMessage(out, m.ID, m.Flag, m.HasAttr, m.Attr, m.Payload)
		}
		if string(out) != string(set[:used]) {
			t.Fatalf("re-encoded %x, want %x", out, set[:used])
		}
	})
}
