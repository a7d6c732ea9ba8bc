package sim

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// flipped is a bit flipped in a replica's log: the record's range.
type flipped struct {
	from, to int64
}

// bitFlip cuts a slave's power (a minority replica: one of three), flips
// one bit in the body of an acknowledged record it synced since its last
// verification, as a disk's rot would while it is down, and starts it
// again. Its restart must find the damage (InvFlipDetected); meanwhile
// and after, no election may take it while it lacks the record
// (InvElectedHoldsAcked: the flipped copy is not the record).
func (f *failover) bitFlip(master *replica) error {
	f.faultBegins("a bit flip")
	// Not the master the controller names either (one fenced by a cut
	// may not be the one that takes writes), nor the sync-state set's
	// only member: its loss could be the only copy of what the set holds,
	// which no flush mode promises against.
	named, only := int64(-1), int64(-1)
	if r, ok := f.ctlShow(); ok {
		named = r.MasterID
		if len(r.SyncSet) == 1 {
			only = r.SyncSet[0] // the set's only member: its copy may be the only one
		}
	}
	var q *replica
	for _, i := range f.rng.Perm(groupSize) {
		if p := f.reps[i]; p != master && p.id != named && p.id != only && p.up() {
			q = p
			break
		}
	}
	if q == nil {
		return nil
	}
	// The machine loses power (a process crash would leave the pwrite
	// backend's stage, replayed over the flip at the restart), then a
	// bit of a record it synced, written since its last verification,
	// rots.
	mark := q.store.VerifiedOffset()
	end := q.store.WrittenOffset()
	q.quiesce()
	img := q.fs.CrashClone(f.rng)
	q.closeStore()
	q.fs = img
	q.staleEnd = end
	f.mu.Lock()
	var cands []int64
	for _, off := range f.promisedLocked() {
		if r := f.mu.acked[off]; off >= mark && r.bodyAt > 0 && onFile(img, q.name, off, r.data) {
			cands = append(cands, off)
		}
	}
	var (
		target int64
		rec    *ackedRec
	)
	if len(cands) > 0 {
		target = cands[f.rng.Intn(len(cands))]
		rec = f.mu.acked[target]
	}
	f.mu.Unlock()
	if rec == nil {
		f.tracef("power loss of %s; it synced no acknowledged record past its verified mark %d to flip", q.name, mark)
		time.Sleep(time.Duration(f.rng.Intn(2000)) * time.Millisecond)
		return q.open()
	}
	body := len(rec.data) - rec.bodyAt
	pos := target + int64(rec.bodyAt) + int64(f.rng.Intn(max(1, min(body, 64))))
	if err := flipBit(img, q.name, pos, byte(1)<<f.rng.Intn(8)); err != nil {
		return err
	}
	f.tracef("power loss of %s, and a bit flip in its log at %d (the record acknowledged at %d) while it is down", q.name, pos, target)
	f.mu.Lock()
	f.mu.flips[q.id] = append(f.mu.flips[q.id], flipped{from: target, to: target + int64(len(rec.data))})
	f.mu.Unlock()
	time.Sleep(time.Duration(f.rng.Intn(2000)) * time.Millisecond)
	q.flipped = true
	err := q.open()
	q.flipped = false
	if err != nil {
		return err
	}
	return f.checkFlipFound(q, target, int64(len(rec.data)))
}

// onFile: replica name's commit log file in fs holds data at off.
func onFile(fs *vfs.MemFS, name string, off int64, data []byte) bool {
	const seg = 64 << 10 // storeOptions' SegmentSize
	base := off - off%seg
	fl, err := fs.Open(filepath.Join("/"+name, "commitlog", fmt.Sprintf("%020d", base)), vfs.OpenOptions{ReadOnly: true})
	if err != nil {
		return false
	}
	defer func() { _ = fl.Close() }() // read only
	got := make([]byte, len(data))
	n, _ := fl.ReadAt(got, off-base)
	return n == len(data) && bytes.Equal(got, data)
}

// flipBit XORs bit into the byte at log offset pos of replica name's
// commit log in fs.
func flipBit(fs *vfs.MemFS, name string, pos int64, bit byte) error {
	const seg = 64 << 10 // storeOptions' SegmentSize
	base := pos - pos%seg
	path := filepath.Join("/"+name, "commitlog", fmt.Sprintf("%020d", base))
	fl, err := fs.Open(path, vfs.OpenOptions{})
	if err != nil {
		return fmt.Errorf("sim: bit flip: %w", err)
	}
	defer func() { _ = fl.Close() }() // MemFS: nothing to report
	b := []byte{0}
	if _, err := fl.ReadAt(b, pos-base); err != nil {
		return fmt.Errorf("sim: bit flip: read %s at %d: %w", path, pos-base, err)
	}
	b[0] ^= bit
	if _, err := fl.WriteAt(b, pos-base); err != nil {
		return fmt.Errorf("sim: bit flip: write %s at %d: %w", path, pos-base, err)
	}
	return nil
}

// checkFlipFound waits for q to read back what it wrote since its last
// verification, then holds it to InvFlipDetected: the flipped record is
// quarantined (storage's Damaged) or the log was cut before it.
func (f *failover) checkFlipFound(q *replica, off, size int64) error {
	for deadline := time.Now().Add(time.Minute); q.up() && q.store.Unverified() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return f.violation(InvFlipDetected, "%s still has %d bytes to verify a minute after its restart", q.name, q.store.Unverified())
		}
	}
	if !q.up() {
		return nil
	}
	if q.openedEnd <= off {
		f.tracef("%s's log was cut at %d, below the flipped record at %d", q.name, q.openedEnd, off)
		f.mu.Lock()
		fl := f.mu.flips[q.id]
		f.mu.flips[q.id] = fl[:len(fl)-1] // it copies the record again
		f.mu.Unlock()
		return nil
	}
	for _, d := range q.store.Damaged() {
		if d.From < off+size && d.To > off {
			f.tracef("%s found the flipped record at %d: %s", q.name, off, d.Why)
			return nil
		}
	}
	f.mu.Lock()
	same := holds(q.store, off, f.mu.acked[off].data)
	f.mu.Unlock()
	return f.violation(InvFlipDetected, "%s verified its log to %d and reports no damage at the flipped record %d (damaged: %v; the record reads back unchanged: %v)",
		q.name, q.store.VerifiedOffset(), off, q.store.Damaged(), same)
}

// damagedAt: a bit was flipped in replica id's log in [off, off+size).
func (f *failover) damagedAtLocked(id int64, off, size int64) bool {
	for _, r := range f.mu.flips[id] {
		if r.from < off+size && r.to > off {
			return true
		}
	}
	return false
}
