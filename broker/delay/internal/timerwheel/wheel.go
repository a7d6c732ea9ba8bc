package timerwheel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"github.com/samsamq/samsa/storage/vfs"
)

// Sizes and markers.
const (
	EntrySize = 48
	SlotSize  = 32
	magic     = 0x544D5231
)

// Options configure a Wheel.
type Options struct {
	Dir string
	FS  vfs.FS
	// PrecisionMs is one slot's span of time.
	PrecisionMs int64
	// Slots must exceed the longest delay over PrecisionMs, so no two
	// pending times share a slot.
	Slots int64
	// SegmentEntries is the entries per log segment. Default 1<<20 (48 MiB).
	SegmentEntries int64
}

// Entry is one pending timer.
type Entry struct {
	DeliverMs   int64 // the slot's start
	ExactMs     int64 // when it is due: in [DeliverMs, DeliverMs+precision)
	Phys        int64
	Size        int32
	QueueOffset int64
	Pos         int64 // its log position (set by Add and Slot)
}

// Checkpoint is what the timer loop has done: the next slot to read, the
// next timer-queue offset to enqueue, and (written by Wheel) the log end.
type Checkpoint struct {
	ReadMs      int64
	QueueOffset int64
	LogEnd      int64
	Clean       bool
}

type segment struct {
	base       int64
	f          vfs.File
	maxDeliver int64
}

// Wheel is an open timer log and wheel.
type Wheel struct {
	o     Options
	wheel vfs.File
	segs  []*segment
	end   int64 // the log's write position
	// LastQueueOffset is the highest queue offset in the log, -1 none.
	LastQueueOffset int64
	buf             [EntrySize]byte
}

func (w *Wheel) segSize() int64 { return w.o.SegmentEntries * EntrySize }
func (w *Wheel) logDir() string { return filepath.Join(w.o.Dir, "timerlog") }

// Open opens or creates the files under o.Dir, recovers them, and
// returns the wheel and the last checkpoint (zero when none).
func Open(o Options) (*Wheel, Checkpoint, error) {
	if o.SegmentEntries <= 0 {
		o.SegmentEntries = 1 << 20
	}
	if o.PrecisionMs <= 0 || o.Slots <= 0 {
		return nil, Checkpoint{}, errors.New("timerwheel: precision and slots must be positive")
	}
	w := &Wheel{o: o, LastQueueOffset: -1}
	if err := o.FS.MkdirAll(w.logDir()); err != nil {
		return nil, Checkpoint{}, err
	}
	cp, err := w.readCheckpoint()
	if err != nil {
		return nil, Checkpoint{}, err
	}
	// A checkpoint is clean once: a crash after this open must rebuild.
	clean := cp.Clean
	if clean {
		c := cp
		c.Clean = false
		if err := w.writeCheckpointFile(c); err != nil {
			return nil, Checkpoint{}, err
		}
	}
	wheelPath := filepath.Join(o.Dir, "timerwheel")
	wantSize := o.Slots * SlotSize
	if sz, err := o.FS.Stat(wheelPath); err != nil || sz != wantSize {
		clean = false // missing, or made with other settings
	}
	if !clean {
		if w.wheel, err = o.FS.Create(wheelPath, vfs.OpenOptions{}); err != nil {
			return nil, Checkpoint{}, err
		}
		if err := w.wheel.Truncate(wantSize); err != nil {
			_ = w.wheel.Close() // the next Open creates it again
			return nil, Checkpoint{}, err
		}
	} else if w.wheel, err = o.FS.Open(wheelPath, vfs.OpenOptions{}); err != nil {
		return nil, Checkpoint{}, err
	}
	if err := w.openLog(!clean); err != nil {
		_ = w.Close() // the open's error is the one to report
		return nil, Checkpoint{}, err
	}
	if clean && w.end != cp.LogEnd {
		// The log is not what the clean checkpoint said: rebuild.
		if err := w.Close(); err != nil {
			return nil, Checkpoint{}, err
		}
		if err := o.FS.Remove(wheelPath); err != nil {
			return nil, Checkpoint{}, err
		}
		return Open(o)
	}
	return w, cp, nil
}

