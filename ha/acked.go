package ha

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"sync"

	"github.com/samsamq/samsa/storage/vfs"
)

// AckedMark is the highest CommitLog offset this broker knows its group
// acknowledged while it was master (what every member of its sync-state
// set held), kept in a small file beside the epoch file so that it
// outlives a crash. A slave that must cut its log below the mark to follow
// a new master is about to drop messages its group acknowledged: the cut
// bytes go to lost+found (storage), and the slave logs and counts them as
// lost acknowledged data (Slave.CutAcknowledged). Layout, big-endian:
//
//	off size field
//	0   8    MAGIC "SAMSAAK1"
//	8   8    OFFSET the mark
//	16  4    CRC    CRC-32 (IEEE) of bytes 0..15
//
// A missing file is a mark of 0; a damaged one is refused (OpenAckedMark
// fails: the operator decides). Safe for concurrent use.
type AckedMark struct {
	fs   vfs.FS
	path string
	mu   sync.Mutex
	v    int64
}

const ackedMagic = "SAMSAAK1"

// OpenAckedMark reads the mark at path (0 when there is none).
func OpenAckedMark(fsys vfs.FS, path string) (*AckedMark, error) {
	m := &AckedMark{fs: fsys, path: path}
	h, err := fsys.Open(path, vfs.OpenOptions{ReadOnly: true})
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ha: acked mark: %w", err)
	}
	defer func() { _ = h.Close() }() // read only
	var b [20]byte
	if n, err := h.ReadAt(b[:], 0); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, fmt.Errorf("ha: acked mark %s: %w", path, err)
	}
	if string(b[:8]) != ackedMagic || crc32.ChecksumIEEE(b[:16]) != be.Uint32(b[16:]) || int64(be.Uint64(b[8:])) < 0 {
		return nil, fmt.Errorf("ha: acked mark %s is damaged (remove it to start from 0)", path)
	}
	m.v = int64(be.Uint64(b[8:]))
	return m, nil
}

// Value is the mark.
func (m *AckedMark) Value() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.v
}

// Raise moves the mark up to v (a master's confirm offset), durably; a
// lower v changes nothing.
func (m *AckedMark) Raise(v int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v <= m.v {
		return nil
	}
	return m.storeLocked(v)
}

// Lower moves the mark down to v (the log was cut there: what lay above
// belongs to another lineage now), durably; a higher v changes nothing.
func (m *AckedMark) Lower(v int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v >= m.v {
		return nil
	}
	return m.storeLocked(max(v, 0))
}

func (m *AckedMark) storeLocked(v int64) error {
	var b [20]byte
	copy(b[:], ackedMagic)
	be.PutUint64(b[8:], uint64(v))
	be.PutUint32(b[16:], crc32.ChecksumIEEE(b[:16]))
	if err := vfs.WriteFileAtomic(m.fs, m.path, b[:]); err != nil {
		return fmt.Errorf("ha: acked mark: %w", err)
	}
	m.v = v
	return nil
}
