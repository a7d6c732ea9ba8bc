package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// OffsetStore keeps a consumer group's committed offsets: the offset of
// the next message to consume in each queue. A push consumer reads a
// queue's offset when it takes the queue and commits every
// CommitInterval, when it gives a queue up and on Close. Implementations
// must be safe for concurrent use.
type OffsetStore interface {
	// Read returns the committed offset of q, or an error matching
	// ErrNoOffset when none was ever committed.
	Read(ctx context.Context, q MessageQueue) (int64, error)
	// Commit stores the given offsets; queues not named keep theirs.
	Commit(ctx context.Context, offsets map[MessageQueue]int64) error
}

// FileOffsetStore keeps offsets in one JSON file, rewritten atomically on
// every Commit (temporary file, fsync, rename, fsync of the directory): a
// crash leaves the old file or the new, never a torn one. It is the
// broadcasting consumer's default: each member tracks its own progress.
// Safe for concurrent use within one process; two processes must not
// share a file.
type FileOffsetStore struct {
	path string

	mu struct {
		sync.Mutex
		loaded  bool
		offsets map[MessageQueue]int64
	}
}

// NewFileOffsetStore returns a store keeping its offsets in path (created
// with its directory on the first Commit).
func NewFileOffsetStore(path string) *FileOffsetStore {
	return &FileOffsetStore{path: path}
}

// Path returns the file the store writes.
func (s *FileOffsetStore) Path() string { return s.path }

// fileOffsets is the file's format.
type fileOffsets struct {
	Offsets []fileOffset `json:"offsets"`
}

type fileOffset struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	Offset     int64  `json:"offset"`
}

// loadLocked reads the file once.
func (s *FileOffsetStore) loadLocked() error {
	if s.mu.loaded {
		return nil
	}
	s.mu.offsets = map[MessageQueue]int64{}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		s.mu.loaded = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	var f fileOffsets
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("client: offset file %s: %w", s.path, err)
	}
	for _, o := range f.Offsets {
		s.mu.offsets[MessageQueue{o.Topic, o.BrokerName, o.QueueID}] = o.Offset
	}
	s.mu.loaded = true
	return nil
}

// Read implements OffsetStore.
func (s *FileOffsetStore) Read(_ context.Context, q MessageQueue) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return 0, err
	}
	off, ok := s.mu.offsets[q]
	if !ok {
		return 0, fmt.Errorf("%w for %v in %s", ErrNoOffset, q, s.path)
	}
	return off, nil
}

// Commit implements OffsetStore: merges offsets and rewrites the file.
func (s *FileOffsetStore) Commit(_ context.Context, offsets map[MessageQueue]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return err
	}
	changed := false
	for q, off := range offsets {
		if old, ok := s.mu.offsets[q]; !ok || old != off {
			s.mu.offsets[q] = off
			changed = true
		}
	}
	if !changed {
		return nil
	}
	qs := make([]MessageQueue, 0, len(s.mu.offsets))
	for q := range s.mu.offsets {
		qs = append(qs, q)
	}
	SortQueues(qs)
	f := fileOffsets{Offsets: make([]fileOffset, len(qs))}
	for i, q := range qs {
		f.Offsets[i] = fileOffset{q.Topic, q.BrokerName, q.QueueID, s.mu.offsets[q]}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.path, append(b, '\n'))
}

// writeFileAtomic replaces path with data: temp file in the same
// directory, fsync, rename, fsync of the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close() // abandoned: the error above is the one reported
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	ok = true
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("client: offset file: fsync %s: %w", dir, err)
	}
	return nil
}

// MemoryOffsetStore keeps offsets in memory only: for tests, and for
// consumers that always start from a fixed position.
type MemoryOffsetStore struct {
	mu struct {
		sync.Mutex
		offsets map[MessageQueue]int64
	}
}

// Read implements OffsetStore.
func (s *MemoryOffsetStore) Read(_ context.Context, q MessageQueue) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off, ok := s.mu.offsets[q]
	if !ok {
		return 0, fmt.Errorf("%w for %v", ErrNoOffset, q)
	}
	return off, nil
}

// Commit implements OffsetStore.
func (s *MemoryOffsetStore) Commit(_ context.Context, offsets map[MessageQueue]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.offsets == nil {
		s.mu.offsets = map[MessageQueue]int64{}
	}
	for q, o := range offsets {
		s.mu.offsets[q] = o
	}
	return nil
}
