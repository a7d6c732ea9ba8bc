package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/record"
)

// checkQueues checks every ConsumeQueue against the log (see Verify).
// The files are read as they lie (package consumequeue's layout), not
// opened through it: opening recovers, and Verify changes nothing.
func (v *verifier) checkQueues() error {
	a, r := v.at, v.r
	root := filepath.Join(a.dir, "consumequeue")
	topics, err := a.fs.List(root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: list %s: %w", root, err)
	}
	seen := map[queueKey]bool{}
	for _, topic := range topics {
		qids, err := a.fs.List(filepath.Join(root, topic))
		if err != nil {
			r.add(SevNote, filepath.Join(root, topic), -1, "not a topic directory (%v)", err)
			continue
		}
		for _, name := range qids {
			qid, err := strconv.ParseInt(name, 10, 32)
			if err != nil || qid < 0 || strconv.FormatInt(qid, 10) != name {
				r.add(SevNote, filepath.Join(root, topic, name), -1, "not a queue directory (ignored)")
				continue
			}
			k := queueKey{topic, int32(qid)}
			seen[k] = true
			if err := v.checkQueue(k, filepath.Join(root, topic, name)); err != nil {
				return err
			}
		}
	}
	sev := SevNote
	if v.cleanStop() {
		sev = SevCorrupt
	}
	for k, q := range v.logQueues {
		if !seen[k] {
			r.add(sev, filepath.Join(root, k.topic), -1, "queue %s/%d has no consume queue; the log holds its offsets %d-%d", k.topic, k.qid, q.first, q.last)
		}
	}
	for k, n := range a.ck.queues {
		if !seen[k] && n > 0 {
			r.add(SevCorrupt, filepath.Join(root, k.topic), -1, "queue %s/%d is missing; the checkpoint says %d offsets were durable", k.topic, k.qid, n)
		}
	}
	return nil
}

// cqCheck is the state of one queue's check.
type cqCheck struct {
	k       queueKey
	file    string
	prevEnd int64 // end of the previous entry's record, -1 before the first
	rd      *segReader
	rdBase  int64
}

// checkQueue checks the files of one queue.
func (v *verifier) checkQueue(k queueKey, dir string) error {
	a, r := v.at, v.r
	names, err := a.fs.List(dir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", dir, err)
	}
	r.Queues++
	c := &cqCheck{k: k, prevEnd: -1, rdBase: -1}
	defer func() {
		if c.rd != nil {
			_ = c.rd.Close()
		}
	}()
	next := int64(-1) // queue offset the next file must start at
	end := int64(0)   // the queue's max offset
	ended := false
	for _, name := range names {
		path := filepath.Join(dir, name)
		off, err := strconv.ParseInt(name, 10, 64)
		if len(name) != 20 || err != nil || off%consumequeue.EntrySize != 0 {
			r.add(SevNote, path, -1, "not a consume queue file (ignored)")
			continue
		}
		start := off / consumequeue.EntrySize
		if ended {
			r.add(SevNote, path, -1, "file after the queue's end at offset %d (the next Open removes it)", end)
			continue
		}
		if next >= 0 && start != next {
			r.add(SevCorrupt, path, -1, "starts at queue offset %d; the file before ends at %d", start, next)
		}
		b, err := readFile(a.fs, path)
		if err != nil {
			return fmt.Errorf("storage: read %s: %w", path, err)
		}
		c.file = path
		n := int64(len(b) / consumequeue.EntrySize)
		if len(b)%consumequeue.EntrySize != 0 {
			r.add(SevNote, path, -1, "ends with a partial entry (a torn write: the next Open cuts it)")
		}
		for i := int64(0); i < n; i++ {
			e := b[i*consumequeue.EntrySize:]
			phys := int64(binary.BigEndian.Uint64(e))
			size := int32(binary.BigEndian.Uint32(e[8:]))
			if size == 0 {
				// A zero entry ends a queue: unwritten or lost bytes.
				if i+1 < n || len(b) > int((i+1)*consumequeue.EntrySize) {
					r.add(SevNote, path, -1, "queue ends at offset %d with a zero entry; %d entries follow it (the next Open cuts them)", start+i, n-i-1)
				}
				ended = true
				break
			}
			r.Entries++
			if err := v.checkEntry(c, start+i, phys, size); err != nil {
				return err
			}
			end = start + i + 1
		}
		next = start + n
	}
	v.compareQueue(c.k, dir, end)
	return nil
}

