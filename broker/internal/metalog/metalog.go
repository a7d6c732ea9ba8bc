// Package metalog is an append-only log of a table's changes, kept beside
// the table's snapshot (a JSON file written whole, such as topics.json), so
// that one change costs one small append and one fsync rather than a
// rewrite of the table.
//
// A log is a series of files <base>.<generation>, the generation a
// 20-digit number. Records are appended to the newest; Rotate starts a
// newer one. Compaction is the caller's: Rotate, write a snapshot of the
// table as it now stands (it holds every change in the older files), then
// DropBefore the new generation. Replay reads every file in generation
// order: over the latest snapshot, replaying a change the snapshot already
// holds gives what the snapshot holds, as long as each change states a
// key's whole new value (a put of a config, a delete), so a crash at any
// point of a compaction loses nothing.
//
// Record layout (big-endian):
//
//	| field   | bytes  | why                                               |
//	|---------|--------|---------------------------------------------------|
//	| crc     | 4      | CRC-32C of length and payload: a torn or flipped   |
//	|         |        | record ends the file's replay                      |
//	| length  | 4      | of the payload; a length past the file's end is a |
//	|         |        | torn tail                                          |
//	| payload | length | one change, the caller's encoding                  |
//
// Open truncates the newest file after its last whole record (a tail torn
// by a crash). Write is called under the caller's lock that orders its
// changes (so the log's order is the table's), Sync outside it: one fsync
// covers every record written before it (group commit), and a failed
// fsync is sticky — every later Write and Sync returns it.
package metalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/samsamq/samsa/storage/vfs"
)

// MaxRecord bounds one record's payload.
const MaxRecord = 1 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Log is an open metadata log. Safe for concurrent use.
type Log struct {
	fs   vfs.FS
	dir  string
	base string

	mu struct {
		sync.Mutex
		f       vfs.File
		gen     uint64
		size    int64 // bytes written to f
		records int   // records in f
		err     error // sticky: a failed write or fsync
	}
	// syncMu serialises fsyncs; synced is (under it) how far the newest
	// file is known durable, syncedGen which file that is.
	syncMu    sync.Mutex
	synced    int64
	syncedGen uint64
}

// Ticket says what a Sync must cover: a record's file and end.
type Ticket struct {
	gen uint64
	end int64
}

func (l *Log) name(gen uint64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%s.%020d", l.base, gen))
}

// generations lists the log's files' generations, oldest first.
func generations(fs vfs.FS, dir, base string) ([]uint64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var gens []uint64
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, base+".")
		if !ok || len(rest) != 20 {
			continue
		}
		g, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			continue
		}
		gens = append(gens, g)
	}
	slices.Sort(gens)
	return gens, nil
}

// Open replays the log in dir (files base.N) through apply, record by
// record in order, and opens it for appends: the newest file, cut after
// its last whole record, or a first one when there is none. apply's error
// stops the open.
func Open(fs vfs.FS, dir, base string, apply func(payload []byte) error) (*Log, error) {
	if err := fs.MkdirAll(dir); err != nil {
		return nil, err
	}
	l := &Log{fs: fs, dir: dir, base: base}
	gens, err := generations(fs, dir, base)
	if err != nil {
		return nil, err
	}
	if len(gens) == 0 {
		if err := l.create(1); err != nil {
			return nil, err
		}
		return l, nil
	}
	for i, g := range gens {
		last := i == len(gens)-1
		f, err := fs.Open(l.name(g), vfs.OpenOptions{ReadOnly: !last})
		if err != nil {
			return nil, err
		}
		end, n, err := replay(f, apply)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("metalog: %s: %w", l.name(g), err)
		}
		if !last {
			if err := f.Close(); err != nil {
				return nil, err
			}
			continue
		}
		if size, err := f.Size(); err != nil || size != end {
			if err == nil {
				err = f.Truncate(end)
			}
			if err == nil {
				err = f.Sync()
			}
			if err != nil {
				_ = f.Close()
				return nil, fmt.Errorf("metalog: cut %s's torn tail: %w", l.name(g), err)
			}
		}
		l.mu.f, l.mu.gen, l.mu.size, l.mu.records = f, g, end, n
		l.syncedGen, l.synced = g, end
	}
	return l, nil
}

