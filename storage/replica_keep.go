package storage

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/samsamq/samsa/storage/vfs"
)

// keepCutLocked copies what TruncateTo is about to remove, the log's bytes
// [off, written), into a new Dir/lost+found/<time>/ directory with a
// manifest (lostfound.go's layout: <offset>.tail for the cut segment's
// part, <base> for each later segment's written bytes), durably, before
// anything is cut. A replica's diverged tail may hold messages the group
// acknowledged (a fail-over after a power loss): what a cut removes is
// never destroyed, it waits for an operator there, and the metrics count
// it (CutRecords, CutBytes). The log was flushed by exclusive, so the
// files hold every byte. It returns the directory and what it held.
func (s *Store) keepCutLocked(list []*segment, i int, off, written int64, reason string) (string, Salvage, error) {
	now := s.clock()
	lf, err := makeLostFoundDir(s.fs, s.dir, now)
	if err != nil {
		return "", Salvage{}, err
	}
	man := LostFoundManifest{Time: now.UTC(), Reason: reason, Store: s.dir, SegmentSize: s.segSize, Cut: off}
	sc := s.scanner()
	for j := i; j < len(list); j++ {
		g := list[j]
		from, to := int64(0), g.seg.Written()
		name := filepath.Base(g.path)
		if j == i {
			from, name = off-g.base, segmentName(off)+".tail"
		}
		if to <= from {
			continue
		}
		dst := filepath.Join(lf, name)
		if err := copySegment(s.fs, g, from, to, dst); err != nil {
			return lf, man.Valid, err
		}
		r, err := openSegReader(s.fs, dst)
		if err != nil {
			return lf, man.Valid, err
		}
		sv, err := sc.salvage(r, g.base+from, 0, false)
		_ = r.Close() // read only
		if err != nil {
			return lf, man.Valid, err
		}
		man.Files = append(man.Files, LostFile{Name: name, From: relPath(s.dir, g.path), Offset: g.base + from,
			Bytes: to - from, Valid: sv})
		man.Valid.merge(sv)
	}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return lf, man.Valid, fmt.Errorf("storage: encode lost+found manifest: %w", err)
	}
	if err := writeSynced(s.fs, filepath.Join(lf, "manifest.json"), append(b, '\n')); err != nil {
		return lf, man.Valid, err
	}
	if err := s.fs.SyncDir(lf); err != nil {
		return lf, man.Valid, fmt.Errorf("storage: sync dir %s: %w", lf, err)
	}
	s.m.cutRecords.Add(man.Valid.Records)
	s.m.cutBytes.Add(written - off)
	return lf, man.Valid, nil
}

// copySegment copies bytes [from, to) of the open segment g into a new
// file dst, durably, through the segment's own handle (its backend's
// reads; no second descriptor on the live file).
func copySegment(fsys vfs.FS, g *segment, from, to int64, dst string) error {
	buf := make([]byte, min(scanChunk, to-from))
	return copyInto(fsys, dst, from, to, func(p int64, n int) ([]byte, error) {
		b := buf[:n]
		if _, err := g.seg.ReadAt(b, p); err != nil {
			return nil, fmt.Errorf("storage: read %s at %d: %w", g.path, p, err)
		}
		return b, nil
	})
}
