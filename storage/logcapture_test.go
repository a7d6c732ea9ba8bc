package storage

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// logCapture is a slog.Handler that keeps every record, for tests that
// assert what the store said (and at which level).
type logCapture struct {
	mu   *sync.Mutex
	recs *[]capturedLog
}

type capturedLog struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func newLogCapture() (*slog.Logger, logCapture) {
	c := logCapture{mu: new(sync.Mutex), recs: new([]capturedLog)}
	return slog.New(c), c
}

func (c logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c logCapture) WithGroup(string) slog.Handler            { return c }

func (c logCapture) Handle(_ context.Context, r slog.Record) error {
	l := capturedLog{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	*c.recs = append(*c.recs, l)
	c.mu.Unlock()
	return nil
}

// atLeast returns the records at level or above.
func (c logCapture) atLeast(level slog.Level) []capturedLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []capturedLog
	for _, l := range *c.recs {
		if l.level >= level {
			out = append(out, l)
		}
	}
	return out
}

// find returns the first record whose message contains sub.
func (c logCapture) find(sub string) (capturedLog, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range *c.recs {
		if strings.Contains(l.msg, sub) {
			return l, true
		}
	}
	return capturedLog{}, false
}

func (l capturedLog) String() string { return fmt.Sprintf("%v %q %v", l.level, l.msg, l.attrs) }
