package storage

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/samsamq/samsa/storage/backend"
)

// segment is one CommitLog file: its write path and what the store knows
// about it.
type segment struct {
	base int64 // CommitLog offset of its first byte; also its name
	path string
	seg  backend.Segment
	// sealed is set (by the appender, under Store.mu) once a blank
	// record closes the segment: its logical end is base+capacity.
	sealed atomic.Bool
	// lastTs is the store timestamp of its newest record, 0 if unknown
	// (retention reads it; the appender and recovery store it).
	lastTs atomic.Int64
	// hasRecords says a message record lies in it (known from appends or
	// recovery); a segment holding only a blank has none.
	hasRecords atomic.Bool
}

// end is the CommitLog offset just past the segment's capacity.
func (g *segment) end(segSize int64) int64 { return g.base + segSize }

// segmentName is the file name of the segment starting at base.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// parseSegmentName returns the base of a segment file name, or false.
func parseSegmentName(name string) (int64, bool) {
	if len(name) != 20 {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	return v, err == nil
}

// segmentFile is a segment file found on disk.
type segmentFile struct {
	base int64
	path string
	size int64
}

// listSegments returns the segment files of dir in offset order, checking
// that they are contiguous segSize-sized steps and no bigger than segSize.
func (s *Store) listSegments() ([]segmentFile, error) {
	names, err := s.fs.List(s.clDir)
	if err != nil {
		return nil, fmt.Errorf("storage: list %s: %w", s.clDir, err)
	}
	var files []segmentFile
	for _, n := range names {
		base, ok := parseSegmentName(n)
		if !ok {
			s.log.Warn("storage: ignoring a file that is not a segment", "dir", s.clDir, "name", n)
			continue
		}
		p := filepath.Join(s.clDir, n)
		size, err := s.fs.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("storage: stat %s: %w", p, err)
		}
		files = append(files, segmentFile{base: base, path: p, size: size})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].base < files[j].base })
	for i, f := range files {
		if f.base%s.segSize != 0 {
			return nil, fmt.Errorf("%w: segment %s does not start at a multiple of SegmentSize %d (was the store made with another?)",
				ErrCorrupt, f.path, s.segSize)
		}
		if f.size > s.segSize {
			return nil, fmt.Errorf("%w: segment %s has %d bytes, more than SegmentSize %d (was the store made with another?)",
				ErrCorrupt, f.path, f.size, s.segSize)
		}
		if i > 0 && f.base != files[i-1].base+s.segSize {
			return nil, fmt.Errorf("%w: segments missing between %s and %s", ErrCorrupt, files[i-1].path, f.path)
		}
	}
	return files, nil
}

// segmentAt returns the segment holding CommitLog offset off, or nil.
// Callers hold s.segs (either way).
func (s *Store) segmentAtLocked(off int64) *segment {
	l := s.segs.list
	i := sort.Search(len(l), func(i int) bool { return l[i].base+s.segSize > off })
	if i == len(l) || l[i].base > off {
		return nil
	}
	return l[i]
}

// segmentsSnapshot returns the current segment list (the slice is never
// modified in place, so callers may keep it).
func (s *Store) segmentsSnapshot() []*segment {
	s.segs.RLock()
	defer s.segs.RUnlock()
	return s.segs.list
}