// replay applies f's whole records; it returns where they end and how many
// there were.
func replay(f vfs.File, apply func([]byte) error) (end int64, n int, err error) {
	size, err := f.Size()
	if err != nil {
		return 0, 0, err
	}
	var hdr [8]byte
	for end+8 <= size {
		if _, err := f.ReadAt(hdr[:], end); err != nil {
			return 0, 0, err
		}
		length := int64(binary.BigEndian.Uint32(hdr[4:]))
		if length > MaxRecord || end+8+length > size {
			break
		}
		rec := make([]byte, 4+length)
		copy(rec, hdr[4:])
		if _, err := f.ReadAt(rec[4:], end+8); err != nil {
			return 0, 0, err
		}
		if crc32.Checksum(rec, crcTable) != binary.BigEndian.Uint32(hdr[:4]) {
			break
		}
		if err := apply(rec[4:]); err != nil {
			return 0, 0, err
		}
		end += 8 + length
		n++
	}
	return end, n, nil
}

// create starts file gen, durably, and makes it the newest.
func (l *Log) create(gen uint64) error {
	f, err := l.fs.Create(l.name(gen), vfs.OpenOptions{})
	if err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		_ = f.Close()
		return err
	}
	l.mu.f, l.mu.gen, l.mu.size, l.mu.records = f, gen, 0, 0
	l.syncMu.Lock()
	l.syncedGen, l.synced = gen, 0
	l.syncMu.Unlock()
	return nil
}

// Write appends one record (to the page cache: Sync makes it durable).
func (l *Log) Write(payload []byte) (Ticket, error) {
	if len(payload) > MaxRecord {
		return Ticket{}, fmt.Errorf("metalog: a record of %d bytes (at most %d)", len(payload), MaxRecord)
	}
	rec := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint32(rec[4:], uint32(len(payload)))
	copy(rec[8:], payload)
	binary.BigEndian.PutUint32(rec, crc32.Checksum(rec[4:], crcTable))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.err != nil {
		return Ticket{}, l.mu.err
	}
	if _, err := l.mu.f.WriteAt(rec, l.mu.size); err != nil {
		l.mu.err = fmt.Errorf("metalog: write %s: %w", l.name(l.mu.gen), err)
		return Ticket{}, l.mu.err
	}
	l.mu.size += int64(len(rec))
	l.mu.records++
	return Ticket{gen: l.mu.gen, end: l.mu.size}, nil
}

// Sync returns once the record t names is durable: at once when an
// earlier fsync covered it, else after one fsync that covers every record
// written so far.
func (l *Log) Sync(t Ticket) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.syncedGen > t.gen || l.syncedGen == t.gen && l.synced >= t.end {
		return l.stickyErr()
	}
	l.mu.Lock()
	f, gen, end, err := l.mu.f, l.mu.gen, l.mu.size, l.mu.err
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		l.mu.Lock()
		l.mu.err = fmt.Errorf("metalog: sync %s: %w", l.name(gen), err)
		err = l.mu.err
		l.mu.Unlock()
		return err
	}
	l.syncedGen, l.synced = gen, end
	return nil
}

func (l *Log) stickyErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.err
}

// Records is how many records the newest file holds.
func (l *Log) Records() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.records
}

// Rotate syncs the newest file and starts a newer one, which it returns:
// records written from now on go there. A snapshot taken after Rotate
// holds every record of the older files.
func (l *Log) Rotate() (uint64, error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.err != nil {
		return 0, l.mu.err
	}
	old, gen := l.mu.f, l.mu.gen
	if err := old.Sync(); err != nil {
		l.mu.err = fmt.Errorf("metalog: sync %s: %w", l.name(gen), err)
		return 0, l.mu.err
	}
	f, err := l.fs.Create(l.name(gen+1), vfs.OpenOptions{})
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		return 0, fmt.Errorf("metalog: start %s: %w", l.name(gen+1), err)
	}
	l.mu.f, l.mu.gen, l.mu.size, l.mu.records = f, gen+1, 0, 0
	l.syncedGen, l.synced = gen+1, 0
	return gen + 1, old.Close()
}

// DropBefore removes the files older than gen (a snapshot holds them).
func (l *Log) DropBefore(gen uint64) error {
	gens, err := generations(l.fs, l.dir, l.base)
	if err != nil {
		return err
	}
	var errs []error
	removed := false
	for _, g := range gens {
		if g < gen {
			errs = append(errs, l.fs.Remove(l.name(g)))
			removed = true
		}
	}
	if removed {
		errs = append(errs, l.fs.SyncDir(l.dir))
	}
	return errors.Join(errs...)
}

// Close syncs and closes the newest file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.f == nil {
		return nil
	}
	err := l.mu.f.Sync()
	err = errors.Join(err, l.mu.f.Close())
	l.mu.f = nil
	if l.mu.err == nil {
		l.mu.err = errors.New("metalog: closed")
	}
	return err
}
