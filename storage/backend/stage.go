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

// The stage: a pwrite segment's write buffer in a shared mapping of a
// file (Config.StagePath), so that an appended byte is in the kernel's
// page cache the moment it is copied, as with mmap, while the segment
// file still gets its bytes by one pwrite per buffer (per Flush under
// async). A process crash then loses nothing appended, with no system
// call per append; a power loss loses what neither file had synced, as
// without a stage.
//
// The stage file is a header page and the buffer:
//
//	0   magic "SMSSTAGE" (8 bytes, stored last at creation)
//	8   base:    the segment offset the buffer's first byte belongs to
//	16  written: the segment's tail (the buffer holds [base, written))
//	24  boot ID: length (1 byte) and bytes (vfs.Booter), up to 63
//	4096 the buffer
//
// base and written are 8-byte stores into the mapping: written after the
// bytes it covers are copied, base after the bytes below it are written
// to the segment file (so a replay of [base, written) always rewrites
// bytes the file already has or adds the missing ones). After a process
// crash the kernel has every store; after a reboot it may have any mix of
// old and new pages, so ReplayStage replays only a stage made in the
// current boot and otherwise drops it. The storage layer replays every
// stage before recovery reads the log, and a segment removes its stage
// once every byte in it is in the segment file (full, or Close).

const (
	stageHeader = 4096
	stageMagic  = "SMSSTAGE"
	maxBootID   = 63
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
// segment's appender, or a write-out under its lock), no reader but a
// later process's ReplayStage, and the kernel holds every store that
// executed before the process died, aligned 8-byte ones whole.
type stageHdr struct {
	magic         [8]byte
	base, written int64
}

// openStage creates the stage file for a buffer of size bytes starting at
// base and maps it. The file is reserved in full first: a store into a
// mapped page the file system cannot back would kill the process
// (SIGBUS), so a full disk refuses here instead.
func openStage(fsys vfs.FS, path string, size int, base int64) (*stage, error) {
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
	st.hdr.base, st.hdr.written = base, base
	copy(st.hdr.magic[:], stageMagic)
	return st, nil
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
	if r.From < 0 || r.To < r.From || r.To > capacity || r.To-r.From > size-stageHeader {
		return fmt.Sprintf("header out of range (base %d, written %d, %d-byte stage, %d-byte segment)", r.From, r.To, size, capacity), nil
	}
	if r.To == r.From {
		return "empty", nil
	}
	b := make([]byte, r.To-r.From)
	if _, err := f.ReadAt(b, stageHeader); err != nil {
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
