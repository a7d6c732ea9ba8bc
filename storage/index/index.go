package index

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/samsamq/samsa/storage/vfs"
)

// ErrClosed is returned by calls on a closed Index.
var ErrClosed = errors.New("index: closed")

// Index is an open key index. See the package comment for who may call
// what concurrently.
type Index struct {
	opts Options
	fs   vfs.FS
	dir  string

	// flushMu serializes Flush, TruncateFrom, DeleteBefore and Close (the
	// calls that sync, write the checkpoint or remove files). Lock order:
	// flushMu, mu.
	flushMu sync.Mutex
	last    checkpoint // the last checkpoint written (flushMu)

	mu struct {
		sync.RWMutex
		files    []*file // oldest first; the last one is active unless sealed
		end      int64   // every record below it is indexed
		endTs    int64   // store time of the last record indexed
		dirDirty bool    // a file was created or removed since the checkpoint
		closed   bool
	}
}

// Hash is the index hash of key in topic: FNV-1a (32 bits) of
// "topic#key" (RocketMQ's buildKey).
func Hash(topic string, key []byte) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(topic); i++ {
		h = (h ^ uint32(topic[i])) * 16777619
	}
	h = (h ^ '#') * 16777619
	for _, c := range key {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

// Open opens (or creates) the index in opts.Dir and recovers it from its
// checkpoint (see the package comment): the caller then indexes the log
// from End.
func Open(opts Options) (*Index, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	x := &Index{opts: opts, fs: opts.FS, dir: opts.Dir}
	if err := x.fs.MkdirAll(x.dir); err != nil {
		return nil, fmt.Errorf("index: mkdir %s: %w", x.dir, err)
	}
	if err := x.fs.SyncDir(filepath.Dir(x.dir)); err != nil {
		return nil, fmt.Errorf("index: sync dir %s: %w", filepath.Dir(x.dir), err)
	}
	if err := x.recover(); err != nil {
		_ = x.closeFiles()
		return nil, err
	}
	return x, nil
}

// recover loads the checkpoint's files (see the package comment).
func (x *Index) recover() error {
	ck, ok, err := readCheckpoint(x.fs, x.dir)
	if err != nil {
		return err
	}
	if !ok {
		ck = checkpoint{}
	}
	listed := map[string]bool{ckName: true}
	for _, f := range ck.files {
		listed[f.name] = true
	}
	names, err := x.fs.List(x.dir)
	if err != nil {
		return fmt.Errorf("index: list %s: %w", x.dir, err)
	}
	removed := 0
	for _, n := range names {
		if listed[n] {
			continue
		}
		if err := x.fs.Remove(filepath.Join(x.dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("index: remove %s: %w", n, err)
		}
		if !strings.HasSuffix(n, ".tmp") {
			removed++
		}
	}
	end, endTs := ck.end, ck.endTs
	for i, c := range ck.files {
		f, err := x.loadFile(c, ck.clean, i == len(ck.files)-1)
		if err != nil {
			// Not to be trusted: drop it and every later file; the caller
			// indexes the log again from where it began.
			x.opts.Logger.Warn("index: dropping a damaged file and the ones after it; the log is indexed again from its start",
				"file", c.name, "err", err)
			for _, c2 := range ck.files[i:] {
				if err := x.fs.Remove(filepath.Join(x.dir, c2.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("index: remove %s: %w", c2.name, err)
				}
				removed++
			}
			end = 0
			if i > 0 {
				// From the last record the file before holds (End must be a
				// record's start): its keys are put again, duplicates the
				// caller's check drops.
				end = x.mu.files[i-1].endPhys
				endTs = x.mu.files[i-1].endTs
			}
			break
		}
		x.mu.files = append(x.mu.files, f)
	}
	if end > ck.end {
		end = ck.end
	}
	x.mu.end, x.mu.endTs = end, endTs
	if removed > 0 {
		x.mu.dirDirty = true
		x.opts.Logger.Info("index: removed files the checkpoint does not list", "dir", x.dir, "files", removed)
	}
	// From now on the slot tables on file are not the truth for the active
	// file: a crash must find an unclean checkpoint, or none.
	x.last = checkpoint{end: -1}
	return x.flushOrForget()
}

// flushOrForget writes the checkpoint now; if it cannot (a full disk), it
// removes the old one, which may no longer be true, so that a crash before
// the next Flush rebuilds the index from the log rather than trust it.
// Callers hold flushMu.
func (x *Index) flushOrForget() error {
	err := x.flushLocked(true)
	if err == nil {
		return nil
	}
	p := filepath.Join(x.dir, ckName)
	if rerr := x.fs.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return errors.Join(err, rerr)
	}
	if serr := x.fs.SyncDir(x.dir); serr != nil {
		return errors.Join(err, serr)
	}
	x.last = checkpoint{end: -1}
	x.opts.Logger.Warn("index: checkpoint failed; removed the old one (a crash before the next flush rebuilds the index)", "err", err)
	return nil
}

// loadFile opens the checkpointed file c and makes it as the checkpoint
// says (cut to its entries; the active one's slot table in memory).
func (x *Index) loadFile(c ckFile, clean, last bool) (*file, error) {
	f, err := openFile(x.fs, x.dir, c.name)
	if err != nil {
		return nil, err
	}
	err = func() error {
		if c.count > f.maxN {
			return fmt.Errorf("%w: %s: %d entries, room for %d", ErrCorrupt, f.path, c.count, f.maxN)
		}
		f.count, f.written, f.endPhys, f.endTs, f.sealed = c.count, c.count, c.endPhys, c.endTs, c.sealed
		size, err := f.f.Size()
		if err != nil {
			return fmt.Errorf("index: size of %s: %w", f.path, err)
		}
		want := f.entryOff(c.count + 1)
		if size < want && c.count > 0 {
			return fmt.Errorf("%w: %s: %d bytes, %d entries need %d", ErrCorrupt, f.path, size, c.count, want)
		}
		if size > want {
			if err := f.f.Truncate(want); err != nil {
				return fmt.Errorf("index: truncate %s: %w", f.path, err)
			}
			f.dirty = true
		}
		if c.sealed {
			return nil
		}
		if clean && c.slotsOK {
			err = f.loadSlots()
		} else {
			err = f.rebuildSlots()
			f.endPhys, f.endTs = c.endPhys, c.endTs
		}
		if err != nil || last {
			return err
		}
		// An unsealed file before the last: seal it now.
		if err := f.writeSlots(); err != nil {
			return err
		}
		f.slots, f.sealed = nil, true
		return nil
	}()
	if err != nil {
		_ = f.f.Close()
		return nil, err
	}
	return f, nil
}

// End is the log offset below which every record is indexed.
func (x *Index) End() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.mu.end
}

// LastUpdate returns the store time (ms) and offset of the last record
// indexed (RocketMQ's indexLastUpdateTimestamp and -Phyoffset).
func (x *Index) LastUpdate() (ts, phys int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if n := len(x.mu.files); n > 0 {
		phys = x.mu.files[n-1].endPhys
	}
	return x.mu.endTs, phys
}

// Put indexes the record [phys, end) stored at ts (ms) under hashes (one
// per key; see Hash). A record below End is already indexed: a no-op. A
// record with no hashes still moves End. On an error nothing changed.
func (x *Index) Put(phys, end, ts int64, hashes []uint32) error {
	_, err := x.put(phys, end, ts, hashes, false)
	return err
}

// PutNext is Put of the record that starts where the index ends (End):
// it puts nothing and says false if phys is not End.
func (x *Index) PutNext(phys, end, ts int64, hashes []uint32) (bool, error) {
	return x.put(phys, end, ts, hashes, true)
}

func (x *Index) put(phys, end, ts int64, hashes []uint32, next bool) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.closed {
		return false, ErrClosed
	}
	if next && phys != x.mu.end {
		return false, nil
	}
	if phys < x.mu.end {
		return true, nil
	}
	if len(hashes) > 0 {
		if len(hashes) > x.opts.MaxEntries {
			hashes = hashes[:x.opts.MaxEntries]
		}
		a, err := x.activeLocked(len(hashes), phys, ts)
		if err != nil {
			return true, err
		}
		if len(a.pend) >= writeChunk {
			if err := a.writePending(); err != nil && len(a.pend) >= maxPending {
				return true, err
			}
		}
		for _, h := range hashes {
			a.add(h, phys, ts)
		}
	}
	x.mu.end, x.mu.endTs = end, max(x.mu.endTs, ts)
	return true, nil
}

