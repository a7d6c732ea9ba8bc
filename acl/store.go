package acl

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultReloadInterval is how often a Store looks at its file.
const DefaultReloadInterval = time.Second

// Store holds the accounts file's current Config and reloads it when the
// file changes (its size, modification time or inode). A file that no
// longer parses keeps the previous Config and is logged; so is one that
// disappears. The poll goroutine is woken only by its ticker and owns the
// file's last seen state; Config may be called from any goroutine.
type Store struct {
	path string
	log  *slog.Logger
	cur  atomic.Pointer[Config]

	mu struct {
		sync.Mutex
		seen    fileStamp
		data    []byte // the contents cur was parsed from
		lastErr string
	}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

// Open loads path (an error when it cannot be read or parsed: ACL on with
// no valid file refuses to start) and, when interval > 0, polls it every
// interval.
func Open(path string, interval time.Duration, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &Store{path: path, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := s.Reload(); err != nil {
		return nil, err
	}
	if interval > 0 {
		go s.poll(interval)
	} else {
		close(s.done)
	}
	return s, nil
}

// NewStatic is a Store over a fixed Config (tests, embedded use).
func NewStatic(c *Config) *Store {
	s := &Store{log: slog.Default(), stop: make(chan struct{}), done: make(chan struct{})}
	s.cur.Store(c)
	close(s.done)
	return s
}

// Config is the current accounts.
func (s *Store) Config() *Config { return s.cur.Load() }

// Path is the file the Store reads ("" for a static one).
func (s *Store) Path() string { return s.path }

// Reload reads the file now if it changed since the last look; it reports
// whether a new Config took effect. On an error the previous Config stays.
func (s *Store) Reload() (bool, error) {
	if s.path == "" {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fi, err := os.Stat(s.path)
	if err != nil {
		return false, s.failedLocked(fmt.Errorf("acl file %s: %w", s.path, err))
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
	if st == s.mu.seen && s.cur.Load() != nil {
		return false, nil
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return false, s.failedLocked(fmt.Errorf("acl file %s: %w", s.path, err))
	}
	s.mu.seen = st
	if s.cur.Load() != nil && bytes.Equal(data, s.mu.data) {
		return false, nil
	}
	c, err := Parse(data)
	if err != nil {
		return false, s.failedLocked(fmt.Errorf("%s: %w", s.path, err))
	}
	first := s.cur.Load() == nil
	s.cur.Store(c)
	s.mu.data = data
	s.mu.lastErr = ""
	if !first {
		s.log.Info("acl: accounts file reloaded", "path", s.path, "accounts", len(c.Accounts))
	}
	return true, nil
}

// failedLocked logs a failed reload once per distinct error (the poll
// would otherwise log it every interval) and returns it.
func (s *Store) failedLocked(err error) error {
	if s.cur.Load() != nil && err.Error() != s.mu.lastErr {
		s.log.Error("acl: accounts file not reloaded; keeping the previous accounts", "err", err)
	}
	s.mu.lastErr = err.Error()
	return err
}

func (s *Store) poll(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_, _ = s.Reload()
		}
	}
}

// Close stops the polling.
func (s *Store) Close() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}
