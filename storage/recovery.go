package storage

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// Recovery.
//
// A clean Close leaves a clean checkpoint and no abort marker: Open trusts
// the checkpoint's offset as the end of the log and scans nothing.
//
// Otherwise (the abort marker is there: a crash, a kill, a failed Close)
// Open scans the CommitLog from the start of the segment holding
// min(checkpoint durable, checkpoint dispatched), record by record:
// magic, size bounds, physical-offset identity, body and whole-record
// CRCs. Segments end with a valid blank; the log ends at the first
// position where no valid record or blank starts (the cut).
//
//   - A cut at or past the checkpoint's durable offset is taken for a
//     torn tail. A power loss can leave any mix of the bytes written
//     after the last checkpoint (unsynced blocks survive at random, valid
//     records after a hole included), so a bad record there cannot be told
//     from a torn write. If only zeros follow the cut (reserved or
//     preallocated space: the usual end of the active segment) the log
//     simply ends there and nothing is logged above Debug. Otherwise the
//     segment's non-zero bytes past the cut and every later segment are
//     moved to Dir/lost+found/<time>/ with a manifest of the valid records
//     they held, and logged at Warn (lostfound.go); then the segment is
//     truncated at the cut, durably, so no stale record can resurrect after
//     the next append. Records acknowledged after the last checkpoint are
//     cut this way only by real corruption, not by a crash;
//     CheckpointInterval bounds that window, and lost+found keeps them.
//   - A cut below it is corruption of acknowledged data: Open fails with a
//     *CorruptError (ErrCorrupt) naming the offset, where valid records
//     resume and what to run (samsa store verify / repair), and changes
//     nothing.
//
// Only the segments from the checkpoint's on are scanned: older ones are
// checked at rest by the scrubber (scrub.go) and by Verify, and after Open
// whatever lies above the verified mark (verify_open.go). A scan that
// starts at or below the mark moves it to the recovered end.
//
// Then every ConsumeQueue is trimmed to the cut (TruncateFromPhys), the
// records from the checkpoint's dispatched offset to the cut are indexed
// again (appends of entries a queue already holds are no-ops), and the
// per-queue offset counters are taken from the queues, checked against the
// checkpoint's. Last, the recovered tail is fsynced and a new checkpoint
// written.
func (s *Store) recover() (err error) {
	defer func() {
		var ce *CorruptError
		if errors.Is(err, ErrCorrupt) && !errors.As(err, &ce) {
			err = fmt.Errorf("%w; run 'samsa store verify %s' to see the damage and 'samsa store repair %s' to make the store open again", err, s.dir, s.dir)
		}
	}()
	s.loadVerified()                        // verified.go
	if err := s.finishReset(); err != nil { // a crash in ResetTo (replica_cut.go)
		return err
	}
	ck, haveCk, err := s.readCheckpoint()
	if err != nil {
		return err
	}
	if haveCk && ck.segSize != s.segSize {
		return fmt.Errorf("storage: %s was made with SegmentSize %d; Options say %d", s.dir, ck.segSize, s.segSize)
	}
	abort, err := exists(s.fs, s.abortPath())
	if err != nil {
		return fmt.Errorf("storage: stat %s: %w", s.abortPath(), err)
	}
	if !abort {
		if err := s.createAbortMarker(); err != nil && !s.deferAbortMarker(err) {
			return err
		}
	}
	if err := s.makeReserve(); err != nil && !s.deferReserve(err) {
		return err
	}
	if err := s.removeStaleTemp(); err != nil {
		return err
	}
	replayed, err := s.replayStages()
	if err != nil {
		return err
	}
	cq, err := consumequeue.OpenTable(consumequeue.Options{
		FS: s.fs, Dir: filepath.Join(s.dir, "consumequeue"), EntriesPerFile: s.opts.ConsumeQueueEntries, Logger: s.log,
		MaxOpenFiles: s.cqMaxOpenFiles(),
	})
	if err != nil {
		return fmt.Errorf("storage: open consume queues: %w", err)
	}
	s.cq = cq
	files, err := s.listSegments()
	if err != nil {
		return err
	}
	clean := haveCk && ck.clean && !abort && !replayed
	var end, durable, scanFrom int64
	if clean {
		var ok bool
		if end, ok, err = s.openClean(files, ck); err != nil {
			return err
		}
		if !ok {
			s.log.Warn("storage: clean checkpoint disagrees with the segments; scanning", "durable", ck.durable)
			clean = false
		}
		durable = end
	}
	if !clean {
		if !haveCk {
			ck = checkpoint{segSize: s.segSize}
		}
		if end, durable, err = s.recoverScan(files, ck); err != nil {
			return err
		}
		scanFrom = durable // the scan checked [scanFrom, end)
	}
	if err := s.rebuildCounters(ck, haveCk); err != nil {
		return err
	}
	s.written.Store(end)
	s.handed.Store(end) // what recovery found is in the file
	s.durable.Store(durable)
	s.dispatched.Store(end)
	s.dispatchOK.Store(end)
	s.adoptHeld() // records reindex could not index wait for the dispatcher
	if err := s.openKeyIndex(end); err != nil {
		return err
	}
	s.ckpt.last = ck
	if !clean {
		// A dead process may have created segment files and ConsumeQueue
		// files and directories no directory sync covered, and written
		// ConsumeQueue entries it never synced; recovery adopts all of
		// them, so it syncs them before the checkpoint below calls them
		// durable.
		s.dirDirty.Store(true)
		s.cq.MarkUnsynced()
	}
	s.flushMu.Lock()
	err = s.flushTo(end)
	s.flushMu.Unlock()
	if err != nil {
		return fmt.Errorf("storage: flush the recovered log: %w", err)
	}
	if err := s.settleVerified(end, !clean, scanFrom); err != nil {
		return err
	}
	if err := s.writeCheckpoint(false); err != nil && !s.deferCheckpoint(err) {
		return err
	}
	s.log.Info("storage: opened", "dir", s.dir, "clean", clean, "segments", len(s.segs.list),
		"minOffset", s.CommitLogMinOffset(), "end", end)
	return nil
}