// activeLocked returns the file the next n entries go to, rolling to a
// new one (named by ts) if the active one has no room.
func (x *Index) activeLocked(n int, phys, ts int64) (*file, error) {
	files := x.mu.files
	if k := len(files); k > 0 && !files[k-1].sealed && int(files[k-1].count)+n <= int(files[k-1].maxN) {
		return files[k-1], nil
	}
	name := fileName(ts)
	if k := len(files); k > 0 {
		old := files[k-1]
		if !old.sealed {
			if err := x.sealLocked(old); err != nil {
				return nil, err
			}
		}
		if name <= old.name { // names only grow, even if two files begin in one ms
			name = nextName(old.name)
		}
	}
	f, err := createFile(x.fs, x.dir, name, uint32(x.opts.MaxHashSlots), uint32(x.opts.MaxEntries), ts, phys)
	if err != nil {
		return nil, err
	}
	x.mu.files = append(x.mu.files, f)
	return f, nil
}

// nextName is a name after prev (the next ms).
func nextName(prev string) string {
	b := []byte(prev)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < '9' {
			b[i]++
			return string(b)
		}
		b[i] = '0'
	}
	return "1" + string(b)
}

// sealLocked writes f's entries and slot table and syncs it: from now on
// its file is the truth.
func (x *Index) sealLocked(f *file) error {
	if err := f.writePending(); err != nil {
		return err
	}
	if err := f.writeSlots(); err != nil {
		return err
	}
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("index: sync %s: %w", f.path, err)
	}
	f.slots, f.sealed, f.dirty = nil, true, false
	return nil
}

