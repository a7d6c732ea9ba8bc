package ha

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// The epoch file holds a broker's epoch list. It is rewritten whole and
// atomically (temp file, fsync, rename, fsync of the directory) at each
// change, which is rare: a master start, an epoch change seen by a slave,
// a truncation. Big-endian:
//
//	off  size  field   why
//	  0     8  MAGIC   "SAMSAEP1": format and version
//	  8     4  COUNT   entries, ≤ MaxEpochs
//	 12  16×n  ENTRIES EPOCH 8, START 8; epochs and starts strictly increasing
//	  .     4  CRC     CRC32 (IEEE) of everything before it
//
// No usable history. A missing, unreadable or corrupt file never stops
// the broker: a bad one is logged and moved aside (to <path>.corrupt) and
// the broker starts with an empty list, which is read conservatively:
//
//   - A slave with an empty list and a non-empty log cannot prove that
//     any of its log matches the master's: it discards it and copies
//     afresh (as a new slave does).
//   - A master with an empty list cannot know which epoch numbers were
//     used before, and reusing one with the same start would let a slave
//     keep bytes the master no longer has. It opens a fresh epoch whose
//     number comes from the clock (nanoseconds since 2020-01-01 UTC: far
//     above any counted epoch, and no two starts share one; later starts
//     count up from it) covering its whole retained log: no slave shares
//     it, so every slave copies afresh.
//
// A list longer than MaxEpochs merges its two oldest entries (the older
// start, the newer epoch), so the first entry still covers the oldest
// retained byte; a slave whose last shared epoch was among them copies
// afresh. A master's first entry always starts at or below its log's
// oldest byte; a list that does not (edited by hand) is no usable
// history.
type EpochFile struct {
	fs   vfs.FS
	path string
	log  *slog.Logger
	now  func() time.Time
	mu   sync.Mutex
	list []Epoch
	// maxEver is the highest epoch this file ever held: a master's next
	// epoch exceeds it even after truncation dropped it.
	maxEver uint64
}

const (
	epochMagic      = "SAMSAEP1"
	epochFileHeader = 12
	// epochClockBase is 2020-01-01 UTC (Unix seconds): a fresh epoch is
	// the nanoseconds since.
	epochClockBase = 1577836800
)

// OpenEpochFile loads the epoch file at path (created at the first
// change). It never fails for the file's content: see EpochFile.
func OpenEpochFile(fsys vfs.FS, path string, logger *slog.Logger) (*EpochFile, error) {
	if fsys == nil || path == "" {
		return nil, errors.New("ha: OpenEpochFile needs a file system and a path")
	}
	if logger == nil {
		logger = slog.Default()
	}
	f := &EpochFile{fs: fsys, path: path, log: logger, now: time.Now}
	list, err := f.load()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		logger.Info("ha: no epoch file: starting with no epoch history", "path", path)
	case err != nil:
		bad := path + ".corrupt"
		logger.Error("ha: epoch file unusable: moved aside, starting with no epoch history (a slave copies afresh, a master opens a fresh epoch)",
			"path", path, "movedTo", bad, "err", err)
		if rerr := fsys.Rename(path, bad); rerr != nil {
			logger.Error("ha: could not move the epoch file aside; it will be replaced", "path", path, "err", rerr)
		} else if serr := fsys.SyncDir(filepath.Dir(path)); serr != nil {
			logger.Warn("ha: could not sync the epoch file's directory", "path", path, "err", serr)
		}
	default:
		f.list = list
		if len(list) > 0 {
			f.maxEver = list[len(list)-1].Epoch
		}
	}
	return f, nil
}

func (f *EpochFile) load() ([]Epoch, error) {
	h, err := f.fs.Open(f.path, vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = h.Close() }()
	size, err := h.Size()
	if err != nil {
		return nil, err
	}
	if size > epochFileHeader+MaxEpochs*epochEntrySize+4 {
		return nil, fmt.Errorf("ha: epoch file of %d bytes", size)
	}
	b := make([]byte, size)
	if n, err := h.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, err
	}
	return decodeEpochFile(b)
}

func encodeEpochFile(list []Epoch) []byte {
	b := make([]byte, epochFileHeader+len(list)*epochEntrySize+4)
	copy(b, epochMagic)
	be.PutUint32(b[8:], uint32(len(list)))
	p := epochFileHeader
	for _, e := range list {
		be.PutUint64(b[p:], e.Epoch)
		be.PutUint64(b[p+8:], uint64(e.Start))
		p += epochEntrySize
	}
	be.PutUint32(b[p:], crc32.ChecksumIEEE(b[:p]))
	return b
}

func decodeEpochFile(b []byte) ([]Epoch, error) {
	if len(b) < epochFileHeader+4 || string(b[:8]) != epochMagic {
		return nil, fmt.Errorf("ha: epoch file of %d bytes without magic", len(b))
	}
	n := be.Uint32(b[8:])
	if n > MaxEpochs || len(b) != epochFileHeader+int(n)*epochEntrySize+4 {
		return nil, fmt.Errorf("ha: epoch file of %d bytes says %d entries", len(b), n)
	}
	p := len(b) - 4
	if crc32.ChecksumIEEE(b[:p]) != be.Uint32(b[p:]) {
		return nil, errors.New("ha: epoch file CRC mismatch")
	}
	list := make([]Epoch, n)
	for i := range list {
		q := epochFileHeader + i*epochEntrySize
		list[i] = Epoch{Epoch: be.Uint64(b[q:]), Start: int64(be.Uint64(b[q+8:]))}
	}
	if err := validEpochs(list); err != nil {
		return nil, fmt.Errorf("ha: epoch file: %w", err)
	}
	return list, nil
}