// removeStaleTemp removes a checkpoint (or reset marker, or verified
// mark) temp file a crash left behind.
func (s *Store) removeStaleTemp() error {
	for _, tmp := range []string{s.checkpointPath() + ".tmp", s.resetPath() + ".tmp", s.verifiedPath() + ".tmp"} {
		ok, err := exists(s.fs, tmp)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := s.fs.Remove(tmp); err != nil {
			return fmt.Errorf("storage: remove %s: %w", tmp, err)
		}
	}
	return nil
}

// openClean opens the segments as a clean Close left them: the log ends at
// the checkpoint's offset. ok is false if the files disagree.
func (s *Store) openClean(files []segmentFile, ck checkpoint) (end int64, ok bool, err error) {
	end = ck.durable
	if len(files) == 0 {
		return 0, end == 0, nil
	}
	last := files[len(files)-1]
	if end < last.base || end > last.base+s.segSize || (end < last.base+s.segSize && last.size < end-last.base) {
		return 0, false, nil
	}
	for i, f := range files {
		sealed := i < len(files)-1 || end == last.base+s.segSize
		written := min(f.size, s.segSize)
		if !sealed {
			written = end - f.base
		}
		if err := s.openSegment(f, written, sealed, segScan{}); err != nil {
			return 0, false, err
		}
	}
	return end, true, nil
}

// openSegment opens a segment file with the backend and appends it to the
// list (the last one opened is the active segment).
func (s *Store) openSegment(f segmentFile, written int64, sealed bool, sc segScan) error {
	sg, err := s.be.Open(s.segConfig(f.path, written))
	if err != nil {
		return fmt.Errorf("storage: open segment: %w", err)
	}
	g := &segment{base: f.base, path: f.path, seg: sg}
	g.sealed.Store(sealed)
	if sc.hasRecords {
		g.lastTs.Store(sc.lastTs)
		g.hasRecords.Store(true)
	}
	s.segs.list = append(s.segs.list, g)
	s.mu.active = g
	return nil
}