// Lookup returns the CommitLog offsets of up to limit entries with hash
// whose store time may lie in [begin, end] (ms; the index keeps seconds,
// so the caller checks the record's time), newest first. They are
// candidates: the caller checks each record's keys.
func (x *Index) Lookup(hash uint32, begin, end int64, limit int) ([]int64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.mu.closed {
		return nil, ErrClosed
	}
	var out []int64
	for i := len(x.mu.files) - 1; i >= 0 && len(out) < limit; i-- {
		f := x.mu.files[i]
		if !f.timeMatch(begin, end) {
			continue
		}
		n, err := f.slot(hash % f.nslots)
		if err != nil {
			return out, err
		}
		for n > 0 && n <= f.count && len(out) < limit {
			e, err := f.entry(n)
			if err != nil {
				return out, err
			}
			t := f.beginTs + int64(e.diff)*1000
			if t+999 < begin {
				break // older along the chain are older still
			}
			if e.hash == hash && t <= end {
				out = append(out, e.phys)
			}
			if e.prev >= n {
				break // a chain only goes back
			}
			n = e.prev
		}
	}
	return out, nil
}

// Flush writes the buffered entries, syncs the files written to and
// writes the checkpoint.
func (x *Index) Flush() error {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	return x.flushLocked(false)
}

// flushLocked is Flush (force: write the checkpoint even if it would say
// what the last one said); callers hold flushMu.
func (x *Index) flushLocked(force bool) error {
	x.mu.Lock()
	if x.mu.closed {
		x.mu.Unlock()
		return ErrClosed
	}
	var sync []*file
	for _, f := range x.mu.files {
		if err := f.writePending(); err != nil {
			x.mu.Unlock()
			return err
		}
		if f.dirty {
			sync = append(sync, f)
			f.dirty = false
		}
	}
	ck := x.snapshotLocked(false)
	dirDirty := x.mu.dirDirty
	x.mu.dirDirty = false
	x.mu.Unlock()
	err := x.syncAndCheckpoint(sync, dirDirty, &ck, force)
	if err != nil {
		x.mu.Lock()
		for _, f := range sync {
			f.dirty = true
		}
		x.mu.dirDirty = x.mu.dirDirty || dirDirty
		x.mu.Unlock()
	}
	return err
}

// syncAndCheckpoint syncs files (outside mu: Sync may run beside writes)
// and writes ck unless it says what the last one said.
func (x *Index) syncAndCheckpoint(files []*file, dirDirty bool, ck *checkpoint, force bool) error {
	for _, f := range files {
		if err := f.f.Sync(); err != nil {
			return fmt.Errorf("index: sync %s: %w", f.path, err)
		}
	}
	if dirDirty {
		if err := x.fs.SyncDir(x.dir); err != nil {
			return fmt.Errorf("index: sync dir %s: %w", x.dir, err)
		}
	}
	if !force && sameCheckpoint(&x.last, ck) {
		return nil
	}
	if err := writeCheckpoint(x.fs, x.dir, ck); err != nil {
		return err
	}
	x.last = *ck
	return nil
}

func sameCheckpoint(a, b *checkpoint) bool {
	if a.clean != b.clean || a.end != b.end || len(a.files) != len(b.files) {
		return false
	}
	for i := range a.files {
		if a.files[i] != b.files[i] {
			return false
		}
	}
	return true
}

// snapshotLocked is the checkpoint of the state now; callers hold mu and
// wrote every file's pending entries.
func (x *Index) snapshotLocked(clean bool) checkpoint {
	ck := checkpoint{clean: clean, end: x.mu.end, endTs: x.mu.endTs}
	for _, f := range x.mu.files {
		ck.files = append(ck.files, ckFile{name: f.name, count: f.count, endPhys: f.endPhys, endTs: f.endTs, sealed: f.sealed,
			slotsOK: clean && (f.sealed || f.slotsOK)})
	}
	return ck
}

// Close writes everything (the active file's slot table too) and a clean
// checkpoint, and closes the files. Close is idempotent.
func (x *Index) Close() error {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	x.mu.Lock()
	if x.mu.closed {
		x.mu.Unlock()
		return nil
	}
	err := func() error {
		for _, f := range x.mu.files {
			if err := f.writePending(); err != nil {
				return err
			}
			if !f.sealed && f.slotsWorthWriting() {
				if err := f.writeSlots(); err != nil {
					return err
				}
				f.slotsOK = true
			}
			if f.dirty {
				if err := f.f.Sync(); err != nil {
					return fmt.Errorf("index: sync %s: %w", f.path, err)
				}
			}
		}
		if x.mu.dirDirty {
			if err := x.fs.SyncDir(x.dir); err != nil {
				return err
			}
		}
		ck := x.snapshotLocked(true)
		return writeCheckpoint(x.fs, x.dir, &ck)
	}()
	x.mu.closed = true
	x.mu.Unlock()
	if cerr := x.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

func (x *Index) closeFiles() error {
	var errs []error
	for _, f := range x.mu.files {
		if err := f.f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	x.mu.files = nil
	return errors.Join(errs...)
}
