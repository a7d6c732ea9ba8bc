package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// segReader reads a segment file (or an open segment) through a window,
// for recovery's scans and retention's walks.
type segReader struct {
	f    io.ReaderAt
	c    io.Closer // nil for an open segment
	size int64     // bytes readable: nothing past it is read
	buf  []byte
	off  int64 // file offset of buf[0]
	n    int   // valid bytes in buf
}

const scanChunk = 1 << 20

func openSegReader(fsys vfs.FS, path string) (*segReader, error) {
	f, err := fsys.Open(path, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	size, err := f.Size()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("storage: size of %s: %w", path, err)
	}
	return &segReader{f: f, c: f, size: size}, nil
}

func (r *segReader) Close() error {
	if r.c == nil {
		return nil
	}
	return r.c.Close()
}

// at returns the file's bytes [pos, pos+n), fewer if the file ends first.
// The slice is valid until the next call.
func (r *segReader) at(pos int64, n int) ([]byte, error) {
	if pos >= r.off && pos+int64(n) <= r.off+int64(r.n) {
		i := int(pos - r.off)
		return r.buf[i : i+n], nil
	}
	if pos >= r.size {
		return nil, nil
	}
	want := int(min(int64(max(n, scanChunk)), r.size-pos))
	if cap(r.buf) < want {
		r.buf = make([]byte, want)
	}
	m, err := r.f.ReadAt(r.buf[:want], pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("storage: read at %d: %w", pos, err)
	}
	r.off, r.n = pos, m
	return r.buf[:min(n, m)], nil
}

// segScan is what a scan of one segment found.
type segScan struct {
	end        int64 // offset in the segment where valid records end
	sealed     bool  // a valid blank starts at end
	bad        error // why the record at end is not valid (nil if sealed)
	lastTs     int64 // store time of the last valid record
	hasRecords bool
}

// scanner holds what the CommitLog walks need to know (the segment size),
// so recovery, Verify, Repair and the scrubber share them: recovery
// through the Store's wrappers, the others on a store at rest.
type scanner struct {
	segSize int64
}

func (s *Store) scanner() scanner { return scanner{segSize: s.segSize} }

func (s *Store) scanSegment(r *segReader, base int64) (segScan, error) {
	return s.scanner().scanSegment(r, base)
}

func (s *Store) findValid(r *segReader, base, from, limit int64) (int64, error) {
	return s.scanner().findValid(r, base, from, limit)
}

func (s *Store) walkSegment(r *segReader, end int64, fn func(pos int64, rec []byte) error) error {
	return s.scanner().walkSegment(r, end, fn)
}

// scanSegment validates the records of a segment from its start until a
// blank or the first invalid record.
func (s scanner) scanSegment(r *segReader, base int64) (segScan, error) {
	return s.scanFrom(r, base, 0)
}

// scanFrom is scanSegment from pos, a record boundary of the segment.
func (s scanner) scanFrom(r *segReader, base, pos int64) (segScan, error) {
	var sc segScan
	for {
		sc.end = pos
		rec, blank, bad, err := s.checkAt(r, base, pos)
		switch {
		case err != nil:
			return sc, err
		case bad != nil:
			sc.bad = bad
			return sc, nil
		case blank:
			sc.sealed = true
			return sc, nil
		}
		sc.lastTs = record.StoreTimestampOf(rec)
		sc.hasRecords = true
		pos += int64(len(rec))
	}
}

// checkAt validates what starts at pos of the segment (base, r): a
// message record (returned; valid until r's next read) or the blank that
// seals the segment (blank true, spanning exactly the rest of it). bad
// says why it is neither; err is an I/O error.
func (s scanner) checkAt(r *segReader, base, pos int64) (rec []byte, blank bool, bad, err error) {
	rem := s.segSize - pos
	h, err := r.at(pos, record.BlankSize)
	if err != nil {
		return nil, false, nil, err
	}
	size, magic, herr := record.Header(h)
	switch {
	case herr != nil:
		return nil, false, herr, nil
	case magic == record.MagicBlank:
		if int64(size) != rem {
			return nil, false, fmt.Errorf("%w: blank of %d bytes where %d remain", record.ErrBadSize, size, rem), nil
		}
		return nil, true, nil, nil
	case magic != record.MagicMessage:
		return nil, false, fmt.Errorf("%w: %#08x", record.ErrBadMagic, uint32(magic)), nil
	case int(size) < record.MinSize || int64(size)+blankReserve > rem:
		return nil, false, fmt.Errorf("%w: %d bytes at %d of a %d-byte segment", record.ErrBadSize, size, pos, s.segSize), nil
	}
	rec, err = r.at(pos, int(size))
	if err != nil {
		return nil, false, nil, err
	}
	if _, err := record.Validate(rec, base+pos); err != nil {
		return nil, false, err, nil
	}
	return rec, false, nil, nil
}

var magicBytes = binary.BigEndian.AppendUint32(nil, uint32(int64(record.MagicMessage)&0xffffffff))

// findValid looks for a valid message record starting in (from, limit) of
// the segment (base, r): its magic where expected, its physical offset
// equal to its place, and both CRCs holding. It returns the CommitLog
// offset, or -1.
func (s scanner) findValid(r *segReader, base, from, limit int64) (int64, error) {
	limit = min(limit, r.size)
	p := from + 1
	for p+int64(record.MinSize) <= limit {
		n := int(min(scanChunk, limit-p))
		// The magic is 4 bytes into the record.
		chunk, err := r.at(p+4, n)
		if err != nil {
			return -1, err
		}
		i := bytes.Index(chunk, magicBytes)
		if i < 0 {
			if len(chunk) < 4 {
				return -1, nil
			}
			p += int64(len(chunk) - 3)
			continue
		}
		c := p + int64(i)
		if h, err := r.at(c, record.BlankSize); err == nil && len(h) == record.BlankSize {
			size := int(binary.BigEndian.Uint32(h))
			if size >= record.MinSize && int64(size) <= s.segSize-c {
				rec, err := r.at(c, size)
				if err != nil {
					return -1, err
				}
				if _, err := record.Validate(rec, base+c); err == nil {
					return base + c, nil
				}
			}
		}
		p = c + 1
	}
	return -1, nil
}

// walkSegment calls fn for every record of a segment already validated,
// from its start up to end (an offset in the segment) or its blank.
func (s scanner) walkSegment(r *segReader, end int64, fn func(pos int64, rec []byte) error) error {
	pos := int64(0)
	for pos < end {
		h, err := r.at(pos, record.BlankSize)
		if err != nil {
			return err
		}
		size, magic, err := record.Header(h)
		if err == nil && magic == record.MagicBlank {
			return nil
		}
		if err != nil || magic != record.MagicMessage || int64(size) > end-pos {
			return fmt.Errorf("storage: internal: record at %d of a validated segment: size %d magic %#x (%v)", pos, size, uint32(magic), err)
		}
		rec, err := r.at(pos, int(size))
		if err != nil {
			return err
		}
		if err := fn(pos, rec); err != nil {
			return err
		}
		pos += int64(size)
	}
	return nil
}
