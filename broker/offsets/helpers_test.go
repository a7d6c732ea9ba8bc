package offsets

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

const configDir = "/s/config"

// start is where the fake clock starts.
var start = time.UnixMilli(1_700_000_000_000)

// fakeStore is a Store of queues given by hand: each a first offset and
// the store time (Unix ms) of each message from there.
type fakeStore struct {
	mu     sync.Mutex
	queues map[qref]fakeQueue
}

type qref struct {
	topic string
	queue int32
}

type fakeQueue struct {
	min   int64
	times []int64
}

func (s *fakeStore) set(topic string, queue int32, q fakeQueue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[qref{topic, queue}] = q
}

func (s *fakeStore) get(topic string, queue int32) fakeQueue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues[qref{topic, queue}]
}

func (s *fakeStore) MinQueueOffset(topic string, queue int32) int64 { return s.get(topic, queue).min }

func (s *fakeStore) MaxQueueOffset(topic string, queue int32) int64 {
	q := s.get(topic, queue)
	return q.min + int64(len(q.times))
}

func (s *fakeStore) EarliestStoreTime(topic string, queue int32) (int64, error) {
	q := s.get(topic, queue)
	if len(q.times) == 0 {
		return 0, errors.New("empty queue")
	}
	return q.times[0], nil
}

// OffsetByTime is storage.Store's: the first offset stored at or after
// unixMs, the max offset when none is.
func (s *fakeStore) OffsetByTime(topic string, queue int32, unixMs int64) int64 {
	q := s.get(topic, queue)
	for i, ts := range q.times {
		if ts >= unixMs {
			return q.min + int64(i)
		}
	}
	return q.min + int64(len(q.times))
}

// logs keeps what a Table logged, one line a record, without the time.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// take returns the lines logged since the last take.
func (l *logs) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.buf.String())
	l.buf.Reset()
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func (l *logs) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// rig is a Table on a crashable in-memory file system, over a fake store,
// with the groups' births given by hand.
type rig struct {
	t        *testing.T
	fs       *vfs.MemFS
	st       *fakeStore
	logs     logs
	setAside atomic.Int64
	rng      *rand.Rand
	slave    bool
	maxBytes int
	tbl      *Table

	mu   sync.Mutex
	born map[string]time.Time
	now  time.Time // the set-aside files' stamps
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, fs: vfs.NewMem(), st: &fakeStore{queues: map[qref]fakeQueue{}}, rng: rand.New(rand.NewSource(1)),
		born: map[string]time.Time{}, now: start}
	r.open()
	return r
}

// open makes a Table on the disk as it is now, which loads the file.
func (r *rig) open() {
	r.t.Helper()
	cfg := Config{FS: r.fs, ConfigDir: configDir, Store: r.st, Born: r.bornOf, CheckNames: checkNames,
		MaxBytes: r.maxBytes, Now: r.clock, Logger: r.logs.logger(), FilesSetAside: &r.setAside}
	if r.slave {
		cfg.Slave = func() bool { return true }
	}
	tbl, err := Open(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.tbl = tbl
}

func (r *rig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *rig) bornOf(group string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.born[group]
	return at, ok
}

// checkNames is a short form of the broker's ValidateTopic and
// ValidateGroup: no empty name, no space.
func checkNames(topic, group string) error {
	for _, n := range []string{topic, group} {
		if n == "" || strings.ContainsAny(n, " @") {
			return fmt.Errorf("bad name %q", n)
		}
	}
	return nil
}

// file returns consumerOffset.json as on disk.
func (r *rig) file() (string, bool) {
	b, found, err := r.tbl.file.Read()
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b), found
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }
