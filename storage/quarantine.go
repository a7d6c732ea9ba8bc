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
// per corrupt record, on the goroutine of the read that found it (which
// thus waits for two fsyncs, once). It is read once, before the first read or
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
// up for every record they pick, without a lock: the map is replaced
// whole when an entry joins, never changed in place.
type quarantine struct {
	loaded sync.Once
	byPhys atomic.Pointer[map[int64]quarantined] // set by loadQuarantine
	mu     sync.Mutex                            // one join (and file rewrite) at a time
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
	m := make(map[int64]quarantined)
	defer q.byPhys.Store(&m)
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
			m[e.PhysOffset] = quarantined{QuarantineEntry: e}
		}
	}
	if len(m) > 0 {
		s.log.Warn("storage: quarantined records loaded; reads skip them", "file", p, "records", len(m))
	}
}

// lookup returns the entry of the record at phys, if quarantined.
func (q *quarantine) lookup(phys int64) (quarantined, bool) {
	m := *q.byPhys.Load()
	if len(m) == 0 {
		return quarantined{}, false
	}
	e, ok := m[phys]
	return e, ok
}

// len returns the entries.
func (q *quarantine) len() int { return len(*q.byPhys.Load()) }

// addQuarantine puts e, found failing with err, in the quarantine and
// rewrites the file; false if it was there already (another read found it
// first). A failed write is logged: the entry stays in memory.
func (s *Store) addQuarantine(e QuarantineEntry, err error) bool {
	q := s.quarantine()
	q.mu.Lock()
	defer q.mu.Unlock()
	old := *q.byPhys.Load()
	if _, ok := old[e.PhysOffset]; ok {
		return false
	}
	minOff := s.CommitLogMinOffset()
	m := map[int64]quarantined{e.PhysOffset: {QuarantineEntry: e, err: err}}
	for p, x := range old {
		if p >= minOff { // else retention deleted it
			m[p] = x
		}
	}
	q.byPhys.Store(&m)
	s.writeQuarantineLocked(m)
	return true
}

// writeQuarantineLocked rewrites the file with m; a failure is logged.
// Callers hold the quarantine's mu.
func (s *Store) writeQuarantineLocked(m map[int64]quarantined) {
	f := quarantineFile{Version: quarantineVersion}
	for _, x := range m {
		f.Records = append(f.Records, x.QuarantineEntry)
	}
	sort.Slice(f.Records, func(i, j int) bool { return f.Records[i].PhysOffset < f.Records[j].PhysOffset })
	b, werr := json.MarshalIndent(f, "", "  ")
	if werr == nil {
		werr = s.writeFileAtomic(s.quarantinePath(), b)
	}
	if werr != nil {
		s.log.Error("storage: could not write the quarantine file; the record stays quarantined until restart",
			"file", s.quarantinePath(), "err", werr)
	}
}

// dropQuarantineFrom forgets the entries at or past off (a cut removed
// their records; new records will lie there) and rewrites the file.
func (s *Store) dropQuarantineFrom(off int64) {
	q := s.quarantine()
	q.mu.Lock()
	defer q.mu.Unlock()
	old := *q.byPhys.Load()
	m := make(map[int64]quarantined, len(old))
	for p, x := range old {
		if p < off {
			m[p] = x
		}
	}
	if len(m) == len(old) {
		return
	}
	q.byPhys.Store(&m)
	s.writeQuarantineLocked(m)
}

// Quarantined returns the corrupt records the store has found (in this run
// or, through Dir/quarantine.json, an earlier one) and no longer serves,
// ordered by physical offset.
func (s *Store) Quarantined() []QuarantineEntry {
	m := *s.quarantine().byPhys.Load()
	out := make([]QuarantineEntry, 0, len(m))
	for _, e := range m {
		out = append(out, e.QuarantineEntry)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PhysOffset < out[j].PhysOffset })
	return out
}
