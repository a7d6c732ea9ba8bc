package storage

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// Lost and found.
//
// Recovery (a torn tail after a crash) and Repair (a store that will not
// open) end the CommitLog at a cut. Nothing past it is deleted: the cut
// segment's bytes past the cut (unless they are all zero: reserved space)
// are copied, and every later segment file moved, into
//
//	Dir/lost+found/<UTC time>/
//	    manifest.json                what the files are and held (LostFoundManifest)
//	    <20-digit offset>.tail       a cut segment's bytes from the cut to its last non-zero byte
//	    <20-digit base>              a whole segment file that lay past the cut
//
// and a Warn line says what they held. The log stays a prefix: the copy
// and the moves are durable before the cut segment is truncated, and later
// segments are moved newest first, so a crash part way leaves contiguous
// segments that the next recovery cuts the same way again (into a second
// directory). Nothing ever reads lost+found back; an operator removes it
// once satisfied (it is not counted by retention).

// lostFoundDir is the directory under the store's Dir.
const lostFoundDir = "lost+found"

// LostFoundManifest is manifest.json.
type LostFoundManifest struct {
	Time        time.Time `json:"time"`
	Reason      string    `json:"reason"`
	Store       string    `json:"store"`
	SegmentSize int64     `json:"segmentSize"`
	// Cut is where the CommitLog ends now.
	Cut   int64      `json:"cut"`
	Files []LostFile `json:"files"`
	// Valid sums the files' valid records.
	Valid Salvage `json:"valid"`
}

// LostFile is one file of a lost+found directory.
type LostFile struct {
	// Name is the file's name in the lost+found directory.
	Name string `json:"name"`
	// From is where its bytes were, relative to the store's Dir.
	From string `json:"from"`
	// Offset is the CommitLog offset of its first byte.
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
	// NonZeroBytes (a tail) counts its non-zero bytes.
	NonZeroBytes int64   `json:"nonZeroBytes,omitempty"`
	Valid        Salvage `json:"valid"`
}

// cutPlan is what ending the log at a cut means on disk.
type cutPlan struct {
	cut    int64         // CommitLog offset where the log ends
	seg    segmentFile   // the segment holding the cut
	segCut int64         // the cut, as an offset in seg
	why    error         // why no valid record starts at the cut
	tail   tailInfo      // seg's bytes past the cut
	later  []segmentFile // segment files after seg, to move away
	lost   LostFoundManifest
}

// keeps reports whether the cut removes anything but zeros.
func (p *cutPlan) keeps() bool { return !p.tail.zeros() || len(p.later) > 0 }

// planCut plans ending the log at segCut in files[i], reading (not
// changing) what would be removed.
func (sc scanner) planCut(fsys vfs.FS, storeDir string, files []segmentFile, i int, segCut int64, why error) (cutPlan, error) {
	f := files[i]
	p := cutPlan{cut: f.base + segCut, seg: f, segCut: segCut, why: why, later: files[i+1:]}
	p.lost = LostFoundManifest{Store: storeDir, SegmentSize: sc.segSize, Cut: p.cut}
	r, err := openSegReader(fsys, f.path)
	if err != nil {
		return p, err
	}
	p.tail, err = readTail(r, segCut)
	if err == nil && !p.tail.zeros() {
		var sv Salvage
		if sv, err = sc.salvage(r, f.base, segCut, true); err == nil {
			p.lost.Files = append(p.lost.Files, LostFile{
				Name: segmentName(p.cut) + ".tail", From: relPath(storeDir, f.path), Offset: p.cut,
				Bytes: p.tail.end - segCut, NonZeroBytes: p.tail.nonZero, Valid: sv,
			})
			p.lost.Valid.merge(sv)
		}
	}
	_ = r.Close()
	if err != nil {
		return p, err
	}
	for _, g := range p.later {
		r, err := openSegReader(fsys, g.path)
		if err != nil {
			return p, err
		}
		sv, err := sc.salvage(r, g.base, 0, false)
		_ = r.Close()
		if err != nil {
			return p, err
		}
		p.lost.Files = append(p.lost.Files, LostFile{
			Name: filepath.Base(g.path), From: relPath(storeDir, g.path), Offset: g.base, Bytes: g.size, Valid: sv,
		})
		p.lost.Valid.merge(sv)
	}
	return p, nil
}