// Entries returns a copy of the list.
func (f *EpochFile) Entries() []Epoch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.list)
}

// Last returns the newest entry, if any.
func (f *EpochFile) Last() (Epoch, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.list) == 0 {
		return Epoch{}, false
	}
	return f.list[len(f.list)-1], true
}

// BeginMasterEpoch opens the epoch of a broker starting as master, whose
// log ends at written and retains bytes from minOffset: entries starting past
// written are dropped (the log lost them); the new epoch is one above any
// this file held, starting at written (replacing a last entry that holds
// nothing). With no epoch history the fresh clock epoch covers the whole
// retained log, from minOffset (see EpochFile). It returns the new entry once
// the file is durable.
func (f *EpochFile) BeginMasterEpoch(written, minOffset int64) (Epoch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := slices.Clone(f.list)
	for len(list) > 0 && list[len(list)-1].Start > written {
		list = list[:len(list)-1]
	}
	if len(list) > 0 && list[0].Start > minOffset {
		f.log.Error("ha: the epoch list starts above the log's oldest byte: treating it as no epoch history",
			"path", f.path, "firstEpoch", list[0].Epoch, "firstStart", list[0].Start, "minOffset", minOffset)
		list = nil
	}
	var e Epoch
	if len(list) == 0 {
		fresh := uint64(max(f.now().Sub(time.Unix(epochClockBase, 0)), 1))
		e = Epoch{Epoch: max(fresh, f.maxEver+1), Start: minOffset}
	} else {
		e = Epoch{Epoch: f.maxEver + 1, Start: written}
		if list[len(list)-1].Start == written {
			list = list[:len(list)-1]
		}
	}
	list = append(list, e)
	if err := f.storeLocked(list); err != nil {
		return Epoch{}, err
	}
	return e, nil
}

// BeginMasterEpochAt opens epoch, given from outside (the fail-over
// controller's master epoch: +1 at every master change of the group), for a
// broker becoming master whose log ends at written and retains bytes from
// minOffset. Entries starting past written are dropped (the log lost them),
// as a last entry that would hold nothing (starting at written). epoch must
// be above every epoch this file ever held: an epoch number names one
// master's log, and reusing one would let a slave keep bytes this master no
// longer has; a lower or equal one is refused with ErrEpochNotAbove and
// nothing changes. With no epoch history (or a list that starts above the
// log's oldest byte) the epoch covers the whole retained log, from
// minOffset: no slave shares it, so every slave copies afresh. It returns
// the new entry once the file is durable.
func (f *EpochFile) BeginMasterEpochAt(epoch uint64, written, minOffset int64) (Epoch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if epoch == 0 || epoch <= f.maxEver {
		return Epoch{}, fmt.Errorf("%w: epoch %d, this broker already held epoch %d", ErrEpochNotAbove, epoch, f.maxEver)
	}
	if written < minOffset {
		return Epoch{}, fmt.Errorf("ha: BeginMasterEpochAt: log ends at %d below its oldest byte %d", written, minOffset)
	}
	list := slices.Clone(f.list)
	for len(list) > 0 && list[len(list)-1].Start > written {
		list = list[:len(list)-1]
	}
	if len(list) > 0 && list[0].Start > minOffset {
		f.log.Error("ha: the epoch list starts above the log's oldest byte: treating it as no epoch history",
			"path", f.path, "firstEpoch", list[0].Epoch, "firstStart", list[0].Start, "minOffset", minOffset)
		list = nil
	}
	e := Epoch{Epoch: epoch, Start: written}
	if len(list) == 0 {
		e.Start = minOffset
	} else if list[len(list)-1].Start == written {
		list = list[:len(list)-1]
	}
	list = append(list, e)
	if err := f.storeLocked(list); err != nil {
		return Epoch{}, err
	}
	return e, nil
}

// MaxEpoch is the highest epoch this file ever held (0 for none): a
// controller-mode broker registers with it, and a master epoch given to it
// must be above it.
func (f *EpochFile) MaxEpoch() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxEver
}

// Record applies the epoch of a transfer frame whose data starts at at,
// the slave's log end (see recordEpoch); the file is durable before it
// returns, so the data it covers can follow.
func (f *EpochFile) Record(e Epoch, at int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.list); n > 0 && f.list[n-1] == e && e.Start <= at {
		return nil // the common case: the epoch goes on
	}
	list, changed, err := recordEpoch(slices.Clone(f.list), e, at)
	if err != nil || !changed {
		return err
	}
	return f.storeLocked(list)
}

// TruncateFrom drops the entries starting at or past off, after the log
// was cut there.
func (f *EpochFile) TruncateFrom(off int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := TruncateEpochs(slices.Clone(f.list), off)
	if len(list) == len(f.list) {
		return nil
	}
	return f.storeLocked(list)
}

// Reset empties the list, before a slave discards its log.
func (f *EpochFile) Reset() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.storeLocked(nil)
}

// storeLocked writes list (trimmed to MaxEpochs) and makes it current.
func (f *EpochFile) storeLocked(list []Epoch) error {
	for len(list) > MaxEpochs {
		list[1].Start = list[0].Start
		list = list[1:]
	}
	if err := validEpochs(list); err != nil {
		return fmt.Errorf("ha: internal: epoch list: %w", err)
	}
	if err := vfs.WriteFileAtomic(f.fs, f.path, encodeEpochFile(list)); err != nil {
		return err
	}
	f.list = list
	if len(list) > 0 {
		f.maxEver = max(f.maxEver, list[len(list)-1].Epoch)
	}
	return nil
}
