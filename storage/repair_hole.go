package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// Holes: a damaged record in the middle of the log, valid records after it.
//
// Cutting the log at the damage (what recovery does with a torn tail)
// would take every valid record after it out of the log. When the damaged
// record can be told apart, Repair writes a hole over it instead
// (record/hole.go): a record of the same size, place, topic, queue and
// queue offset, its body zeros, which the store indexes and every read
// skips. The records after it keep their offsets and stay readable; the
// damaged bytes go to lost+found and the report names the hole.
//
// The damaged record is told apart only when nothing about it is a guess:
//   - a valid record starts at the end the damaged one declares (its
//     size field), and no earlier one after it does;
//   - it decodes (structure, magic, its physical offset field is its
//     place); its CRCs fail;
//   - its queue is confirmed: its body CRC fails (the damage lies in the
//     body, so the header is as written), or its queue's ConsumeQueue
//     holds an entry for its queue offset at its place and size.
//
// Otherwise Repair cuts as before. Repair from a replica, when there is
// one, is the broker's (repair_range.go): this is for a store alone.

// hole is one planned hole.
type hole struct {
	seg    segmentFile
	pos    int64 // in seg
	size   int
	topic  string
	qid    int32
	qoff   int64
	why    string // what was wrong with the damaged record
	record []byte // the hole's bytes
	old    []byte // the damaged bytes
}

func (h *hole) phys() int64 { return h.seg.base + h.pos }

// bridge tries to plan holes over the damaged records from s.end on in
// segment f (reader rd), each followed by valid records; it returns the
// holes and the scan of the segment after the last of them.
func (a *atRest) bridge(rd *segReader, f segmentFile, s segScan) ([]hole, segScan, error) {
	sc := a.sc()
	var holes []hole
	for !s.sealed && s.bad != nil {
		h, ok, err := a.holeAt(rd, f, s.end, s.bad)
		if err != nil || !ok {
			return holes, s, err
		}
		holes = append(holes, h)
		next, err := sc.scanFrom(rd, f.base, h.pos+int64(h.size))
		if err != nil {
			return holes, s, err
		}
		if !next.hasRecords && !next.sealed {
			return holes[:len(holes)-1], s, nil // nothing valid after it: an ordinary cut
		}
		if !next.hasRecords {
			next.lastTs, next.hasRecords = s.lastTs, s.hasRecords
		}
		s = next
	}
	return holes, s, nil
}

// holeAt plans the hole for the damaged record at pos of segment f, if it
// can be told apart (see above).
func (a *atRest) holeAt(rd *segReader, f segmentFile, pos int64, bad error) (hole, bool, error) {
	sc := a.sc()
	h := hole{seg: f, pos: pos}
	hdr, err := rd.at(pos, record.BlankSize)
	if err != nil || len(hdr) < record.BlankSize {
		return h, false, err
	}
	size := int64(binary.BigEndian.Uint32(hdr))
	if size < int64(record.MinSize) || pos+size+blankReserve > a.segSize {
		return h, false, nil
	}
	next, err := sc.findValid(rd, f.base, pos, a.segSize)
	if err != nil || next != f.base+pos+size {
		return h, false, err
	}
	old, err := rd.at(pos, int(size))
	if err != nil {
		return h, false, err
	}
	var rec record.Record
	if err := record.DecodeUnchecked(old, &rec); err != nil || rec.PhysOffset != f.base+pos || int64(rec.TotalSize) != size {
		return h, false, nil
	}
	h.size, h.topic, h.qid, h.qoff = int(size), string(rec.Topic), rec.QueueID, rec.QueueOffset
	h.old = append([]byte(nil), old...)
	bodyDamaged := record.BodyCRC(rec.Body) != rec.BodyCRC
	confirmed := bodyDamaged
	if indexed(rec.SysFlag) && validTopic(h.topic) {
		phys, n, ok, err := queueEntryAtRest(a.fs, filepath.Join(a.dir, "consumequeue"), h.topic, h.qid, h.qoff)
		if err != nil {
			return h, false, err
		}
		if ok { // an entry for that queue offset decides
			confirmed = phys == h.phys() && int64(n) == size
		}
	}
	if !confirmed || !validTopic(h.topic) {
		return h, false, nil
	}
	h.why = bad.Error()
	if bodyDamaged {
		h.why = "its body does not match its body CRC"
	}
	h.record = make([]byte, size)
	if err := record.EncodeHole(h.record, h.phys(), h.topic, h.qid, h.qoff, rec.SysFlag, rec.StoreTimestamp,
		"damaged at repair: "+h.why); err != nil {
		return h, false, nil
	}
	return h, true, nil
}

// validTopic: a topic a ConsumeQueue directory can be named after.
func validTopic(t string) bool {
	return t != "" && t != "." && t != ".." && !strings.ContainsAny(t, "/\\\x00")
}

// writeHoles moves each hole's damaged bytes to dir (lost+found) and
// writes the hole over them, durably.
func writeHoles(fsys vfs.FS, dir string, holes []hole) error {
	if len(holes) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return fmt.Errorf("storage: mkdir %s: %w", dir, err)
	}
	for _, h := range holes {
		name := filepath.Join(dir, fmt.Sprintf("damaged-%020d", h.phys()))
		if err := writeSynced(fsys, name, h.old); err != nil {
			return err
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", dir, err)
	}
	for _, h := range holes {
		f, err := fsys.Open(h.seg.path, vfs.OpenOptions{})
		if err != nil {
			return fmt.Errorf("storage: open %s: %w", h.seg.path, err)
		}
		_, err = f.WriteAt(h.record, h.pos)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("storage: write the hole at %d of %s: %w", h.pos, h.seg.path, err)
		}
	}
	return nil
}

// queueEntryAtRest reads the ConsumeQueue entry of (topic, qid) at qoff
// from its files as they lie; ok false when there is none.
func queueEntryAtRest(fsys vfs.FS, root, topic string, qid int32, qoff int64) (phys int64, size int32, ok bool, err error) {
	dir := filepath.Join(root, topic, strconv.FormatInt(int64(qid), 10))
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("storage: list %s: %w", dir, err)
	}
	want := qoff * consumequeue.EntrySize
	best, bestOff := "", int64(-1)
	for _, n := range names {
		off, err := strconv.ParseInt(n, 10, 64)
		if err == nil && len(n) == 20 && off%consumequeue.EntrySize == 0 && off <= want && off > bestOff {
			best, bestOff = n, off
		}
	}
	if best == "" {
		return 0, 0, false, nil
	}
	b, err := readFile(fsys, filepath.Join(dir, best))
	if err != nil {
		return 0, 0, false, fmt.Errorf("storage: read %s: %w", filepath.Join(dir, best), err)
	}
	at := want - bestOff
	if at+consumequeue.EntrySize > int64(len(b)) {
		return 0, 0, false, nil
	}
	e := b[at:]
	size = int32(binary.BigEndian.Uint32(e[8:]))
	return int64(binary.BigEndian.Uint64(e)), size, size != 0, nil
}
