package sql92

import "testing"

// FuzzCompile: no input panics the parser or the evaluation of what it
// accepts, and compiling is deterministic.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"a > 5 AND TAGS IN ('red', 'blue')", "a BETWEEN 1 AND 10 OR b IS NOT NULL", "NOT (a CONTAINS 'x')",
		"a = 'it''s' -- c\n", "x NOT STARTSWITH 'p' AND y ENDSWITH 'q'", "-a < +5.5e3", "/* */ a = TRUE",
		"a NOT IN ('1','2','3','4','5')", "(a = 1) = FALSE", "a > b", "1 = 1", "a = 1 b #",
	} {
		f.Add(s, []byte("a\x0110\x02b\x01x\x02TAGS\x01red\x02"))
	}
	f.Fuzz(func(t *testing.T, src string, props []byte) {
		e, err := Compile(src)
		e2, err2 := Compile(src)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Compile(%q) not deterministic: %v / %v", src, err, err2)
		}
		if err != nil {
			return
		}
		if e.Match(props) != e2.Match(props) {
			t.Fatalf("%q: Match not deterministic", src)
		}
	})
}
