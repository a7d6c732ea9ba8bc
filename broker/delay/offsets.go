package delay

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/samsamq/samsa/broker/internal/jsonfile"
)

// Offsets is delayOffset.json (RocketMQ's DelayOffsetSerializeWrapper)
// and the body of GET_ALL_DELAY_OFFSET: each level's next queue offset
// to deliver.
type Offsets struct {
	OffsetTable map[int]int64 `json:"offsetTable"`
	DataVersion *DataVersion  `json:"dataVersion,omitempty"`
}

// DataVersion is RocketMQ's DataVersion: bumped at every change of the
// table, so a slave's copy can tell a new table from the one it has.
type DataVersion struct {
	Timestamp int64 `json:"timestamp"`
	Counter   int64 `json:"counter"`
}

// DecodeOffsets reads a delayOffset.json body, also in the form
// RocketMQ's fastjson writes (integer keys without quotes).
func DecodeOffsets(b []byte) (Offsets, error) {
	var f Offsets
	if err := json.Unmarshal(b, &f); err == nil {
		return f, nil
	}
	if err := json.Unmarshal(jsonfile.QuoteKeys(b), &f); err != nil {
		return f, fmt.Errorf("broker: decode delay offsets: %w", err)
	}
	return f, nil
}

func offsetsFile(cfg *Config) jsonfile.File {
	return jsonfile.File{FS: cfg.FS, Path: filepath.Join(cfg.ConfigDir, "delayOffset.json"), Report: report(cfg)}
}

// report is where the config files' loads report.
func report(cfg *Config) *jsonfile.Report {
	return &jsonfile.Report{Log: cfg.Logger, Now: cfg.Now, SetAside: cfg.FilesSetAside}
}

// Offsets returns a copy of the levels' progress and its version.
func (s *Service) Offsets() Offsets { return s.sched.table() }

// AdoptOffsets replaces the levels' progress with the master's (a
// GET_ALL_DELAY_OFFSET body: a slave's metadata sync) and saves it, unless
// it is the version held already.
func (s *Service) AdoptOffsets(body []byte) error {
	f, err := DecodeOffsets(body)
	if err != nil {
		return err
	}
	return s.sched.adopt(f)
}

// load reads delayOffset.json; integer keys written unquoted (RocketMQ's
// fastjson writes {1:5}) are read too. It does not fail: an unreadable file
// is set aside and bad entries (a level below 1, a negative offset) are
// dropped (package jsonfile). The error is for the callers' form.
func (s *schedule) load() error {
	var f Offsets
	raw, found := s.file.LoadTolerant(func(b []byte) (err error) {
		f, err = DecodeOffsets(b)
		return err
	})
	if !found {
		return nil
	}
	var bad []string
	s.mu.Lock()
	for _, l := range slices.Sorted(maps.Keys(f.OffsetTable)) { // bad entries are reported in a stable order
		off := f.OffsetTable[l]
		if l >= 1 && off >= 0 {
			s.mu.offsets[l] = off
		} else {
			bad = append(bad, fmt.Sprintf("level %d offset %d", l, off))
		}
	}
	if f.DataVersion != nil {
		s.mu.version = *f.DataVersion
	}
	s.mu.Unlock()
	if len(bad) > 0 {
		s.file.DropBad(raw, bad, func() error { return s.file.Save(s.table()) })
	}
	return nil
}

// correct clamps each level's offset into its queue's range (RocketMQ's
// correctDelayOffset): a queue cut short by recovery, or trimmed by
// retention.
func (s *schedule) correct() {
	st := s.cfg.Store
	s.mu.Lock()
	defer s.mu.Unlock()
	for l, off := range s.mu.offsets {
		if l > len(s.levels) {
			continue
		}
		lo, hi := st.MinQueueOffset(ScheduleTopic, int32(l-1)), st.MaxQueueOffset(ScheduleTopic, int32(l-1))
		if c := min(max(off, lo), hi); c != off {
			s.cfg.Logger.Warn("broker: delay level offset outside its queue; corrected", "level", l, "offset", off, "min", lo, "max", hi, "now", c)
			s.mu.offsets[l] = c
		}
	}
}

// table returns a copy of the offsets and the version.
func (s *schedule) table() Offsets {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := make(map[int]int64, len(s.mu.offsets))
	for l, o := range s.mu.offsets {
		t[l] = o
	}
	v := s.mu.version
	return Offsets{OffsetTable: t, DataVersion: &v}
}

// adopt replaces the table with the master's (a slave's metadata sync).
func (s *schedule) adopt(f Offsets) error {
	s.mu.Lock()
	if f.DataVersion != nil && *f.DataVersion == s.mu.version {
		s.mu.Unlock()
		return nil
	}
	s.mu.offsets = make(map[int]int64, len(f.OffsetTable))
	for l, o := range f.OffsetTable {
		s.mu.offsets[l] = o
	}
	if f.DataVersion != nil {
		s.mu.version = *f.DataVersion
	}
	s.mu.Unlock()
	return s.file.Save(s.table())
}

func (s *schedule) offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.offsets[level]
}

func (s *schedule) setOffset(level int, off int64) {
	s.mu.Lock()
	s.mu.offsets[level] = off
	s.mu.version.Counter++
	s.mu.version.Timestamp = s.cfg.Now().UnixMilli()
	s.mu.Unlock()
}

// save flushes the delivered copies, then writes delayOffset.json.
func (s *schedule) save() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	t := s.table() // before the flush: only offsets whose copies it covers
	if end := s.flushTo.Load(); end > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.cfg.Store.FlushTo(ctx, end)
		cancel()
		if err != nil {
			return err
		}
	}
	return s.file.Save(t)
}

// runSaver saves the table every SaveInterval until stop; the last save
// is Close's.
func (s *schedule) runSaver(stop <-chan struct{}) {
	t := time.NewTicker(s.cfg.SaveInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := s.save(); err != nil {
				s.cfg.Logger.Warn("broker: save delayOffset.json", "err", err)
			}
		}
	}
}
