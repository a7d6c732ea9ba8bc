package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/samsamq/samsa/storage/record"
)

// replRec is one record of an AppendReplicated call, parsed and checked
// before the append lock.
type replRec struct {
	pos, size int32
	qid       int32
	indexed   bool
	qoff      int64
	tags      int64
	ts        int64
	topic     []byte // aliases the caller's data
	// Under the append lock: the queue's counter, and whether this call
	// made it (undone on failure).
	c     *int64
	fresh bool
}

// replBatch is AppendReplicated's pooled scratch list.
type replBatch struct{ recs []replRec }

// errPoisoned: the active segment's tail may hold a refused write's bytes;
// AppendReplicated cuts them off (TruncateTo) and tries again.
var errPoisoned = errors.New("storage: the active segment is poisoned by a failed write")

func mismatch(off int64, format string, args ...any) error {
	return fmt.Errorf("%w: at %d: %s", ErrReplicaMismatch, off, fmt.Sprintf(format, args...))
}

// AppendReplicated appends bytes a master's ReadLog produced. from must
// equal WrittenOffset(). data holds whole records and does not cross a
// segment boundary, except that a blank filler ends the segment (the next
// call then starts at the next segment's base). Every record is checked
// before anything is written: total size and magic, the whole-record CRC
// (record.Verify, which covers the body and its CRC), the physical-offset
// field equal to its position, room left for the segment's blank after
// it, and its queue offset equal to that queue's next offset (a gap is a
// mismatch; a queue this store holds no offset of takes any first offset
// when the log does not begin at 0, as after ResetTo to a later base, and
// 0 otherwise). A blank filler must declare exactly the rest of the
// segment and end data, either as its 8-byte header alone (what ReadLog
// gives) or whole. Any failure appends nothing and returns an error
// wrapping ErrReplicaMismatch naming the offset.
//
// The bytes are written unchanged (the slave's CommitLog is
// byte-identical to the master's, store timestamps included; of a blank
// filler, its header, as the master wrote it) through the store's normal
// write path: a segment is created where the master's began, the bytes are
// handed to the kernel before return, indexed by the dispatcher into
// ConsumeQueues (OnDispatch callbacks fire, so long-polls on the slave
// wake), and queue counters advanced. Under the sync flush policy it asks
// the flusher for a round and returns without waiting for it (the
// records become readable once it ends, as sync appends do; FlushTo
// waits for durability). A
// read-only (full) or broken store refuses as Append does. Returns the
// new WrittenOffset (on an error, the WrittenOffset then).
//
// It may run concurrently with readers and with Append (from then decides
// which comes first), and does not allocate in steady state.
func (s *Store) AppendReplicated(ctx context.Context, from int64, data []byte) (end int64, err error) {
	if len(data) == 0 {
		return s.written.Load(), nil
	}
	b := s.replBufs.Get().(*replBatch)
	defer func() {
		clear(b.recs)
		b.recs = b.recs[:0]
		s.replBufs.Put(b)
	}()
	blankAt, err := s.parseReplicated(from, data, b)
	if err != nil {
		return s.written.Load(), err
	}
	end, err = s.appendReplicatedLocked(from, data, b.recs, blankAt)
	if errors.Is(err, errPoisoned) {
		// A refused write may have left bytes past the tail: cut them
		// off the file before writing at the tail again.
		if err = s.TruncateTo(from); err == nil {
			end, err = s.appendReplicatedLocked(from, data, b.recs, blankAt)
		}
	}
	if err != nil {
		return s.written.Load(), err
	}
	if s.policy == FlushSync {
		// A round now, waited for by nobody: the bytes are written, and
		// the slave's ACK means appended unless it asked to ACK flushed
		// (then it calls FlushTo). RocketMQ's slave likewise flushes
		// behind its appends, not before its report.
		s.flushWanted.Store(true)
		kick(s.flushKick)
		return end, nil
	}
	return end, s.acknowledge(ctx, end, nil)
}

// parseReplicated checks what AppendReplicated can check without the
// store's state and lists the records in b. blankAt is where a blank
// filler ends data (-1: none).
func (s *Store) parseReplicated(from int64, data []byte, b *replBatch) (blankAt int, err error) {
	if from < 0 {
		return -1, mismatch(from, "negative offset")
	}
	segEnd := from - from%s.segSize + s.segSize
	if from+int64(len(data)) > segEnd {
		return -1, mismatch(from, "%d bytes cross the segment end %d", len(data), segEnd)
	}
	var rec record.Record
	for pos := 0; pos < len(data); {
		at := from + int64(pos)
		size, magic, herr := record.Header(data[pos:])
		switch {
		case herr != nil:
			return -1, mismatch(at, "a partial record header (%d bytes)", len(data)-pos)
		case magic == record.MagicBlank:
			if int64(size) != segEnd-at || (len(data)-pos != record.BlankSize && len(data)-pos != int(size)) {
				return -1, mismatch(at, "a blank filler of %d bytes with %d bytes of data and %d of segment left", size, len(data)-pos, segEnd-at)
			}
			return pos, nil
		case magic != record.MagicMessage:
			return -1, mismatch(at, "bad magic %#08x", uint32(magic))
		case int(size) < record.MinSize || int(size) > len(data)-pos:
			return -1, mismatch(at, "a record of %d bytes with %d bytes of data left (partial)", size, len(data)-pos)
		case int64(size)+blankReserve > segEnd-at:
			return -1, mismatch(at, "a record of %d bytes leaves no room for the blank filler before %d", size, segEnd)
		}
		b1 := data[pos : pos+int(size)]
		if err := record.Verify(b1, at); err != nil {
			return -1, mismatch(at, "%v", err)
		}
		if err := record.DecodeUnchecked(b1, &rec); err != nil {
			return -1, mismatch(at, "%v", err)
		}
		b.recs = append(b.recs, replRec{
			pos: int32(pos), size: size, qid: rec.QueueID, indexed: indexed(rec.SysFlag), qoff: rec.QueueOffset,
			tags: storedTags(&rec), ts: rec.StoreTimestamp, topic: rec.Topic,
		})
		pos += int(size)
	}
	return -1, nil
}

