package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/record"
)

// maxFilterEntries is how many ConsumeQueue entries one GetMessages call
// looks at at most while its tag filter rejects them (RocketMQ's
// maxFilterMessageSize 16000 bytes / 20).
const maxFilterEntries = 16000 / consumequeue.EntrySize

// ReadAt returns a copy of the record of size bytes at physOffset.
func (s *Store) ReadAt(physOffset int64, size int32) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w: size %d at %d", ErrNotFound, size, physOffset)
	}
	b := make([]byte, size)
	if err := s.readInto(b, physOffset); err != nil {
		return nil, err
	}
	if record.IsHole(b) {
		return nil, fmt.Errorf("%w: the record at %d is a hole a repair left where a damaged one was", ErrNotFound, physOffset)
	}
	return b, nil
}

// readInto fills b with the log's bytes at phys (within one segment).
func (s *Store) readInto(b []byte, phys int64) error {
	_, err := s.readLogAt(b, phys, false)
	return err
}

// readLogAt reads the log's bytes at phys (within one segment) into b and
// returns how many it read: all of b, or with short set (a read block
// cache's block, blockcache.go) fewer when the segment's file ends first
// (a sealed segment's file may end before the segment does).
func (s *Store) readLogAt(b []byte, phys int64, short bool) (int, error) {
	s.segs.RLock() // written is checked under it: a cut lowers it under the write lock
	defer s.segs.RUnlock()
	g, err := s.segmentSpanLocked(phys, len(b))
	if err != nil {
		return 0, err
	}
	n, err := g.seg.ReadAt(b, phys-g.base)
	if short && n > 0 && errors.Is(err, io.EOF) {
		return n, nil
	}
	if err != nil {
		return 0, fmt.Errorf("storage: read %d bytes at %d of %s: %w", len(b), phys-g.base, g.path, err)
	}
	return n, nil
}

// segmentSpanLocked returns the segment that holds the log's n bytes at
// phys, all of them written (segs read-locked), or an ErrNotFound.
func (s *Store) segmentSpanLocked(phys int64, n int) (*segment, error) {
	end := phys + int64(n)
	if phys < 0 || end > s.written.Load() {
		return nil, fmt.Errorf("%w: [%d, %d) past the written offset %d", ErrNotFound, phys, end, s.written.Load())
	}
	g := s.segmentAtLocked(phys)
	if g == nil {
		return nil, fmt.Errorf("%w: offset %d (min offset %d)", ErrNotFound, phys, s.minOffsetLocked())
	}
	if end > g.end(s.segSize) {
		return nil, fmt.Errorf("%w: [%d, %d) crosses the end of segment %s", ErrNotFound, phys, end, g.path)
	}
	return g, nil
}

func (s *Store) minOffsetLocked() int64 {
	if len(s.segs.list) == 0 {
		return s.written.Load()
	}
	return s.segs.list[0].base
}

// queue returns the ConsumeQueue of (topic, queueID).
func (s *Store) queue(topic string, queueID int32) *consumequeue.Queue {
	return s.cq.Queue(topic, queueID)
}

// MinQueueOffset returns the first readable offset of (topic, queueID).
func (s *Store) MinQueueOffset(topic string, queueID int32) int64 {
	return s.queue(topic, queueID).MinOffset()
}

// MaxQueueOffset returns the offset after the last indexed record of
// (topic, queueID): the next offset to be assigned once the dispatcher has
// indexed every written record (microseconds after Append returns;
// OnDispatch says when). As RocketMQ, it counts readable offsets.
func (s *Store) MaxQueueOffset(topic string, queueID int32) int64 {
	return s.queue(topic, queueID).MaxOffset()
}

// storeTime reads a record's store timestamp.
func (s *Store) storeTime(phys int64, size int32) (int64, error) {
	n := min(int(size), record.StoreTimeOffset(record.FlagBornHostV6)+8)
	var buf [128]byte
	b := buf[:n]
	if err := s.readInto(b, phys); err != nil {
		return 0, err
	}
	if int(size) < record.MinSize || n < record.StoreTimeOffset(record.SysFlagOf(b))+8 {
		return 0, fmt.Errorf("%w: record of %d bytes at %d", ErrCorrupt, size, phys)
	}
	return record.StoreTimestampOf(b), nil
}