// checkEntry checks that the entry at queue offset qo points at a valid
// record of its queue with its size and queue offset.
func (v *verifier) checkEntry(c *cqCheck, qo, phys int64, size int32) error {
	a, r := v.at, v.r
	bad := func(sev, format string, args ...any) {
		r.add(sev, c.file, phys, "entry %s/%d#%d: %s", c.k.topic, c.k.qid, qo, fmt.Sprintf(format, args...))
	}
	if size < 0 || phys < 0 || phys < c.prevEnd {
		bad(SevCorrupt, "size %d at %d does not follow the previous entry's record (ending at %d)", size, phys, c.prevEnd)
		return nil
	}
	c.prevEnd = phys + int64(size)
	switch {
	case phys < r.LogStart:
		return nil // expired: retention deleted its segment
	case phys+int64(size) > r.LogEnd:
		sev := SevNote
		if v.cleanStop() {
			sev = SevCorrupt
		}
		bad(sev, "its record lies past the log's valid end %d (the next Open trims the queue)", r.LogEnd)
		return nil
	}
	base := phys / a.segSize * a.segSize
	if base != c.rdBase {
		if c.rd != nil {
			_ = c.rd.Close()
			c.rd = nil
		}
		c.rdBase = base
		rd, err := openSegReader(a.fs, filepath.Join(a.clDir, segmentName(base)))
		if err != nil {
			bad(SevCorrupt, "no segment for it: %v", err)
			return nil
		}
		c.rd = rd
	}
	if c.rd == nil {
		bad(SevCorrupt, "no segment for it")
		return nil
	}
	b, err := c.rd.at(phys-base, int(size))
	if err != nil {
		return fmt.Errorf("storage: verify %s: %w", segmentName(base), err)
	}
	n, err := record.Validate(b, phys)
	switch {
	case err != nil:
		bad(SevCorrupt, "no valid record of %d bytes there: %v", size, err)
		return nil
	case n != int(size):
		bad(SevCorrupt, "the record there has %d bytes, the entry says %d", n, size)
		return nil
	}
	rec := &v.rec
	if err := record.DecodeUnchecked(b, rec); err != nil {
		return fmt.Errorf("storage: internal: decode of a valid record at %d: %w", phys, err)
	}
	if string(rec.Topic) != c.k.topic || rec.QueueID != c.k.qid || rec.QueueOffset != qo {
		bad(SevCorrupt, "the record there belongs to %s/%d#%d", rec.Topic, rec.QueueID, rec.QueueOffset)
	}
	return nil
}

// compareQueue compares a queue's end with the log's records of it and
// the checkpoint.
func (v *verifier) compareQueue(k queueKey, dir string, end int64) {
	a, r := v.at, v.r
	if q := v.logQueues[k]; q != nil && end < q.last+1 {
		sev, why := SevNote, "the next Open re-indexes them"
		if v.cleanStop() {
			sev, why = SevCorrupt, "after a clean stop it should index them all"
		}
		r.add(sev, dir, -1, "queue %s/%d ends at offset %d; the log holds its records up to offset %d (%s)", k.topic, k.qid, end, q.last, why)
	}
	if n := a.ck.queues[k]; a.haveCk && n > end {
		r.add(SevCorrupt, dir, -1, "queue %s/%d ends at offset %d; the checkpoint says %d were durable", k.topic, k.qid, end, n)
	}
}