// appendReplicatedLocked takes the append lock, checks data continues the
// log (its offset, its queue offsets), makes the segment from begins if
// it is a segment base, and writes data through it.
func (s *Store) appendReplicatedLocked(from int64, data []byte, recs []replRec, blankAt int) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.appendableLocked(true); err != nil {
		return 0, err
	}
	if wr := s.written.Load(); from != wr {
		return 0, mismatch(from, "the log is written up to %d", wr)
	}
	if s.mu.poisoned {
		return 0, errPoisoned
	}
	if err := s.countReplicatedLocked(from, recs); err != nil {
		return 0, err
	}
	g := s.mu.active
	if g == nil || g.sealed.Load() {
		// from is the end of a sealed segment, or of an empty log: the
		// master began a segment there.
		if err := s.rollLocked(); err != nil {
			s.uncountLocked(recs)
			return 0, err
		}
		g = s.mu.active
	}
	if g.base+g.seg.Written() != from {
		s.uncountLocked(recs)
		return 0, fmt.Errorf("storage: internal: active segment %s ends at %d, written %d", g.path, g.base+g.seg.Written(), from)
	}
	n := len(data)
	if blankAt >= 0 {
		n = blankAt + record.BlankSize // the blank's header, as the master wrote it
	}
	if err := g.seg.Append(data[:n]); err != nil {
		s.uncountLocked(recs)
		s.mu.poisoned = true // as appendLocked: bytes may lie past the tail
		s.m.writeErrors.Add(1)
		return 0, writeError(fmt.Sprintf("append %d replicated bytes to %s at %d", n, g.path, from-g.base), err)
	}
	end := from + int64(n)
	if blankAt >= 0 {
		g.sealed.Store(true)
		end = g.end(s.segSize)
	}
	s.written.Store(end)
	if s.ho.inAppend {
		s.storeHanded(end)
	}
	if len(recs) > 0 {
		ts := recs[len(recs)-1].ts
		s.mu.lastTs = max(s.mu.lastTs, ts) // a promoted slave's store times go on from here
		g.lastTs.Store(ts)
		g.hasRecords.Store(true)
	}
	for i := range recs {
		r := &recs[i]
		s.mu.dispatch = append(s.mu.dispatch, dispatchReq{
			topic: s.internLocked(r.topic), qid: r.qid, size: r.size, indexed: r.indexed,
			qoff: r.qoff, phys: from + int64(r.pos), tags: r.tags, nkeys: -1,
		})
	}
	s.m.appends.Add(int64(len(recs)))
	s.m.appendBytes.Add(int64(n))
	return end, nil
}

// countReplicatedLocked checks every indexed record's queue offset against
// its queue's counter, advancing the counters; on a mismatch it undoes
// what it did.
func (s *Store) countReplicatedLocked(from int64, recs []replRec) error {
	var lateStart, known bool
	for i := range recs {
		r := &recs[i]
		if !r.indexed {
			continue
		}
		k := queueKey{s.internLocked(r.topic), r.qid}
		c := s.mu.counters[k]
		if c == nil {
			if !known {
				lateStart, known = s.CommitLogMinOffset() > 0, true
			}
			c = new(int64)
			if lateStart {
				*c = r.qoff // the queue's earlier records lie below this log
			}
			s.mu.counters[k] = c
			r.fresh = true
		}
		if r.qoff != *c {
			want := *c
			if r.fresh {
				delete(s.mu.counters, k)
				r.fresh = false
			}
			s.uncountLocked(recs[:i])
			return mismatch(from+int64(r.pos), "record of %s/%d has queue offset %d, the queue's next is %d (a queue-offset gap)",
				k.topic, r.qid, r.qoff, want)
		}
		*c++
		r.c = c
	}
	return nil
}

// uncountLocked undoes countReplicatedLocked for recs.
func (s *Store) uncountLocked(recs []replRec) {
	for i := len(recs) - 1; i >= 0; i-- {
		r := &recs[i]
		if r.c == nil {
			continue
		}
		*r.c--
		if r.fresh {
			delete(s.mu.counters, queueKey{s.internLocked(r.topic), r.qid})
		}
		r.c, r.fresh = nil, false
	}
}

// internLocked returns the store's copy of the topic name b.
func (s *Store) internLocked(b []byte) string {
	if t, ok := s.mu.topics[string(b)]; ok {
		return t
	}
	t := string(b)
	s.mu.topics[t] = t
	return t
}