// openLog opens the segments, finds the end (cutting a torn tail) and,
// with relink, links every entry into the wheel again.
func (w *Wheel) openLog(relink bool) error {
	names, err := w.o.FS.List(w.logDir())
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		base, err := strconv.ParseInt(n, 10, 64)
		if err != nil || len(n) != 20 {
			continue
		}
		f, err := w.o.FS.Open(filepath.Join(w.logDir(), n), vfs.OpenOptions{})
		if err != nil {
			return err
		}
		w.segs = append(w.segs, &segment{base: base, f: f, maxDeliver: -1})
	}
	if len(w.segs) == 0 {
		return nil
	}
	w.end = w.segs[0].base
	for i, g := range w.segs {
		if g.base != w.end {
			return fmt.Errorf("timerwheel: log segment %d where %d expected", g.base, w.end)
		}
		n, err := w.scan(g, relink)
		if err != nil {
			return err
		}
		w.end = g.base + n
		if n < w.segSize() {
			// A short segment ends the log; later ones (none in a sane
			// log) are dropped with the torn tail.
			for _, later := range w.segs[i+1:] {
				_ = later.f.Close() // removed next: its bytes are dropped
				if err := w.o.FS.Remove(w.segPath(later.base)); err != nil {
					return err
				}
			}
			w.segs = w.segs[:i+1]
			if err := g.f.Truncate(n); err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// scan reads g's valid entries; it returns the bytes they cover.
func (w *Wheel) scan(g *segment, relink bool) (int64, error) {
	const chunk = EntrySize * 4096
	buf := make([]byte, chunk)
	var off int64
	for off < w.segSize() {
		n, err := g.f.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := 0; i+EntrySize <= n; i += EntrySize {
			e, ok := decode(buf[i : i+EntrySize])
			if !ok {
				return off + int64(i), nil
			}
			e.Pos = g.base + off + int64(i)
			g.maxDeliver = max(g.maxDeliver, e.DeliverMs)
			w.LastQueueOffset = max(w.LastQueueOffset, e.QueueOffset)
			if relink {
				if err := w.link(&e); err != nil {
					return 0, err
				}
			}
		}
		if n < len(buf) {
			return off + int64(n/EntrySize*EntrySize), nil
		}
		off += int64(n)
	}
	return off, nil
}

func decode(b []byte) (Entry, bool) {
	if binary.BigEndian.Uint32(b) != magic || binary.BigEndian.Uint32(b[44:]) != crc32.ChecksumIEEE(b[:44]) {
		return Entry{}, false
	}
	e := Entry{Size: int32(binary.BigEndian.Uint32(b[4:])), DeliverMs: int64(binary.BigEndian.Uint64(b[16:])),
		Phys: int64(binary.BigEndian.Uint64(b[24:])), QueueOffset: int64(binary.BigEndian.Uint64(b[32:]))}
	e.ExactMs = e.DeliverMs + int64(binary.BigEndian.Uint32(b[40:]))
	return e, true
}

func prevOf(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[8:])) }

func (w *Wheel) segPath(base int64) string {
	return filepath.Join(w.logDir(), fmt.Sprintf("%020d", base))
}

type slot struct {
	time, first, last int64
	count             int32
}

func (w *Wheel) slotOff(deliverMs int64) int64 {
	return (deliverMs / w.o.PrecisionMs % w.o.Slots) * SlotSize
}

// readSlot returns the slot of deliverMs, empty when it holds another time.
func (w *Wheel) readSlot(deliverMs int64) (slot, error) {
	var b [SlotSize]byte
	if _, err := w.wheel.ReadAt(b[:], w.slotOff(deliverMs)); err != nil && !errors.Is(err, io.EOF) {
		return slot{}, err
	}
	s := slot{time: int64(binary.BigEndian.Uint64(b[:])), first: int64(binary.BigEndian.Uint64(b[8:])),
		last: int64(binary.BigEndian.Uint64(b[16:])), count: int32(binary.BigEndian.Uint32(b[24:]))}
	if s.time != deliverMs/w.o.PrecisionMs || s.count == 0 {
		return slot{time: deliverMs / w.o.PrecisionMs, first: -1, last: -1}, nil
	}
	return s, nil
}

func (w *Wheel) writeSlot(s slot) error {
	var b [SlotSize]byte
	binary.BigEndian.PutUint64(b[:], uint64(s.time))
	binary.BigEndian.PutUint64(b[8:], uint64(s.first))
	binary.BigEndian.PutUint64(b[16:], uint64(s.last))
	binary.BigEndian.PutUint32(b[24:], uint32(s.count))
	_, err := w.wheel.WriteAt(b[:], (s.time%w.o.Slots)*SlotSize)
	return err
}

