package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
)

// The quarantine is the list of corrupt records reads have found, kept in
// Dir/quarantine.json so a restart does not read them again:
//
//	{"version": 1, "records": [QuarantineEntry, ...]}  ordered by physOffset
//
// It is rewritten whole through writeFileAtomic (temp file, fsync, rename,
// fsync of the directory) each time a record joins it, which is rare: once
// per corrupt record. It is read once, before the first read or
// Quarantined call after Open (lazily: nothing in Open's path waits on it).
// A missing file is an empty quarantine; an unreadable or undecodable one
// is logged and ignored (the store starts with an empty quarantine and
// rewrites the file at the next find): the quarantine only saves re-reads,
// every read checks its records anyway, so losing it loses nothing.
// Entries whose record retention deleted are dropped at load and at the
// next rewrite.

// QuarantineEntry is one corrupt record the store found and will not
// serve.
type QuarantineEntry struct {
	Topic       string `json:"topic"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
	PhysOffset  int64  `json:"physOffset"`
	// Size is the record's size as its ConsumeQueue entry gives it.
	Size int32 `json:"size"`
	// Reason is what failed (the check's error).
	Reason string `json:"reason"`
	// FoundMs is when the read found it (ms, the store's clock).
	FoundMs int64 `json:"foundMs"`
}

type quarantineFile struct {
	Version int               `json:"version"`
	Records []QuarantineEntry `json:"records"`
}

const quarantineVersion = 1

// quarantine is the in-memory list. Safe for concurrent use; reads look it
// up for every record they pick, so the common case (empty) costs one
// atomic load.
type quarantine struct {
	loaded sync.Once
	n      atomic.Int64 // len(mu.byPhys)
	mu     struct {
		sync.Mutex
		byPhys map[int64]quarantined
	}
}

// quarantined is one entry with the error that put it there (nil for an
// entry loaded from the file).
type quarantined struct {
	QuarantineEntry
	err error
}

func (s *Store) quarantinePath() string { return filepath.Join(s.dir, "quarantine.json") }

// quarantine returns the store's quarantine, loading the file first if no
// one has yet.
func (s *Store) quarantine() *quarantine {
	q := &s.m.quarantine
	q.loaded.Do(func() { s.loadQuarantine(q) })
	return q
}

// loadQuarantine reads the file into q. It never fails: a bad file is
// logged and ignored.
func (s *Store) loadQuarantine(q *quarantine) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.byPhys = make(map[int64]quarantined)
	p := s.quarantinePath()
	b, err := readFile(s.fs, p)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var f quarantineFile
	if err == nil {
		if err = json.Unmarshal(b, &f); err == nil && f.Version != quarantineVersion {
			err = fmt.Errorf("version %d, want %d", f.Version, quarantineVersion)
		}
	}
	if err != nil {
		s.log.Error("storage: quarantine file unreadable; starting with an empty quarantine (reads still check every record)",
			"file", p, "err", err)
		return
	}
	minOff := s.CommitLogMinOffset()
	for _, e := range f.Records {
		if e.PhysOffset >= minOff {
			q.mu.byPhys[e.PhysOffset] = quarantined{QuarantineEntry: e}
		}
	}
	q.n.Store(int64(len(q.mu.byPhys)))
	if len(q.mu.byPhys) > 0 {
		s.log.Warn("storage: quarantined records loaded; reads skip them", "file", p, "records", len(q.mu.byPhys))
	}
}

// lookup returns the entry of the record at phys, if quarantined.
func (q *quarantine) lookup(phys int64) (quarantined, bool) {
	if q.n.Load() == 0 {
		return quarantined{}, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.mu.byPhys[phys]
	return e, ok
}

// addQuarantine puts e, found failing with err, in the quarantine and
// rewrites the file; false if it was there already (another read found it
// first). A failed write is logged: the entry stays in memory.
func (s *Store) addQuarantine(e QuarantineEntry, err error) bool {
	q := s.quarantine()
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.mu.byPhys[e.PhysOffset]; ok {
		return false
	}
	q.mu.byPhys[e.PhysOffset] = quarantined{QuarantineEntry: e, err: err}
	minOff := s.CommitLogMinOffset()
	f := quarantineFile{Version: quarantineVersion}
	for p, x := range q.mu.byPhys {
		if p < minOff {
			delete(q.mu.byPhys, p) // retention deleted it
			continue
		}
		f.Records = append(f.Records, x.QuarantineEntry)
	}
	q.n.Store(int64(len(q.mu.byPhys)))
	sort.Slice(f.Records, func(i, j int) bool { return f.Records[i].PhysOffset < f.Records[j].PhysOffset })
	b, werr := json.MarshalIndent(f, "", "  ")
	if werr == nil {
		werr = s.writeFileAtomic(s.quarantinePath(), b)
	}
	if werr != nil {
		s.log.Error("storage: could not write the quarantine file; the record stays quarantined until restart",
			"file", s.quarantinePath(), "err", werr)
	}
	return true
}

// Quarantined returns the corrupt records the store has found (in this run
// or, through Dir/quarantine.json, an earlier one) and no longer serves,
// ordered by physical offset.
func (s *Store) Quarantined() []QuarantineEntry {
	q := s.quarantine()
	q.mu.Lock()
	out := make([]QuarantineEntry, 0, len(q.mu.byPhys))
	for _, e := range q.mu.byPhys {
		out = append(out, e.QuarantineEntry)
	}
	q.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].PhysOffset < out[j].PhysOffset })
	return out
}
