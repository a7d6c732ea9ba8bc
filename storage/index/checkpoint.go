package index

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"

	"github.com/samsamq/samsa/storage/vfs"
)

// The checkpoint, Dir/checkpoint, big-endian:
//
//	off  size  field    why
//	  0     8  MAGIC    "SAMSAIC1"
//	  8     4  FLAGS    bit 0: written by Close (the slot tables on file are true)
//	 12     8  END      log offset below which every record is indexed
//	 20     8  ENDTIME  ms, store time of the last record indexed
//	 28     4  NFILES
//	 32     .  FILES    per file, oldest first: name length 1, name, COUNT 4
//	                    (entries durable), ENDPHYS 8, ENDTIME 8, STATE 1 (bit 0:
//	                    sealed; bit 1: Close wrote the slot table, which it
//	                    skips when rebuilding it from the entries reads less)
//	  .     4  CRC      CRC32 (IEEE) of everything before it
type checkpoint struct {
	clean bool
	end   int64
	endTs int64
	files []ckFile
}

type ckFile struct {
	name    string
	count   uint32
	endPhys int64
	endTs   int64
	sealed  bool
	slotsOK bool // the slot table on file is true (written by Close)
}

const (
	ckMagic  = "SAMSAIC1"
	ckName   = "checkpoint"
	ckHeader = 32
)

func (c *checkpoint) encode() []byte {
	n := ckHeader + 4
	for _, f := range c.files {
		n += 1 + len(f.name) + 4 + 8 + 8 + 1
	}
	b := make([]byte, n)
	copy(b, ckMagic)
	if c.clean {
		be.PutUint32(b[8:], 1)
	}
	be.PutUint64(b[12:], uint64(c.end))
	be.PutUint64(b[20:], uint64(c.endTs))
	be.PutUint32(b[28:], uint32(len(c.files)))
	p := ckHeader
	for _, f := range c.files {
		b[p] = byte(len(f.name))
		p++
		p += copy(b[p:], f.name)
		be.PutUint32(b[p:], f.count)
		be.PutUint64(b[p+4:], uint64(f.endPhys))
		be.PutUint64(b[p+12:], uint64(f.endTs))
		if f.sealed {
			b[p+20] |= 1
		}
		if f.slotsOK {
			b[p+20] |= 2
		}
		p += 21
	}
	be.PutUint32(b[p:], crc32.ChecksumIEEE(b[:p]))
	return b
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	var c checkpoint
	if len(b) < ckHeader+4 || string(b[:8]) != ckMagic {
		return c, fmt.Errorf("%w: checkpoint of %d bytes, no magic", ErrCorrupt, len(b))
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != be.Uint32(b[len(b)-4:]) {
		return c, fmt.Errorf("%w: checkpoint CRC mismatch", ErrCorrupt)
	}
	c.clean = be.Uint32(b[8:])&1 != 0
	c.end, c.endTs = int64(be.Uint64(b[12:])), int64(be.Uint64(b[20:]))
	n := int(be.Uint32(b[28:]))
	p := ckHeader
	for i := 0; i < n; i++ {
		if p >= len(body) || p+1+int(body[p])+21 > len(body) {
			return c, fmt.Errorf("%w: checkpoint file %d of %d past the end", ErrCorrupt, i, n)
		}
		l := int(body[p])
		p++
		f := ckFile{name: string(body[p : p+l])}
		p += l
		f.count = be.Uint32(body[p:])
		f.endPhys = int64(be.Uint64(body[p+4:]))
		f.endTs = int64(be.Uint64(body[p+12:]))
		f.sealed, f.slotsOK = body[p+20]&1 != 0, body[p+20]&2 != 0
		p += 21
		c.files = append(c.files, f)
	}
	if p != len(body) {
		return c, fmt.Errorf("%w: checkpoint has %d trailing bytes", ErrCorrupt, len(body)-p)
	}
	return c, nil
}

// readCheckpoint returns the checkpoint; ok is false if there is none or
// it is damaged (then the whole index is rebuilt).
func readCheckpoint(fsys vfs.FS, dir string) (c checkpoint, ok bool, err error) {
	p := filepath.Join(dir, ckName)
	f, err := fsys.Open(p, vfs.OpenOptions{ReadOnly: true})
	if errors.Is(err, fs.ErrNotExist) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("index: open %s: %w", p, err)
	}
	defer func() { _ = f.Close() }()
	size, err := f.Size()
	if err != nil {
		return c, false, fmt.Errorf("index: size of %s: %w", p, err)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return c, false, fmt.Errorf("index: read %s: %w", p, err)
	}
	c, err = decodeCheckpoint(b)
	if err != nil {
		return c, false, nil // written atomically: only the medium damages it; rebuild
	}
	return c, true, nil
}

// writeCheckpoint replaces the checkpoint durably.
func writeCheckpoint(fsys vfs.FS, dir string, c *checkpoint) error {
	if err := vfs.WriteFileAtomic(fsys, filepath.Join(dir, ckName), c.encode()); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	return nil
}