// link makes e (already in the log at e.Pos) its slot's last entry.
func (w *Wheel) link(e *Entry) error {
	s, err := w.readSlot(e.DeliverMs)
	if err != nil {
		return err
	}
	if s.first < 0 {
		s.first = e.Pos
	}
	s.last = e.Pos
	s.count++
	return w.writeSlot(s)
}

// Add appends e to the log, chained to its slot, and makes it the slot's
// last entry. e.DeliverMs must be a slot start.
func (w *Wheel) Add(e Entry) (Entry, error) {
	s, err := w.readSlot(e.DeliverMs)
	if err != nil {
		return e, err
	}
	g, err := w.tail()
	if err != nil {
		return e, err
	}
	b := w.buf[:]
	binary.BigEndian.PutUint32(b, magic)
	binary.BigEndian.PutUint32(b[4:], uint32(e.Size))
	binary.BigEndian.PutUint64(b[8:], uint64(s.last))
	binary.BigEndian.PutUint64(b[16:], uint64(e.DeliverMs))
	binary.BigEndian.PutUint64(b[24:], uint64(e.Phys))
	binary.BigEndian.PutUint64(b[32:], uint64(e.QueueOffset))
	binary.BigEndian.PutUint32(b[40:], uint32(min(max(e.ExactMs-e.DeliverMs, 0), w.o.PrecisionMs-1)))
	binary.BigEndian.PutUint32(b[44:], crc32.ChecksumIEEE(b[:44]))
	if _, err := g.f.WriteAt(b, w.end-g.base); err != nil {
		return e, err
	}
	e.Pos = w.end
	w.end += EntrySize
	g.maxDeliver = max(g.maxDeliver, e.DeliverMs)
	w.LastQueueOffset = max(w.LastQueueOffset, e.QueueOffset)
	if s.first < 0 {
		s.first = e.Pos
	}
	s.last = e.Pos
	s.count++
	return e, w.writeSlot(s)
}

// tail returns the segment the next entry goes to, creating it.
func (w *Wheel) tail() (*segment, error) {
	if n := len(w.segs); n > 0 && w.end < w.segs[n-1].base+w.segSize() {
		return w.segs[n-1], nil
	} else if n > 0 {
		// Sync (the only one) only syncs the last segment: a full one is
		// made durable as the log leaves it.
		if err := w.segs[n-1].f.Sync(); err != nil {
			return nil, err
		}
	}
	f, err := w.o.FS.Create(w.segPath(w.end), vfs.OpenOptions{})
	if err != nil {
		return nil, err
	}
	if err := w.o.FS.SyncDir(w.logDir()); err != nil {
		_ = f.Close() // empty: nothing written to it
		return nil, err
	}
	g := &segment{base: w.end, f: f, maxDeliver: -1}
	w.segs = append(w.segs, g)
	return g, nil
}

// SlotCount is the number of entries of the slot starting at deliverMs.
func (w *Wheel) SlotCount(deliverMs int64) (int, error) {
	s, err := w.readSlot(deliverMs)
	return int(s.count), err
}