// recoverScan is the unclean path (see the comment on recover). It
// returns the end of the log and the offset known durable before any
// flush (the start of the first scanned segment).
func (s *Store) recoverScan(files []segmentFile, ck checkpoint) (end, durable int64, err error) {
	k := ck.durable
	if len(files) == 0 {
		if k > 0 {
			return 0, 0, &CorruptError{Offset: 0, Resume: -1, Durable: k, Segment: s.clDir, Missing: k, Dir: s.dir,
				Err: errors.New("no segment files")}
		}
		// Nothing durable, and the first segment's name was lost: the
		// queues may still hold entries for its records.
		return 0, 0, s.trimQueues(0)
	}
	first, last := files[0].base, files[len(files)-1]
	if k > last.base+s.segSize {
		return 0, 0, &CorruptError{Offset: last.base + s.segSize, Resume: -1, Durable: k, Segment: last.path,
			Missing: k - (last.base + s.segSize), Dir: s.dir,
			Err: errors.New("segment files missing at the end")}
	}
	startAt := max(min(k, ck.dispatched), first)
	si := len(files) - 1
	for i, f := range files {
		if startAt < f.base+s.segSize {
			si = i
			break
		}
	}

	// Pass 1: validate, find the cut.
	scans := make([]segScan, len(files))
	cutIdx := -1
	for i := si; i < len(files); i++ {
		r, err := openSegReader(s.fs, files[i].path)
		if err != nil {
			return 0, 0, err
		}
		sc, err := s.scanSegment(r, files[i].base)
		_ = r.Close()
		if err != nil {
			return 0, 0, err
		}
		scans[i] = sc
		if !sc.sealed {
			cutIdx = i
			break
		}
	}
	sealedEnd := cutIdx < 0
	if sealedEnd {
		cutIdx = len(files) - 1
		end = last.base + s.segSize
	} else {
		end = files[cutIdx].base + scans[cutIdx].end
	}
	if end < k {
		return 0, 0, s.corruptAt(files, cutIdx, scans[cutIdx], k)
	}
	if err := s.cutTail(files, cutIdx, scans[cutIdx], sealedEnd); err != nil {
		return 0, 0, err
	}
	files = files[:cutIdx+1]
	if !sealedEnd {
		files[cutIdx].size = scans[cutIdx].end
	}

	// Open the segments.
	for i, f := range files {
		sealed := i < cutIdx || sealedEnd
		written := min(f.size, s.segSize)
		if i == cutIdx && !sealedEnd {
			written = scans[i].end
		}
		if err := s.openSegment(f, written, sealed, scans[i]); err != nil {
			return 0, 0, err
		}
	}

	// The ConsumeQueues: trim to the cut, index what they may lack.
	if err := s.trimQueues(end); err != nil {
		return 0, 0, err
	}
	if err := s.reindex(files, max(ck.dispatched, first), end); err != nil {
		return 0, 0, err
	}
	return end, files[si].base, nil
}

// trimQueues drops every ConsumeQueue entry at or past end. An entry
// there was indexed, so it was acknowledged at the store's level (records
// are indexed only once they reach it): each queue's dropped offsets are
// logged, with the total, so a power loss under async flush that cuts
// acknowledged records says which.
func (s *Store) trimQueues(end int64) error {
	dropped, err := s.dropEntriesFrom(end, "storage: recovery dropped indexed (acknowledged) records the log no longer holds")
	if dropped > 0 {
		s.log.Warn("storage: recovery cut acknowledged records", "records", dropped, "logEnd", end,
			"durability", s.opts.Durability().String(),
			"why", "a power loss (or corruption) took bytes that were indexed; queue offsets past the cut will be reused")
	}
	return err
}

// dropEntriesFrom drops every ConsumeQueue entry pointing at or past end,
// durably, logging each queue's dropped offsets with msg, and returns how
// many went.
func (s *Store) dropEntriesFrom(end int64, msg string) (int64, error) {
	var errs []error
	var dropped int64
	s.cq.Each(func(topic string, qid int32, q *consumequeue.Queue) {
		before := q.MaxOffset()
		if err := q.TruncateFromPhys(end); err != nil {
			errs = append(errs, fmt.Errorf("storage: trim consume queue %s/%d to %d: %w", topic, qid, end, err))
			return
		}
		if after := q.MaxOffset(); after < before {
			dropped += before - after
			s.log.Warn(msg, "topic", topic, "queue", qid, "fromOffset", after, "toOffset", before, "records", before-after, "logEnd", end)
		}
	})
	return dropped, errors.Join(errs...)
}

// corruptAt builds the error for a cut below the durable offset k.
func (s *Store) corruptAt(files []segmentFile, i int, sc segScan, k int64) error {
	f := files[i]
	resume := int64(-1)
	for j := i; j < len(files) && resume < 0; j++ {
		r, err := openSegReader(s.fs, files[j].path)
		if err != nil {
			break
		}
		from := int64(-1)
		if j == i {
			from = sc.end
		}
		resume, _ = s.findValid(r, files[j].base, from, s.segSize)
		_ = r.Close()
	}
	bad := sc.bad
	if bad == nil {
		bad = errors.New("segment ends early")
	}
	var missing int64
	if fileEnd := f.base + f.size; i == len(files)-1 && fileEnd < k {
		missing = k - fileEnd
	}
	return &CorruptError{Offset: f.base + sc.end, Resume: resume, Durable: k, Segment: f.path, Missing: missing, Dir: s.dir, Err: bad}
}

