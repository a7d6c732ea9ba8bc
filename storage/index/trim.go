package index

import (
	"errors"
	"fmt"
	"io/fs"
)

// TruncateFrom drops every entry of a record at or past cut (the log was
// cut there: recovery's torn tail, a replica's TruncateTo or ResetTo) and
// moves End back to cut, durably: the checkpoint is written before it
// returns, so a crash cannot bring the entries back.
func (x *Index) TruncateFrom(cut int64) error {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	x.mu.Lock()
	if x.mu.closed {
		x.mu.Unlock()
		return ErrClosed
	}
	if cut >= x.mu.end {
		x.mu.Unlock()
		return nil
	}
	err := x.truncateLocked(cut)
	x.mu.Unlock()
	if err != nil {
		return err
	}
	return x.flushOrForget()
}

func (x *Index) truncateLocked(cut int64) error {
	files := x.mu.files
	for len(files) > 0 && files[len(files)-1].beginPhys >= cut {
		f := files[len(files)-1]
		_ = f.f.Close() // removed next: nothing in it is kept
		if err := x.fs.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("index: remove %s: %w", f.path, err)
		}
		files = files[:len(files)-1]
		x.mu.files = files
		x.mu.dirDirty = true
	}
	x.mu.end = cut
	if len(files) == 0 {
		return nil
	}
	f := files[len(files)-1]
	x.mu.endTs = f.endTs
	if f.endPhys < cut {
		return nil
	}
	// The first entry at or past cut (PHYS grows along the file).
	lo, hi := uint32(1), f.count+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := f.entry(mid)
		if err != nil {
			return err
		}
		if e.phys >= cut {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	keep := lo - 1
	if err := f.writePending(); err != nil {
		return err
	}
	if err := f.f.Truncate(f.entryOff(keep + 1)); err != nil {
		return fmt.Errorf("index: truncate %s: %w", f.path, err)
	}
	f.count, f.written, f.sealed, f.dirty = keep, keep, false, true
	if err := f.rebuildSlots(); err != nil {
		return err
	}
	x.mu.endTs = f.endTs
	return nil
}

// DeleteBefore removes the files whose every entry lies below minPhys
// (the log's first offset), never the newest one. The checkpoint stops
// listing them before they go.
func (x *Index) DeleteBefore(minPhys int64) (int, error) {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	x.mu.Lock()
	if x.mu.closed {
		x.mu.Unlock()
		return 0, ErrClosed
	}
	n := 0
	for n < len(x.mu.files)-1 && x.mu.files[n].endPhys < minPhys {
		n++
	}
	if n == 0 {
		x.mu.Unlock()
		return 0, nil
	}
	gone := x.mu.files[:n:n]
	x.mu.files = x.mu.files[n:]
	x.mu.Unlock()
	if err := x.flushLocked(true); err != nil {
		x.mu.Lock()
		x.mu.files = append(gone, x.mu.files...)
		x.mu.Unlock()
		return 0, err
	}
	var errs []error
	for _, f := range gone {
		_ = f.f.Close() // flushed above and removed next
		if err := x.fs.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("index: remove %s: %w", f.path, err))
		}
	}
	x.mu.Lock()
	x.mu.dirDirty = true // the next checkpoint syncs the removals
	x.mu.Unlock()
	return n, errors.Join(errs...)
}
