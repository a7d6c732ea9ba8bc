package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

const (
	fileMagic  = "SAMSAIX1"
	headerSize = 64
	entrySize  = 20
	// writeChunk is how many buffered entry bytes Put writes out at once.
	writeChunk = 64 << 10
	// maxPending bounds the entry bytes buffered while writes fail.
	maxPending = 16 << 20
	timeLayout = "20060102150405.000"
)

var be = binary.BigEndian

// ErrCorrupt is wrapped by errors about index files that cannot be
// trusted; Open drops such a file and the ones after it, and the caller
// indexes the log again from End.
var ErrCorrupt = errors.New("index: corrupt")

// file is one index file. Its fields are guarded by Index.mu.
type file struct {
	name      string
	path      string
	f         vfs.File
	nslots    uint32
	maxN      uint32
	beginTs   int64
	beginPhys int64

	count   uint32 // entries
	written uint32 // entries in the file; the rest are in pend
	endPhys int64  // PHYS of the last entry
	endTs   int64  // store time of the last entry (ms)
	sealed  bool   // full: slot table written and synced, no more entries
	// slots is the slot table of the active (unsealed) file, the only true
	// one while it is active (the file's is written at the roll or Close).
	slots   []uint32
	pend    []byte // entries written+1..count, encoded
	dirty   bool   // written to since the last sync
	slotsOK bool   // Close wrote the active file's slot table
}

// slotsWorthWriting says whether Close should write the active file's
// slot table: only when reading it back costs less than rebuilding it from
// the entries (a file with few entries reopens faster without it).
func (f *file) slotsWorthWriting() bool {
	return int64(f.count)*entrySize > 4*int64(f.nslots)
}

type entry struct {
	hash uint32
	phys int64
	diff int32
	prev uint32
}

func (f *file) slotOff(i uint32) int64 { return headerSize + 4*int64(i) }
func (f *file) entryOff(n uint32) int64 {
	return headerSize + 4*int64(f.nslots) + entrySize*int64(n-1)
}

// fileName names a file by a store time (ms, UTC).
func fileName(ms int64) string {
	t := time.UnixMilli(ms).UTC().Format(timeLayout)
	return t[:14] + t[15:] // yyyyMMddHHmmssSSS
}

func encodeHeader(f *file) []byte {
	b := make([]byte, headerSize)
	copy(b, fileMagic)
	be.PutUint32(b[8:], f.nslots)
	be.PutUint32(b[12:], f.maxN)
	be.PutUint64(b[16:], uint64(f.beginTs))
	be.PutUint64(b[24:], uint64(f.beginPhys))
	be.PutUint32(b[32:], crc32.ChecksumIEEE(b[:32]))
	return b
}

func decodeHeader(b []byte, f *file) error {
	if len(b) < headerSize || string(b[:8]) != fileMagic {
		return fmt.Errorf("%w: %s: no header", ErrCorrupt, f.path)
	}
	if crc32.ChecksumIEEE(b[:32]) != be.Uint32(b[32:]) {
		return fmt.Errorf("%w: %s: header CRC mismatch", ErrCorrupt, f.path)
	}
	f.nslots, f.maxN = be.Uint32(b[8:]), be.Uint32(b[12:])
	f.beginTs, f.beginPhys = int64(be.Uint64(b[16:])), int64(be.Uint64(b[24:]))
	if f.nslots == 0 || f.maxN == 0 || f.maxN > MaxMaxEntries {
		return fmt.Errorf("%w: %s: header says %d slots, %d entries", ErrCorrupt, f.path, f.nslots, f.maxN)
	}
	return nil
}

// createFile makes a new active file, durably (file and directory synced).
func createFile(fsys vfs.FS, dir, name string, nslots, maxN uint32, ts, phys int64) (*file, error) {
	f := &file{name: name, path: filepath.Join(dir, name), nslots: nslots, maxN: maxN, beginTs: ts, beginPhys: phys,
		slots: make([]uint32, nslots)}
	vf, err := fsys.Create(f.path, vfs.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("index: create %s: %w", f.path, err)
	}
	f.f = vf
	err = func() error {
		if _, err := vf.WriteAt(encodeHeader(f), 0); err != nil {
			return err
		}
		if err := vf.Sync(); err != nil {
			return err
		}
		return fsys.SyncDir(dir)
	}()
	if err != nil {
		_ = vf.Close()
		_ = fsys.Remove(f.path) // if it stays, Open drops it as corrupt (no header)
		return nil, fmt.Errorf("index: create %s: %w", f.path, err)
	}
	return f, nil
}

// openFile opens a listed file and reads its header.
func openFile(fsys vfs.FS, dir, name string) (*file, error) {
	f := &file{name: name, path: filepath.Join(dir, name)}
	vf, err := fsys.Open(f.path, vfs.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrCorrupt, f.path, err)
	}
	f.f = vf
	b := make([]byte, headerSize)
	if _, err := vf.ReadAt(b, 0); err != nil {
		_ = vf.Close()
		return nil, fmt.Errorf("%w: read %s: %w", ErrCorrupt, f.path, err)
	}
	if err := decodeHeader(b, f); err != nil {
		_ = vf.Close()
		return nil, err
	}
	return f, nil
}