// Walk calls fn with the entries of the slot starting at deliverMs,
// newest first, at most batch at a time (fn must not keep the slice), so
// a slot of millions costs one batch of memory.
func (w *Wheel) Walk(deliverMs int64, batch int, fn func([]Entry) error) error {
	s, err := w.readSlot(deliverMs)
	if err != nil || s.last < 0 {
		return err
	}
	buf := make([]Entry, 0, batch)
	var b [EntrySize]byte
	for pos, n := s.last, 0; pos >= 0 && n <= int(s.count); n++ {
		g := w.segmentAt(pos)
		if g == nil {
			break
		}
		if _, err := g.f.ReadAt(b[:], pos-g.base); err != nil {
			return err
		}
		e, ok := decode(b[:])
		if !ok || e.DeliverMs != deliverMs {
			return fmt.Errorf("timerwheel: bad entry at %d in the chain of slot %d", pos, deliverMs)
		}
		e.Pos = pos
		if buf = append(buf, e); len(buf) == batch {
			if err := fn(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		pos = prevOf(b[:])
	}
	if len(buf) > 0 {
		return fn(buf)
	}
	return nil
}

// Slot returns the entries due in the slot starting at deliverMs, oldest
// first.
func (w *Wheel) Slot(deliverMs int64) ([]Entry, error) {
	var out []Entry
	err := w.Walk(deliverMs, 1024, func(es []Entry) error {
		out = append(out, es...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

func (w *Wheel) segmentAt(pos int64) *segment {
	i := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].base > pos }) - 1
	if i < 0 || pos >= w.end {
		return nil
	}
	return w.segs[i]
}

// End is the log's write position.
func (w *Wheel) End() int64 { return w.end }

// Sync makes the log and the wheel durable.
func (w *Wheel) Sync() error {
	if n := len(w.segs); n > 0 {
		if err := w.segs[n-1].f.Sync(); err != nil {
			return err
		}
	}
	return w.wheel.Sync()
}

// Checkpoint syncs, then records cp with the log's end.
func (w *Wheel) Checkpoint(cp Checkpoint) error {
	if err := w.Sync(); err != nil {
		return err
	}
	cp.LogEnd = w.end
	return w.writeCheckpointFile(cp)
}

// Trim deletes the oldest segments whose every entry was due before
// readMs (their slots were read), never the one being written.
func (w *Wheel) Trim(readMs int64) (int, error) {
	n := 0
	for len(w.segs) > 1 && w.segs[0].maxDeliver < readMs {
		g := w.segs[0]
		// Removed, then closed: a segment whose removal failed stays open
		// in the log for the next Trim (and Close's check).
		if err := w.o.FS.Remove(w.segPath(g.base)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		_ = g.f.Close() // removed: every entry in it was due and read
		w.segs = w.segs[1:]
		n++
	}
	return n, nil
}

// Segments is the number of log segments on disk.
func (w *Wheel) Segments() int { return len(w.segs) }

// Close closes the files; with cp non-nil it first writes a clean
// checkpoint.
func (w *Wheel) Close(cp ...Checkpoint) error {
	var err error
	if len(cp) > 0 {
		c := cp[0]
		c.Clean = true
		err = w.Checkpoint(c)
	}
	// The files were written: a Close error can be a write's.
	for _, g := range w.segs {
		if cerr := g.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("timerwheel: close log segment %d: %w", g.base, cerr)
		}
	}
	if w.wheel != nil {
		if cerr := w.wheel.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("timerwheel: close the wheel: %w", cerr)
		}
	}
	return err
}

// checkpoint file: magic u32, readMs, queueOffset, logEnd i64, clean u8, crc u32.
func (w *Wheel) checkPath() string { return filepath.Join(w.o.Dir, "timercheck") }

func (w *Wheel) writeCheckpointFile(cp Checkpoint) error {
	b := make([]byte, 33+4)
	binary.BigEndian.PutUint32(b, magic)
	binary.BigEndian.PutUint64(b[4:], uint64(cp.ReadMs))
	binary.BigEndian.PutUint64(b[12:], uint64(cp.QueueOffset))
	binary.BigEndian.PutUint64(b[20:], uint64(cp.LogEnd))
	if cp.Clean {
		b[28] = 1
	}
	binary.BigEndian.PutUint32(b[33:], crc32.ChecksumIEEE(b[:33]))
	return vfs.WriteFileAtomic(w.o.FS, w.checkPath(), b)
}

func (w *Wheel) readCheckpoint() (Checkpoint, error) {
	f, err := w.o.FS.Open(w.checkPath(), vfs.OpenOptions{ReadOnly: true})
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, nil
	}
	if err != nil {
		return Checkpoint{}, err
	}
	defer func() { _ = f.Close() }() // read-only
	b := make([]byte, 37)
	if n, _ := f.ReadAt(b, 0); n < len(b) || binary.BigEndian.Uint32(b) != magic ||
		binary.BigEndian.Uint32(b[33:]) != crc32.ChecksumIEEE(b[:33]) {
		return Checkpoint{}, fmt.Errorf("timerwheel: %s is damaged", w.checkPath())
	}
	return Checkpoint{ReadMs: int64(binary.BigEndian.Uint64(b[4:])), QueueOffset: int64(binary.BigEndian.Uint64(b[12:])),
		LogEnd: int64(binary.BigEndian.Uint64(b[20:])), Clean: b[28] == 1}, nil
}
