package backend

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"unsafe"

	"github.com/samsamq/samsa/storage/vfs"
)

// The stage: a segment's write buffer in a shared mapping of a file
// (Config.StagePath), so that an appended byte is in the kernel's page
// cache the moment it is copied, as with mmap, while the segment file
// still gets its bytes in large writes (pwrite: one pwrite per buffer or
// per Flush under async; odirect and uring: aligned O_DIRECT writes of
// whole blocks, written behind the appender). A process crash then loses
// nothing appended, with no system call per append; a power loss loses
// what neither file had synced, as without a stage. Every staging backend
// uses this type and ReplayStage; only how the buffer maps segment offsets
// (the layout) differs.
//
// The stage file is a header page and the buffer:
//
//	0   magic "SMSSTAGE" (8 bytes, stored last at creation)
//	8   base:    every segment byte below it is in the segment file
//	16  written: the segment's tail (the buffer holds [base, written))
//	24  boot ID: length (1 byte) and bytes (vfs.Booter), up to 63
//	88  layout (1 byte): 0 linear, 1 ring (see below)
//	96  ring size (8 bytes): the buffer's length, for the ring layout
//	4096 the buffer
//
// Layouts: linear (pwrite), the buffer's first byte is base's (a restart
// moves base to the tail, and with it the buffer's start); ring (odirect,
// uring), segment offset x lives at x modulo the ring size, so the
// appender fills the ring while the blocks below it are written out. A
// stage written before the layout byte existed has a zero there: linear,
// which is what it was.
//
// base and written are 8-byte stores into the mapping, made only by the
// segment's appender (so nothing but the appender writes the mapping):
// written after the bytes it covers are copied, base once the bytes below
// it are written to the segment file and before the appender reuses their
// room (so a replay of [base, written) always rewrites bytes the file
// already has or adds the missing ones). After a process crash the kernel
// has every store; after a reboot it may have any mix of old and new
// pages, so ReplayStage replays only a stage made in the current boot and
// otherwise drops it. The storage layer replays every stage before
// recovery reads the log, and a segment removes its stage once every byte
// in it is in the segment file (full, sealed, or Close).

const (
	stageHeader = 4096
	stageMagic  = "SMSSTAGE"
	maxBootID   = 63
	stageLayout = 88 // header offset of the layout byte
	stageRing   = 96 // header offset of the ring size
)

// stageLayoutKind says how a stage's buffer maps segment offsets.
type stageLayoutKind byte

const (
	layoutLinear stageLayoutKind = iota // buffer[0] is base's byte
	layoutRing                          // offset x at buffer[x % len]
)

// stage is a segment's mapped stage file.
type stage struct {
	f    vfs.File
	path string
	m    []byte // the whole mapping
	hdr  *stageHdr
}

// stageHdr overlays the header's base and written (8-byte aligned: a
// mapping starts on a page). Plain stores: one writer in this process (the
// segment's appender), no reader but a later process's ReplayStage, and
// the kernel holds every store that executed before the process died,
// aligned 8-byte ones whole.
type stageHdr struct {
	magic         [8]byte
	base, written int64
}

// openStage creates the stage file for a buffer of size bytes, laid out
// as layout, holding nothing yet from base on, and maps it. The file is
// reserved in full first: a store into a mapped page the file system
// cannot back would kill the process (SIGBUS), so a full disk refuses
// here instead.
func openStage(fsys vfs.FS, path string, size int, base int64, layout stageLayoutKind) (*stage, error) {
	boot, ok, err := vfs.BootID(fsys)
	if err != nil || !ok || len(boot) > maxBootID {
		return nil, fmt.Errorf("backend: stage %s: the file system names no boot (%v)", path, err)
	}
	f, err := fsys.Create(path, vfs.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("backend: stage create: %w", err)
	}
	st := &stage{f: f, path: path}
	mp, ok := f.(vfs.Mapper)
	if !ok {
		return nil, st.fail(fsys, fmt.Errorf("backend: stage %s: the file cannot be mapped", path))
	}
	n := stageHeader + size
	if err := f.Allocate(0, int64(n)); err != nil {
		return nil, st.fail(fsys, fmt.Errorf("backend: stage %s: reserve %d bytes: %w", path, n, err))
	}
	if st.m, err = mp.Map(n); err != nil {
		return nil, st.fail(fsys, fmt.Errorf("backend: stage %s: map: %w", path, err))
	}
	st.hdr = (*stageHdr)(unsafe.Pointer(&st.m[0]))
	st.m[24] = byte(len(boot))
	copy(st.m[25:], boot)
	st.m[stageLayout] = byte(layout)
	binary.NativeEndian.PutUint64(st.m[stageRing:], uint64(size))
	st.hdr.base, st.hdr.written = base, base
	copy(st.hdr.magic[:], stageMagic)
	return st, nil
}

// setBase records that every byte below base is in the segment file (the
// appender, before it reuses their room).
func (st *stage) setBase(base int64) { st.hdr.base = base }

// setWritten records that the buffer holds the bytes up to written (the
// appender, after copying them).
func (st *stage) setWritten(written int64) { st.hdr.written = written }

// reset makes the stage hold nothing, from off on, where off is at or
// past written and every byte below off is in the segment file (linear:
// the buffer now starts at off). Base goes first: a header whose base is
// at or past its written claims nothing.
func (st *stage) reset(off int64) {
	st.hdr.base = off
	st.hdr.written = off
}

