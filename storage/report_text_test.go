package storage

import (
	"errors"
	"io"
	"strings"
	"testing"
)

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// WriteText hands back the writer's error (a full disk under a redirected
// report, a closed pipe) instead of dropping it, and writes the whole
// report when the writer takes it.
func TestReportWriteTextErrors(t *testing.T) {
	boom := errors.New("boom")
	v := VerifyReport{Dir: "d", Problems: []VerifyProblem{{Severity: SevCorrupt, File: "f", Offset: 7, What: "bad"}}, Corruptions: 1}
	rp := RepairReport{Dir: "d", Needed: true, Actions: []string{"cut the log at 7"}}
	for _, c := range []struct {
		name string
		fn   func(w io.Writer) error
		want string
	}{
		{"verify", func(w io.Writer) error { return v.WriteText(w) }, "CORRUPT: 1 problems"},
		{"repair", func(w io.Writer) error { return rp.WriteText(w) }, "  - cut the log at 7\n"},
	} {
		if err := c.fn(failWriter{boom}); !errors.Is(err, boom) {
			t.Errorf("%s: WriteText to a failing writer: %v, want %v", c.name, err, boom)
		}
		var b strings.Builder
		if err := c.fn(&b); err != nil || !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: WriteText: %v, %q (want it to hold %q)", c.name, err, b.String(), c.want)
		}
	}
}
