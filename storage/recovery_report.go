package storage

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/samsamq/samsa/storage/record"
)

// What bytes leaving the log held.
//
// Before recovery or Repair takes bytes out of the CommitLog (a cut
// segment's tail, the segments after a cut) it says what they held, so an
// operator can tell a torn write (a few non-zero bytes, no valid record)
// from acknowledged data cut off by a bad record before it (valid,
// CRC-checked records, named by topic, queue and offsets). Reserved space
// (zeros to the end of the file) is neither and is not reported as lost.

// tailInfo describes a segment file's bytes from a position to its end.
type tailInfo struct {
	// nonZero counts the non-zero bytes.
	nonZero int64
	// end is the file offset just past the last non-zero byte (the
	// position itself if there is none): the bytes worth keeping.
	end int64
}

// zeros reports whether the bytes are all zero: reserved or preallocated
// space, not a torn write.
func (t tailInfo) zeros() bool { return t.nonZero == 0 }

// zeroBlock is what readTail compares reserved space with.
var zeroBlock [64 << 10]byte

// readTail reads r from pos to its end and counts the non-zero bytes.
func readTail(r *segReader, pos int64) (tailInfo, error) {
	t := tailInfo{end: pos}
	for p := pos; p < r.size; {
		b, err := r.at(p, scanChunk)
		if err != nil {
			return t, err
		}
		if len(b) == 0 {
			break
		}
		for i := 0; i < len(b); i += len(zeroBlock) {
			blk := b[i:min(i+len(zeroBlock), len(b))]
			if bytes.Equal(blk, zeroBlock[:len(blk)]) {
				continue // the usual case, reserved space: compared at memcmp speed
			}
			for j, c := range blk {
				if c != 0 {
					t.nonZero++
					t.end = p + int64(i+j) + 1
				}
			}
		}
		p += int64(len(b))
	}
	return t, nil
}

// Salvage summarises the valid records found in bytes taken out of the
// log (or about to be).
type Salvage struct {
	// Records is how many valid records (magic, size, physical offset,
	// both CRCs) the bytes hold.
	Records int64 `json:"records"`
	// FirstPhys and EndPhys bound them in the CommitLog: the first one's
	// offset and the end of the last (both 0 if none).
	FirstPhys int64 `json:"firstPhys"`
	EndPhys   int64 `json:"endPhys"`
	// Queues break them down per (topic, queue).
	Queues []SalvagedQueue `json:"queues,omitempty"`
}

// SalvagedQueue is the valid records of one queue found in removed bytes.
type SalvagedQueue struct {
	Topic            string `json:"topic"`
	QueueID          int32  `json:"queueId"`
	Records          int64  `json:"records"`
	FirstQueueOffset int64  `json:"firstQueueOffset"`
	LastQueueOffset  int64  `json:"lastQueueOffset"`
	FirstPhys        int64  `json:"firstPhys"`
	LastPhys         int64  `json:"lastPhys"`
}

// add counts the valid record rec found at CommitLog offset phys.
func (sv *Salvage) add(phys int64, rec []byte) error {
	var r record.Record
	if err := record.DecodeUnchecked(rec, &r); err != nil {
		return fmt.Errorf("storage: internal: decode of a valid record at %d: %w", phys, err)
	}
	if sv.Records == 0 {
		sv.FirstPhys = phys
	}
	sv.Records++
	sv.EndPhys = phys + int64(r.TotalSize)
	for i := range sv.Queues {
		q := &sv.Queues[i]
		if q.Topic == string(r.Topic) && q.QueueID == r.QueueID {
			q.Records++
			q.FirstQueueOffset = min(q.FirstQueueOffset, r.QueueOffset)
			q.LastQueueOffset = max(q.LastQueueOffset, r.QueueOffset)
			q.LastPhys = phys
			return nil
		}
	}
	sv.Queues = append(sv.Queues, SalvagedQueue{Topic: string(r.Topic), QueueID: r.QueueID, Records: 1,
		FirstQueueOffset: r.QueueOffset, LastQueueOffset: r.QueueOffset, FirstPhys: phys, LastPhys: phys})
	return nil
}

// merge adds o's records (o lies after sv in the log).
func (sv *Salvage) merge(o Salvage) {
	if o.Records == 0 {
		return
	}
	if sv.Records == 0 {
		sv.FirstPhys = o.FirstPhys
	}
	sv.Records += o.Records
	sv.EndPhys = o.EndPhys
	for _, q := range o.Queues {
		found := false
		for i := range sv.Queues {
			p := &sv.Queues[i]
			if p.Topic == q.Topic && p.QueueID == q.QueueID {
				p.Records += q.Records
				p.FirstQueueOffset = min(p.FirstQueueOffset, q.FirstQueueOffset)
				p.LastQueueOffset = max(p.LastQueueOffset, q.LastQueueOffset)
				p.LastPhys = q.LastPhys
				found = true
				break
			}
		}
		if !found {
			sv.Queues = append(sv.Queues, q)
		}
	}
	sort.Slice(sv.Queues, func(i, j int) bool {
		a, b := sv.Queues[i], sv.Queues[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.QueueID < b.QueueID
	})
}

// String is a one-line summary for logs: at most the first eight queues.
func (sv Salvage) String() string {
	if sv.Records == 0 {
		return "no valid record"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d valid records at [%d, %d)", sv.Records, sv.FirstPhys, sv.EndPhys)
	for i, q := range sv.Queues {
		if i == 8 {
			fmt.Fprintf(&b, "; %d more queues", len(sv.Queues)-i)
			break
		}
		fmt.Fprintf(&b, "; %s/%d: %d, queue offsets %d-%d, phys %d-%d",
			q.Topic, q.QueueID, q.Records, q.FirstQueueOffset, q.LastQueueOffset, q.FirstPhys, q.LastPhys)
	}
	return b.String()
}

// salvage finds the valid records of segment (base, r) in [from, r.size):
// it hops from record to record while they validate and searches for the
// next valid one (findValid) past anything that does not; a valid blank
// ends the segment. If fromBad, the record at from is known invalid.
func (sc scanner) salvage(r *segReader, base, from int64, fromBad bool) (Salvage, error) {
	var sv Salvage
	p := from
	if fromBad {
		c, err := sc.findValid(r, base, from, r.size)
		if err != nil || c < 0 {
			return sv, err
		}
		p = c - base
	}
	for p+record.BlankSize <= r.size {
		h, err := r.at(p, record.BlankSize)
		if err != nil {
			return sv, err
		}
		size, magic, _ := record.Header(h)
		if magic == record.MagicBlank && int64(size) == sc.segSize-p {
			break
		}
		if magic == record.MagicMessage && int(size) >= record.MinSize && p+int64(size) <= r.size {
			rec, err := r.at(p, int(size))
			if err != nil {
				return sv, err
			}
			if _, err := record.Validate(rec, base+p); err == nil {
				if err := sv.add(base+p, rec); err != nil {
					return sv, err
				}
				p += int64(size)
				continue
			}
		}
		c, err := sc.findValid(r, base, p, r.size)
		if err != nil || c < 0 {
			return sv, err
		}
		p = c - base
	}
	return sv, nil
}