// buf is the stage's buffer.
func (st *stage) buf() []byte { return st.m[stageHeader:] }

// fail closes and removes a stage that could not be set up; it returns err.
func (st *stage) fail(fsys vfs.FS, err error) error {
	_ = st.f.Close()
	_ = fsys.Remove(st.path)
	return err
}

// close unmaps and closes the stage, and removes its file if remove (every
// byte it holds is in the segment file).
func (st *stage) close(fsys vfs.FS, remove bool) error {
	var errs []error
	if st.m != nil {
		errs = append(errs, st.f.(vfs.Mapper).Unmap(st.m))
		st.m, st.hdr = nil, nil
	}
	errs = append(errs, st.f.Close())
	if remove {
		if err := fsys.Remove(st.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("backend: remove stage %s: %w", st.path, err))
		}
	}
	return errors.Join(errs...)
}

// StageReplay is what ReplayStage did with one stage file.
type StageReplay struct {
	// From and To: the segment bytes [From, To) the stage held, written
	// to the segment file (Replayed) or not.
	From, To int64
	Replayed bool
	// Why, when not replayed: another boot made it, or it is damaged.
	Why string
}

// ReplayStage writes the bytes a stage file holds into its segment file
// if the stage was made in the current boot (see the stage's comment),
// then removes the stage. A stage file of another boot, a torn header or
// a missing segment file is removed without writing anything (what it
// held was never synced: a power loss may take it, as it may take the
// segment's unsynced bytes). The caller syncs neither: the bytes are
// where a process crash had left them, in the page cache.
func ReplayStage(fsys vfs.FS, stagePath, segPath string, capacity int64) (StageReplay, error) {
	var r StageReplay
	why, err := replayStage(fsys, stagePath, segPath, capacity, &r)
	if err != nil {
		return r, err
	}
	r.Why = why
	if err := fsys.Remove(stagePath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return r, fmt.Errorf("backend: remove stage %s: %w", stagePath, err)
	}
	return r, nil
}

func replayStage(fsys vfs.FS, stagePath, segPath string, capacity int64, r *StageReplay) (why string, err error) {
	f, err := fsys.Open(stagePath, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		return "", fmt.Errorf("backend: open stage: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	size, err := f.Size()
	if err != nil {
		return "", fmt.Errorf("backend: stage %s: %w", stagePath, err)
	}
	if size < stageHeader {
		return "no header", nil
	}
	var h [stageHeader]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return "", fmt.Errorf("backend: read stage %s: %w", stagePath, err)
	}
	if !bytes.Equal(h[:8], []byte(stageMagic)) {
		return "no header", nil
	}
	r.From = int64(binary.NativeEndian.Uint64(h[8:]))
	r.To = int64(binary.NativeEndian.Uint64(h[16:]))
	n := int(h[24])
	boot, ok, err := vfs.BootID(fsys)
	if err != nil || !ok || n > maxBootID || string(h[25:25+n]) != boot {
		return "made in another boot", nil
	}
	bufLen := size - stageHeader
	layout := stageLayoutKind(h[stageLayout])
	if layout == layoutRing {
		ring := int64(binary.NativeEndian.Uint64(h[stageRing:]))
		if ring <= 0 || ring > bufLen {
			return fmt.Sprintf("ring size %d out of range (%d-byte stage)", ring, size), nil
		}
		bufLen = ring
	} else if layout != layoutLinear {
		return fmt.Sprintf("unknown layout %d", layout), nil
	}
	if r.To <= r.From {
		// Nothing, or a base moved past written just before the crash
		// (every byte below base is in the segment file).
		r.To = max(r.To, r.From)
		return "empty", nil
	}
	if r.From < 0 || r.To > capacity || r.To-r.From > bufLen {
		return fmt.Sprintf("header out of range (base %d, written %d, %d-byte buffer, %d-byte segment)", r.From, r.To, bufLen, capacity), nil
	}
	b := make([]byte, r.To-r.From)
	if err := readStageBuf(f, b, r.From, layout, bufLen); err != nil {
		return "", fmt.Errorf("backend: read stage %s: %w", stagePath, err)
	}
	seg, err := fsys.Open(segPath, vfs.OpenOptions{})
	if errors.Is(err, fs.ErrNotExist) {
		return "no segment file", nil
	}
	if err != nil {
		return "", fmt.Errorf("backend: stage replay: %w", err)
	}
	if _, err := seg.WriteAt(b, r.From); err != nil {
		_ = seg.Close()
		return "", fmt.Errorf("backend: stage replay into %s at %d: %w", segPath, r.From, err)
	}
	if err := seg.Close(); err != nil {
		return "", fmt.Errorf("backend: stage replay: close %s: %w", segPath, err)
	}
	r.Replayed = true
	return "", nil
}

// readStageBuf reads the segment bytes from off on (len(b) of them) out
// of a stage file's buffer laid out as layout (a ring of ring bytes).
func readStageBuf(f vfs.File, b []byte, off int64, layout stageLayoutKind, ring int64) error {
	if layout == layoutLinear {
		_, err := f.ReadAt(b, stageHeader)
		return err
	}
	for len(b) > 0 {
		pos := off % ring
		n := min(int64(len(b)), ring-pos)
		if _, err := f.ReadAt(b[:n], stageHeader+pos); err != nil {
			return err
		}
		b, off = b[n:], off+n
	}
	return nil
}