// cutTail ends the log at the cut in segment i (unless the scan ended
// sealed: nothing to cut). Zeros past the cut are reserved space, not a
// torn tail, and stay; anything else past it (the segment's non-zero
// bytes, later segments) goes to lost+found with a manifest and a Warn
// line saying what valid records it held (lostfound.go), never silently.
func (s *Store) cutTail(files []segmentFile, i int, sc segScan, sealedEnd bool) error {
	if sealedEnd {
		return nil
	}
	p, err := s.scanner().planCut(s.fs, s.dir, files, i, sc.end, sc.bad)
	if err != nil {
		return err
	}
	if !p.tail.zeros() {
		s.log.Warn("storage: cutting a torn tail off the commit log", "segment", p.seg.path, "at", p.cut,
			"nonZeroBytes", p.tail.nonZero, "through", p.seg.base+p.tail.end, "why", sc.bad)
	} else {
		s.log.Debug("storage: the commit log ends here; zeros (reserved space) follow", "at", p.cut, "segment", p.seg.path)
	}
	if len(p.later) > 0 {
		s.log.Warn("storage: segments lie past the cut", "cut", p.cut, "segments", len(p.later),
			"first", p.later[0].path, "valid", p.lost.Valid.String())
	}
	reason := fmt.Sprintf("recovery after an unclean stop: no valid record at %d (%v)", p.cut, sc.bad)
	var reserve int64
	if s.opts.Preallocate {
		reserve = s.segSize - sc.end
	}
	_, err = applyCut(s.fs, s.dir, &p, s.clock(), reason, reserve, s.log)
	return err
}

// reindex appends the ConsumeQueue entries of the records in [from, end).
func (s *Store) reindex(files []segmentFile, from, end int64) error {
	n := 0
	for _, f := range files {
		segEnd := min(end-f.base, s.segSize)
		if f.base+s.segSize <= from || segEnd <= 0 {
			continue
		}
		r, err := openSegReader(s.fs, f.path)
		if err != nil {
			return err
		}
		var rec record.Record
		err = s.walkSegment(r, min(segEnd, r.size), func(pos int64, b []byte) error {
			if f.base+pos < from {
				return nil
			}
			if err := record.DecodeUnchecked(b, &rec); err != nil {
				return fmt.Errorf("storage: internal: re-decode at %d: %w", f.base+pos, err)
			}
			if !indexed(rec.SysFlag) {
				return nil
			}
			n++
			return s.reindexRecord(&dispatchReq{topic: string(rec.Topic), qid: rec.QueueID, size: rec.TotalSize,
				indexed: true, qoff: rec.QueueOffset, phys: f.base + pos, tags: storedTags(&rec)})
		})
		_ = r.Close()
		if err != nil {
			return err
		}
	}
	if n > 0 {
		s.log.Info("storage: re-indexed records", "from", from, "to", end, "records", n)
	}
	return nil
}

// rebuildCounters sets the per-queue offset counters from the
// ConsumeQueues, refusing queues that hold fewer offsets than the
// checkpoint says were durable.
func (s *Store) rebuildCounters(ck checkpoint, haveCk bool) error {
	var errs []error
	seen := map[queueKey]bool{}
	s.countersFromQueuesLocked(func(k queueKey, n int64) { // the store is not shared yet
		seen[k] = true
		if want := ck.queues[k]; haveCk && n < want {
			errs = append(errs, fmt.Errorf("%w: consume queue %s/%d ends at offset %d; the checkpoint had %d durable",
				ErrCorrupt, k.topic, k.qid, n, want))
		}
	})
	for k, want := range ck.queues {
		if !seen[k] && want > 0 {
			errs = append(errs, fmt.Errorf("%w: consume queue %s/%d is missing; the checkpoint had %d durable offsets",
				ErrCorrupt, k.topic, k.qid, want))
		}
	}
	return errors.Join(errs...)
}

// countersFromQueuesLocked sets the per-queue offset counters from the
// ConsumeQueues (each queue holding offsets continues after its last),
// showing each queue's next offset to check (if not nil).
func (s *Store) countersFromQueuesLocked(check func(k queueKey, next int64)) {
	clear(s.mu.counters)
	s.cq.Each(func(topic string, qid int32, q *consumequeue.Queue) {
		k := queueKey{topic, qid}
		n := q.MaxOffset()
		if check != nil {
			check(k, n)
		}
		if n > 0 {
			c := new(int64)
			*c = n
			s.mu.counters[k] = c
		}
	})
}

// cqMaxOpenFiles is Options.ConsumeQueueMaxOpenFiles, lowered to half the
// process's descriptor limit (at least 16) so the ConsumeQueues never take
// the descriptors a segment roll or a connection needs.
func (s *Store) cqMaxOpenFiles() int {
	n := s.opts.ConsumeQueueMaxOpenFiles
	if lim := vfs.FileLimit(); lim > 0 && n > lim/2 {
		n = max(lim/2, 16)
		s.log.Info("storage: fewer ConsumeQueue files kept open than configured, for the process's descriptor limit",
			"configured", s.opts.ConsumeQueueMaxOpenFiles, "used", n, "RLIMIT_NOFILE", lim)
	}
	return n
}