// OffsetByTime returns the first queue offset of (topic, queueID) whose
// record was stored at or after unixMs (ms): MinQueueOffset if all were,
// MaxQueueOffset if none was. On a read error it returns MinQueueOffset.
func (s *Store) OffsetByTime(topic string, queueID int32, unixMs int64) int64 {
	q := s.queue(topic, queueID)
	off, err := q.OffsetByTime(unixMs, s.storeTime)
	if err != nil {
		s.log.Warn("storage: offset by time", "topic", topic, "queue", queueID, "err", err)
		return q.MinOffset()
	}
	return off
}

// EarliestStoreTime returns the store time (ms) of the first readable
// record of (topic, queueID).
func (s *Store) EarliestStoreTime(topic string, queueID int32) (int64, error) {
	q := s.queue(topic, queueID)
	e, err := q.Entry(q.MinOffset())
	if err != nil {
		return 0, fmt.Errorf("storage: earliest store time of %s/%d: %w", topic, queueID, err)
	}
	return s.storeTime(e.PhysOffset, e.Size)
}

// GetMessages reads up to maxMsgs records and about maxBytes (the first
// record is taken whatever its size; maxBytes <= 0 means no limit) from
// (topic, queueID) starting at queue offset offset, as RocketMQ's
// DefaultMessageStore.getMessage: tagFilter (nil = all) is checked against
// the ConsumeQueue tag hash, and the status says what happened. Every
// record returned has been checked (get_verify.go); at a corrupt one the
// read stops, and a read starting at one returns a *CorruptRecordError
// with NextOffset past it.
//
// A read that meets a cut (TruncateTo, ResetTo) reads again: it may have
// taken an index entry from before the cut and the log's bytes from after.
func (s *Store) GetMessages(topic string, queueID int32, offset int64, maxMsgs int, maxBytes int,
	tagFilter func(tagsCode int64) bool) (GetResult, error) {
	return s.getMessagesRetry(readNew, topic, queueID, offset, maxMsgs, maxBytes, tagFilter)
}

// GetMessagesPooled is GetMessages reading the records into a buffer
// from the store's pool (readbuf.go) instead of a new one: the caller
// hands it back with res.Release once nothing reads Records or Whole any
// more, or leaves it to the garbage collector. The broker's
// pull does, after its writer has sent the answer: a backlog drain
// allocated the bytes it read once more, and the collector ran for them.
func (s *Store) GetMessagesPooled(topic string, queueID int32, offset int64, maxMsgs int, maxBytes int,
	tagFilter func(tagsCode int64) bool) (GetResult, error) {
	return s.getMessagesRetry(readPooled, topic, queueID, offset, maxMsgs, maxBytes, tagFilter)
}

func (s *Store) getMessagesRetry(mode readMode, topic string, queueID int32, offset int64, maxMsgs int, maxBytes int,
	tagFilter func(tagsCode int64) bool) (GetResult, error) {
	for try := 0; ; try++ {
		gen := s.cuts.Load()
		if gen%2 == 1 && try < cutReadTries-1 {
			// A cut or a repair is under way (it holds the generation odd
			// for its writes and fsync): wait for it rather than spin.
			time.Sleep(time.Millisecond << min(try, 5))
			continue
		}
		res, err := s.getMessages(gen, mode, topic, queueID, offset, maxMsgs, maxBytes, tagFilter)
		if gen%2 == 0 && s.cuts.Load() == gen && !errors.Is(err, ErrCutDuringRead) {
			return res, err
		}
		res.Release()
		if try >= cutReadTries-1 {
			return GetResult{Status: OffsetFoundNull, NextOffset: offset}, ErrCutDuringRead
		}
	}
}

// cutReadTries bounds the reads (and waits, about a quarter of a second
// in all) a read makes while cuts or repairs run under it.
const cutReadTries = 12

// ErrCutDuringRead: the log was cut (or a damaged range repaired) while
// a read ran, again and again. Nothing is wrong with the log: the caller
// reads again (a broker's pull answers PULL_RETRY_IMMEDIATELY).
var ErrCutDuringRead = errors.New("storage: the log was cut during the read; read again")

