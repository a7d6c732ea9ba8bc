package pop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"

	"github.com/samsamq/samsa/storage/vfs"
)

// walName is the write-ahead file's name in Config.Dir.
const walName = "pop.wal"

// Record kinds (doc.go has the layout).
const (
	kindCursor  = 'N'
	kindPopped  = 'P'
	kindRemoved = 'A'
)

// walRec is one decoded record.
type walRec struct {
	kind                      byte
	group, topic              string
	qid                       int32
	offset, popTime, deadline int64
	attempts                  int32
}

const (
	walHead  = 8                             // length, CRC
	walFixed = 1 + 2 + 2 + 4 + 8 + 8 + 8 + 4 // kind, name lengths, numbers
	maxName  = 1 << 12                       // a group or topic name's most bytes
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRec appends r's encoding to dst.
func appendRec(dst []byte, r *walRec) []byte {
	n := walFixed + len(r.group) + len(r.topic)
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = append(dst, r.kind)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.group)))
	dst = append(dst, r.group...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.topic)))
	dst = append(dst, r.topic...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.qid))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.offset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.popTime))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.deadline))
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.attempts))
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+walHead:], castagnoli))
	return dst
}

// errTorn says a record is cut short or fails its CRC: the log ends
// before it.
var errTorn = errors.New("pop: torn or corrupt record")

// decodeRec decodes the record at the start of b and returns its size.
func decodeRec(b []byte, r *walRec) (int, error) {
	if len(b) < walHead {
		return 0, errTorn
	}
	n := int(binary.BigEndian.Uint32(b))
	if n < walFixed || n > walFixed+2*maxName || len(b) < walHead+n {
		return 0, errTorn
	}
	p := b[walHead : walHead+n]
	if crc32.Checksum(p, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return 0, errTorn
	}
	r.kind = p[0]
	gl := int(binary.BigEndian.Uint16(p[1:]))
	if 3+gl+2 > len(p) {
		return 0, errTorn
	}
	r.group = string(p[3 : 3+gl])
	p = p[3+gl:]
	tl := int(binary.BigEndian.Uint16(p))
	if 2+tl+32 != len(p) {
		return 0, errTorn
	}
	r.topic = string(p[2 : 2+tl])
	p = p[2+tl:]
	r.qid = int32(binary.BigEndian.Uint32(p))
	r.offset = int64(binary.BigEndian.Uint64(p[4:]))
	r.popTime = int64(binary.BigEndian.Uint64(p[12:]))
	r.deadline = int64(binary.BigEndian.Uint64(p[20:]))
	r.attempts = int32(binary.BigEndian.Uint32(p[28:]))
	return walHead + n, nil
}

// wal is the open write-ahead file. Its methods are called under the
// writer's lock (commit.go); its file's Sync runs outside it, beside them.
type wal struct {
	fs   vfs.FS
	dir  string
	f    vfs.File
	size int64
}

// readWAL replays the file (missing: nothing) into fn, stopping at the
// first torn record.
func readWAL(fsys vfs.FS, dir string, fn func(*walRec)) error {
	path := filepath.Join(dir, walName)
	size, err := fsys.Stat(path)
	if err != nil {
		return nil // nothing logged yet
	}
	f, err := fsys.Open(path, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // opened read-only: nothing to lose
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	var r walRec
	for len(b) > 0 {
		n, err := decodeRec(b, &r)
		if err != nil {
			return nil // the tail a crash tore: the state before it stands
		}
		fn(&r)
		b = b[n:]
	}
	return nil
}

// rewrite replaces the file with recs (a snapshot) and opens it for
// appending.
func (w *wal) rewrite(recs []byte) error {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	path := filepath.Join(w.dir, walName)
	if err := vfs.WriteFileAtomic(w.fs, path, recs); err != nil {
		return fmt.Errorf("pop: write %s: %w", path, err)
	}
	f, err := w.fs.Open(path, vfs.OpenOptions{})
	if err != nil {
		return fmt.Errorf("pop: open %s: %w", path, err)
	}
	w.f, w.size = f, int64(len(recs))
	return nil
}

// write appends b (not yet synced).
func (w *wal) write(b []byte) error {
	if _, err := w.f.WriteAt(b, w.size); err != nil {
		return err
	}
	w.size += int64(len(b))
	return nil
}

func (w *wal) close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
