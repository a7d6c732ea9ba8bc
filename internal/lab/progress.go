package lab

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Progressf writes a progress line. Progress is best effort, as a
// command's prints to stdout are: a result does not depend on it.
func Progressf(w io.Writer, format string, a ...any) { _, _ = fmt.Fprintf(w, format, a...) }

// Indent is w with every line written to it indented by prefix: a cell's
// or a run's progress under its header.
func Indent(w io.Writer, prefix string) io.Writer { return indentWriter{w, prefix} }

type indentWriter struct {
	w      io.Writer
	prefix string
}

func (p indentWriter) Write(b []byte) (int, error) {
	s := strings.TrimRight(string(b), "\n")
	_, err := io.WriteString(p.w, p.prefix+strings.ReplaceAll(s, "\n", "\n"+p.prefix)+"\n")
	return len(b), err
}

// Sleep waits d, or until ctx ends (its error). d <= 0 waits not at
// all.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