// getMessages is GetMessages, for reads that began at cut generation gen.
func (s *Store) getMessages(gen int64, mode readMode, topic string, queueID int32, offset int64, maxMsgs int, maxBytes int,
	tagFilter func(tagsCode int64) bool) (GetResult, error) {
	q := s.queue(topic, queueID)
	minOff, maxOff := q.MinOffset(), q.MaxOffset()
	res := GetResult{MinOffset: minOff, MaxOffset: maxOff, NextOffset: offset}
	switch {
	case maxOff == 0:
		res.Status, res.NextOffset = NoMessageInQueue, 0
		return res, nil
	case offset < minOff:
		res.Status, res.NextOffset = OffsetTooSmall, minOff
		return res, nil
	case offset == maxOff:
		res.Status = OffsetOverflowOne
		return res, nil
	case offset > maxOff:
		res.Status, res.NextOffset = OffsetOverflowBadly, maxOff
		return res, nil
	}
	maxMsgs = max(maxMsgs, 1)
	if maxBytes <= 0 {
		maxBytes = math.MaxInt
	}
	budget := max(maxFilterEntries, maxMsgs)
	clMin := s.CommitLogMinOffset()
	res.Status = NoMatchedMessage
	var picked []consumequeue.Entry
	var offsets []int64
	next, bytes := offset, 0
	var dst []consumequeue.Entry
scan:
	for next < maxOff && budget > 0 && len(picked) < maxMsgs {
		es, err := q.Entries(next, min(budget, max(maxMsgs-len(picked), 32)), dst)
		if err != nil {
			if errors.Is(err, consumequeue.ErrOffsetTooSmall) { // retention moved on
				if len(picked) == 0 {
					res.Status = OffsetFoundNull
				}
				next = max(next, q.MinOffset())
				break
			}
			return res, resourceError(fmt.Errorf("storage: read consume queue %s/%d at %d: %w", topic, queueID, next, err))
		}
		if len(es) == 0 {
			break
		}
		dst = es
		for _, e := range es {
			if len(picked) > 0 && (len(picked) >= maxMsgs || bytes+int(e.Size) > maxBytes) {
				break scan
			}
			budget--
			next++
			if e.PhysOffset < clMin {
				if len(picked) == 0 {
					res.Status = MessageWasRemoving
				}
				continue
			}
			if e.TagsCode == record.HoleTagsCode { // a repair's hole: never delivered
				continue
			}
			if tagFilter != nil && !tagFilter(e.TagsCode) {
				continue
			}
			if ce := s.checkEntry(topic, queueID, next-1, e); ce != nil {
				if len(picked) == 0 {
					return res, stopAtCorrupt(&res, ce)
				}
				next--
				break scan
			}
			picked = append(picked, e)
			offsets = append(offsets, next-1)
			bytes += int(e.Size)
		}
	}
	res.NextOffset = next
	if len(picked) == 0 {
		return res, nil
	}
	if !s.coldReadsCached(picked) {
		s.adviseBacklogRead(topic, queueID, picked[0].PhysOffset)
	}
	if mode == readFromFile && s.fileRecords(&res, picked, offsets, bytes) {
		return res, nil
	}
	if err := s.readRecords(gen, mode != readNew, mode != readFromFile, &res, topic, queueID, picked, offsets, bytes); err != nil {
		return res, err
	}
	return res, nil
}

// Span reads: the records a pull picks from one queue are seldom adjacent
// in the CommitLog (queues interleave), and reading each with its own
// pread cost a backlog drain over 8 queues 30% of its CPU. A gap of up to
// spanGap bytes between two picked records is read along with them (one
// pread of a span up to spanMax bytes into a scratch buffer, then a copy
// of each record): a system call costs about as much as copying 16 KiB
// here. Segments read from a mapping (backend.MappedReader) read record by
// record, as a span would only copy more. The scratch buffer comes from
// the pooled read buffers (readbuf.go).
const (
	spanGap = 16 << 10
	spanMax = 1 << 20
)

