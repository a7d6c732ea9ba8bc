package storage

import (
	"fmt"
	"path/filepath"

	"github.com/samsamq/samsa/storage/record"
)

// verifier is one run of Verify.
type verifier struct {
	at *atRest
	r  *VerifyReport
	// logQueues are the queue offsets of the indexed records the log
	// holds, per queue, for the ConsumeQueue check.
	logQueues map[queueKey]*logQueue
	rec       record.Record
}

type logQueue struct {
	first, last int64 // queue offsets
	// skipped: bytes were skipped past a bad record since its last
	// record, so a gap in its offsets is that record's, not another.
	skipped bool
}

// cleanStop says the store was closed cleanly: queues behind the log or
// records past the checkpoint cannot be explained by a crash.
func (v *verifier) cleanStop() bool { return !v.at.abort && v.at.haveCk && v.at.ck.clean }

// checkLog walks every segment (see Verify) and sets the report's log
// fields.
func (v *verifier) checkLog() error {
	a, r := v.at, v.r
	for _, n := range a.others {
		r.add(SevNote, filepath.Join(a.clDir, n), -1, "not a segment file (the store ignores it)")
	}
	r.Segments = len(a.files)
	if len(a.files) == 0 {
		return nil
	}
	r.LogStart = a.files[0].base
	for i, f := range a.files {
		if f.base%a.segSize != 0 {
			r.add(SevCorrupt, f.path, f.base, "does not start at a multiple of the segment size %d (not checked)", a.segSize)
			continue
		}
		if f.size > a.segSize {
			r.add(SevCorrupt, f.path, f.base, "has %d bytes, more than the segment size %d", f.size, a.segSize)
		}
		if i > 0 && f.base != a.files[i-1].base+a.segSize {
			r.add(SevCorrupt, f.path, a.files[i-1].base+a.segSize, "segment files missing: the one before starts at %d", a.files[i-1].base)
		}
		last := i == len(a.files)-1
		end, err := v.checkSegment(f, last)
		if err != nil {
			return err
		}
		if last {
			r.LogEnd = f.base + end
		}
	}
	return nil
}

// checkSegment walks one segment and returns where its valid records end
// (the first position holding neither a valid record nor its blank; the
// segment size if it is sealed with no bad record before).
func (v *verifier) checkSegment(f segmentFile, last bool) (int64, error) {
	a, r, sc := v.at, v.r, v.at.sc()
	rd, err := openSegReader(a.fs, f.path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = rd.Close() }()
	end := int64(-1) // the first bad position
	pos := int64(0)
	for {
		rec, blank, bad, err := sc.checkAt(rd, f.base, pos)
		if err != nil {
			return 0, fmt.Errorf("storage: verify %s: %w", f.path, err)
		}
		if blank {
			if end < 0 {
				end = a.segSize
			}
			return end, nil
		}
		if bad == nil {
			v.countRecord(f, pos, rec)
			pos += int64(len(rec))
			continue
		}
		if end < 0 {
			end = pos
		}
		tail, err := readTail(rd, pos)
		if err != nil {
			return 0, err
		}
		if tail.zeros() {
			if !last {
				r.add(SevCorrupt, f.path, f.base+pos, "no blank seals the segment: its records end here, zeros follow, and later segments exist")
			}
			return end, nil
		}
		next, err := sc.findValid(rd, f.base, pos, rd.size)
		if err != nil {
			return 0, err
		}
		if next >= 0 {
			r.add(SevCorrupt, f.path, f.base+pos, "bad record (%v); valid records resume at %d, %d bytes on", bad, next, next-f.base-pos)
			for _, q := range v.logQueues {
				q.skipped = true
			}
			pos = next - f.base
			continue
		}
		switch {
		case !last:
			r.add(SevCorrupt, f.path, f.base+pos, "bad record (%v); nothing valid follows in the segment, and no blank seals it", bad)
		case a.haveCk && f.base+pos < a.ck.durable:
			r.add(SevCorrupt, f.path, f.base+pos, "bad record (%v) below the checkpoint's durable offset %d, nothing valid after it: Open refuses the store; 'samsa store repair' cuts the log here", bad, a.ck.durable)
		default:
			r.add(SevNote, f.path, f.base+pos, "torn tail: %d non-zero bytes up to %d and no valid record after them (%v); the next Open cuts them and keeps them in lost+found", tail.nonZero, f.base+tail.end, bad)
		}
		return end, nil
	}
}

// countRecord adds a valid record to the report and checks its queue
// offset follows the previous one of its queue.
func (v *verifier) countRecord(f segmentFile, pos int64, rec []byte) {
	v.r.Records++
	v.r.RecordBytes += int64(len(rec))
	if err := record.DecodeUnchecked(rec, &v.rec); err != nil || !indexed(v.rec.SysFlag) {
		return
	}
	k := queueKey{string(v.rec.Topic), v.rec.QueueID}
	q := v.logQueues[k]
	if q == nil {
		v.logQueues[k] = &logQueue{first: v.rec.QueueOffset, last: v.rec.QueueOffset}
		return
	}
	if v.rec.QueueOffset != q.last+1 && !(q.skipped && v.rec.QueueOffset > q.last) {
		v.r.add(SevCorrupt, f.path, f.base+pos, "record of %s/%d has queue offset %d; the previous one had %d",
			k.topic, k.qid, v.rec.QueueOffset, q.last)
	}
	q.last, q.skipped = v.rec.QueueOffset, false
}

// checkAcked compares where Open would end the log with what the group
// acknowledged: a shorter log lost acknowledged messages (a power loss
// took an unsynced tail, or damage cut it). The replicas that still hold
// them fill them in when this one follows again; if none does, they are
// lost.
func (v *verifier) checkAcked(acked int64, from string) {
	r := v.r
	if acked <= 0 {
		return
	}
	r.Acked, r.AckedFrom = acked, from
	end := r.LogEnd
	if v.cleanStop() && v.at.ck.durable < end {
		end = v.at.ck.durable
	}
	if end < acked {
		r.add(SevCorrupt, v.at.clDir, end, "the log ends %d bytes short of what its group acknowledged (%d, %s): this copy lacks acknowledged messages; "+
			"a replica that holds them fills them in when this broker follows it again, and if none does they are lost", acked-end, acked, from)
	}
}

// checkCheckpoint compares the checkpoint with the log.
func (v *verifier) checkCheckpoint() {
	a, r := v.at, v.r
	if !a.haveCk {
		return
	}
	c := a.ck
	if c.durable > r.LogEnd {
		r.add(SevCorrupt, a.ckPath(), r.LogEnd, "the checkpoint says the log is durable to %d, but its valid records end here: %d bytes are missing or damaged (Open refuses the store; 'samsa store repair' cuts the log here)",
			c.durable, c.durable-r.LogEnd)
	}
	if c.dispatched > r.LogEnd && c.dispatched > c.durable {
		r.add(SevNote, a.ckPath(), r.LogEnd, "the checkpoint's dispatched offset %d lies past the log's valid end", c.dispatched)
	}
	if v.cleanStop() && c.durable < r.LogEnd {
		r.add(SevNote, a.ckPath(), c.durable, "valid records lie past the clean checkpoint's end, up to %d: Open ends the log at the checkpoint and overwrites them", r.LogEnd)
	}
}