// applyCut carries p out: what it removes goes to a new lost+found
// directory (returned; "" if there was nothing but zeros), then the cut
// segment is truncated at the cut, re-reserving reserve bytes after it
// (Preallocate). Every step is durable before the next.
func applyCut(fsys vfs.FS, storeDir string, p *cutPlan, now time.Time, reason string, reserve int64, log *slog.Logger) (string, error) {
	if !p.keeps() {
		return "", nil
	}
	p.lost.Time = now.UTC()
	p.lost.Reason = reason
	lf, err := makeLostFoundDir(fsys, storeDir, now)
	if err != nil {
		return "", err
	}
	if !p.tail.zeros() {
		if err := copyRange(fsys, p.seg.path, p.segCut, p.tail.end, filepath.Join(lf, p.lost.Files[0].Name)); err != nil {
			return lf, err
		}
	}
	b, err := json.MarshalIndent(p.lost, "", "  ")
	if err != nil {
		return lf, fmt.Errorf("storage: encode lost+found manifest: %w", err)
	}
	if err := writeSynced(fsys, filepath.Join(lf, "manifest.json"), append(b, '\n')); err != nil {
		return lf, err
	}
	if err := fsys.SyncDir(lf); err != nil {
		return lf, fmt.Errorf("storage: sync dir %s: %w", lf, err)
	}
	clDir := filepath.Dir(p.seg.path)
	for _, g := range slices.Backward(p.later) {
		if err := fsys.Rename(g.path, filepath.Join(lf, filepath.Base(g.path))); err != nil {
			return lf, fmt.Errorf("storage: move %s to %s: %w", g.path, lf, err)
		}
	}
	if len(p.later) > 0 {
		for _, d := range []string{lf, clDir} {
			if err := fsys.SyncDir(d); err != nil {
				return lf, fmt.Errorf("storage: sync dir %s: %w", d, err)
			}
		}
	}
	if !p.tail.zeros() {
		if err := truncateSegment(fsys, p.seg.path, p.segCut, reserve); err != nil {
			return lf, err
		}
	}
	log.Warn("storage: moved what lay past the commit log's cut to lost+found", "dir", lf, "cut", p.cut,
		"files", len(p.lost.Files), "valid", p.lost.Valid.String(), "reason", reason)
	return lf, nil
}

// makeLostFoundDir makes Dir/lost+found/<now, UTC> (with a suffix if it
// exists) durably.
func makeLostFoundDir(fsys vfs.FS, storeDir string, now time.Time) (string, error) {
	root := filepath.Join(storeDir, lostFoundDir)
	if err := fsys.MkdirAll(root); err != nil {
		return "", fmt.Errorf("storage: mkdir %s: %w", root, err)
	}
	names, _ := fsys.List(root)
	name := now.UTC().Format("20060102T150405.000000000Z")
	for n := 2; slices.Contains(names, name); n++ {
		name = fmt.Sprintf("%s-%d", now.UTC().Format("20060102T150405.000000000Z"), n)
	}
	dir := filepath.Join(root, name)
	if err := fsys.MkdirAll(dir); err != nil {
		return "", fmt.Errorf("storage: mkdir %s: %w", dir, err)
	}
	for _, d := range []string{storeDir, root} {
		if err := fsys.SyncDir(d); err != nil {
			return "", fmt.Errorf("storage: sync dir %s: %w", d, err)
		}
	}
	return dir, nil
}

// copyRange copies bytes [from, to) of src into a new file dst, durably
// (the file's name is durable once its directory is synced).
func copyRange(fsys vfs.FS, src string, from, to int64, dst string) error {
	r, err := openSegReader(fsys, src)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read only
	return copyInto(fsys, dst, from, to, func(p int64, n int) ([]byte, error) {
		b, err := r.at(p, n)
		if err == nil && len(b) == 0 {
			err = fmt.Errorf("storage: %s ends at %d, before %d", src, p, to)
		}
		return b, err
	})
}

// copyInto writes bytes [from, to), as read returns them (at most n bytes
// at p, at least one), into a new file dst at offset 0, and syncs it.
func copyInto(fsys vfs.FS, dst string, from, to int64, read func(p int64, n int) ([]byte, error)) (err error) {
	w, err := fsys.Create(dst, vfsOpts)
	if err != nil {
		return writeError("create "+dst, err)
	}
	defer func() {
		if cerr := w.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("storage: close %s: %w", dst, cerr)
		}
	}()
	for p := from; p < to; {
		b, err := read(p, int(min(scanChunk, to-p)))
		if err != nil {
			return err
		}
		if _, err := w.WriteAt(b, p-from); err != nil {
			return writeError("write "+dst, err)
		}
		p += int64(len(b))
	}
	if err := w.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", dst, err)
	}
	return nil
}

// writeSynced writes a new file holding b and syncs it.
func writeSynced(fsys vfs.FS, name string, b []byte) error {
	f, err := fsys.Create(name, vfsOpts)
	if err != nil {
		return writeError("create "+name, err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		_ = f.Close()
		return writeError("write "+name, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("storage: sync %s: %w", name, err)
	}
	return f.Close()
}

// truncateSegment cuts a segment file at size durably, re-reserving the
// reserve bytes after it (Preallocate), so no old byte past the cut
// survives.
func truncateSegment(fsys vfs.FS, path string, size, reserve int64) (err error) {
	f, err := fsys.Open(path, vfsOpts)
	if err != nil {
		return fmt.Errorf("storage: open %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("storage: close %s: %w", path, cerr)
		}
	}()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("storage: truncate %s at %d: %w", path, size, err)
	}
	if reserve > 0 {
		if err := f.Allocate(size, reserve); err != nil {
			return writeError(fmt.Sprintf("re-reserve %s from %d", path, size), err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", path, err)
	}
	return nil
}

// relPath is path relative to dir when it lies below it.
func relPath(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return r
	}
	return path
}