// readRecords reads the picked records into one buffer, one ReadAt per run
// of adjacent records (or per span, above), and checks each before it
// joins the result unless check is off (a read for a client that checks
// CRCs itself, get_file.go).
func (s *Store) readRecords(gen int64, pooled, check bool, res *GetResult, topic string, queueID int32, picked []consumequeue.Entry, offsets []int64, total int) error {
	var buf []byte
	if pooled {
		res.Buffer = getReadBuffer(total)
		buf = res.Buffer.bytes(total)
	} else {
		buf = make([]byte, total)
	}
	defer func() {
		if len(res.Records) == 0 { // nothing lies in it
			res.Release()
		}
	}()
	res.Records = make([][]byte, 0, len(picked))
	res.QueueOffsets = make([]int64, 0, len(picked))
	spans := !s.readsMapped(picked[0].PhysOffset)
	off := 0
	for i := 0; i < len(picked); {
		start := picked[i].PhysOffset
		j, end, useful := i+1, start+int64(picked[i].Size), int64(picked[i].Size)
		for j < len(picked) {
			p := picked[j]
			next := p.PhysOffset + int64(p.Size)
			if p.PhysOffset < end || !s.sameSegment(start, next-1) {
				break
			}
			gap := p.PhysOffset != end
			if gap && (!spans || p.PhysOffset-end > spanGap) {
				break
			}
			// A group with a gap is read through the scratch buffer: it
			// must fit it. A gapless one is read straight into dst.
			if (gap || useful != end-start) && next-start > spanMax {
				break
			}
			end, useful = next, useful+int64(p.Size)
			j++
		}
		err := s.readGroup(gen, buf[off:off+int(useful)], picked[i:j], start, end)
		if err != nil {
			if errors.Is(err, ErrNotFound) && len(res.Records) > 0 {
				res.NextOffset = offsets[i]
				break // retention got there first: return what we have
			}
			if errors.Is(err, ErrNotFound) {
				res.Status = MessageWasRemoving
				return nil
			}
			return err
		}
		for k := i; k < j; k++ {
			n := int(picked[k].Size)
			rec := buf[off : off+n : off+n]
			if !check {
				// the receiver checks it
			} else if err := verifyRecord(rec, picked[k]); err != nil {
				if s.cuts.Load() != gen {
					return ErrCutDuringRead // not corrupt: another record lies there now
				}
				err = stopAtCorrupt(res, s.corrupt(topic, queueID, offsets[k], picked[k], err))
				if len(res.Records) > 0 {
					res.Whole = buf[:res.Bytes:res.Bytes]
				}
				return err
			}
			res.Records = append(res.Records, rec)
			res.QueueOffsets = append(res.QueueOffsets, offsets[k])
			res.Bytes += n
			off += n
		}
		i = j
	}
	if len(res.Records) > 0 {
		res.Status = Found
		res.Whole = buf[:res.Bytes:res.Bytes] // records were appended from buf's start, in order
	}
	return nil
}

// readGroup reads the records of group, which lie in [start, end) of one
// segment, into dst (exactly their bytes, in order): straight into dst
// when they are adjacent, else through the read block cache or a span
// read.
func (s *Store) readGroup(gen int64, dst []byte, group []consumequeue.Entry, start, end int64) error {
	if int64(len(dst)) == end-start {
		return s.readInto(dst, start)
	}
	if s.rc.covers(s, start, end) {
		if ok, err := s.rc.readGroup(s, dst, group, gen); ok || err != nil {
			return err
		}
	}
	sb := getReadBuffer(int(end - start))
	defer sb.Release()
	span := sb.bytes(int(end - start))
	if err := s.readInto(span, start); err != nil {
		return err
	}
	off := 0
	for _, e := range group {
		off += copy(dst[off:], span[e.PhysOffset-start:e.PhysOffset-start+int64(e.Size)])
	}
	return nil
}

// readsMapped says whether the segment holding phys reads from a mapping
// (backend.MappedReader).
func (s *Store) readsMapped(phys int64) bool {
	s.segs.RLock()
	defer s.segs.RUnlock()
	g := s.segmentAtLocked(phys)
	if g == nil {
		return false
	}
	m, ok := g.seg.(backend.MappedReader)
	return ok && m.ReadsMapped()
}

func (s *Store) sameSegment(a, b int64) bool { return a/s.segSize == b/s.segSize }