func putEntry(b []byte, e entry) {
	be.PutUint32(b, e.hash)
	be.PutUint64(b[4:], uint64(e.phys))
	be.PutUint32(b[12:], uint32(e.diff))
	be.PutUint32(b[16:], e.prev)
}

func getEntry(b []byte) entry {
	return entry{hash: be.Uint32(b), phys: int64(be.Uint64(b[4:])), diff: int32(be.Uint32(b[12:])), prev: be.Uint32(b[16:])}
}

// entry reads entry n (1 <= n <= count).
func (f *file) entry(n uint32) (entry, error) {
	if n > f.written {
		i := int(n-f.written-1) * entrySize
		return getEntry(f.pend[i:]), nil
	}
	var b [entrySize]byte
	if _, err := f.f.ReadAt(b[:], f.entryOff(n)); err != nil {
		return entry{}, fmt.Errorf("index: read entry %d of %s: %w", n, f.path, err)
	}
	return getEntry(b[:]), nil
}

// slot returns slot i's entry number.
func (f *file) slot(i uint32) (uint32, error) {
	if f.slots != nil {
		return f.slots[i], nil
	}
	var b [4]byte
	if _, err := f.f.ReadAt(b[:], f.slotOff(i)); err != nil {
		return 0, fmt.Errorf("index: read slot %d of %s: %w", i, f.path, err)
	}
	return be.Uint32(b[:]), nil
}

// add appends one entry (the caller checked count < maxN).
func (f *file) add(hash uint32, phys, ts int64) {
	diff := (ts - f.beginTs) / 1000
	diff = max(0, min(diff, 1<<31-1))
	i := hash % f.nslots
	n := f.count + 1
	var b [entrySize]byte
	putEntry(b[:], entry{hash: hash, phys: phys, diff: int32(diff), prev: f.slots[i]})
	f.pend = append(f.pend, b[:]...)
	f.slots[i] = n
	f.count = n
	f.endPhys, f.endTs = phys, ts
}

// writePending writes the buffered entries into the file.
func (f *file) writePending() error {
	if len(f.pend) == 0 {
		return nil
	}
	if _, err := f.f.WriteAt(f.pend, f.entryOff(f.written+1)); err != nil {
		return fmt.Errorf("index: write %d entries to %s: %w", len(f.pend)/entrySize, f.path, err)
	}
	f.written = f.count
	f.pend = f.pend[:0]
	f.dirty = true
	return nil
}

// writeSlots writes the in-memory slot table into the file.
func (f *file) writeSlots() error {
	const chunk = 1 << 16
	b := make([]byte, 4*min(len(f.slots), chunk))
	for i := 0; i < len(f.slots); i += chunk {
		part := f.slots[i:min(i+chunk, len(f.slots))]
		for j, v := range part {
			be.PutUint32(b[4*j:], v)
		}
		if _, err := f.f.WriteAt(b[:4*len(part)], f.slotOff(uint32(i))); err != nil {
			return fmt.Errorf("index: write the slot table of %s: %w", f.path, err)
		}
	}
	f.dirty = true
	return nil
}

// loadSlots reads the file's slot table into memory (it becomes active).
func (f *file) loadSlots() error {
	b := make([]byte, 4*int64(f.nslots))
	if _, err := f.f.ReadAt(b, f.slotOff(0)); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("index: read the slot table of %s: %w", f.path, err)
	}
	f.slots = make([]uint32, f.nslots)
	for i := range f.slots {
		f.slots[i] = be.Uint32(b[4*i:])
	}
	return nil
}

// rebuildSlots makes the in-memory slot table again from entries
// 1..count, which must be in the file (written == count), and sets
// endPhys and endTs from the last one.
func (f *file) rebuildSlots() error {
	f.slots = make([]uint32, f.nslots)
	const chunk = 4096
	buf := make([]byte, chunk*entrySize)
	for n := uint32(1); n <= f.count; n += chunk {
		k := min(uint32(chunk), f.count-n+1)
		b := buf[:int(k)*entrySize]
		if _, err := f.f.ReadAt(b, f.entryOff(n)); err != nil {
			return fmt.Errorf("index: read entries of %s: %w", f.path, err)
		}
		for j := uint32(0); j < k; j++ {
			e := getEntry(b[j*entrySize:])
			f.slots[e.hash%f.nslots] = n + j
			f.endPhys, f.endTs = e.phys, f.beginTs+int64(e.diff)*1000
		}
	}
	return nil
}

// timeMatch says whether the file may hold entries stored in [begin, end].
func (f *file) timeMatch(begin, end int64) bool {
	return f.count > 0 && f.beginTs <= end && f.endTs+999 >= begin
}
