package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/record"
)

// blankReserve is the room a segment always keeps after its last record
// for the blank that closes it (RocketMQ's END_FILE_MIN_BLANK_LENGTH).
const blankReserve = record.BlankSize

// encodeBuf is a pooled scratch buffer records are encoded into before the
// append lock copies them into the segment.
type encodeBuf struct{ b []byte }

func (s *Store) getBuf(n int) *encodeBuf {
	b := s.bufs.Get().(*encodeBuf)
	if cap(b.b) < n {
		b.b = make([]byte, n, max(n, 4096))
	}
	b.b = b.b[:n]
	return b
}

func (s *Store) putBuf(b *encodeBuf) {
	if cap(b.b) > 8<<20 {
		b.b = nil // do not pin a huge batch's buffer
	}
	s.bufs.Put(b)
}

// dispatchReq is a written record the dispatcher has to index.
type dispatchReq struct {
	topic   string
	qid     int32
	size    int32
	qoff    int64
	phys    int64
	tags    int64
	indexed bool
	// For the key index (keyindex.go), taken from the message at append:
	// its store time and key hashes, nkeys of them in keys; nkeys -1: not
	// taken (more than fit, a replicated record, the index off), so the
	// dispatcher reads the record back from the log.
	nkeys int8
	keys  [inlineKeys]uint32
	ts    int64
}

// Append writes one record. With FlushSync it returns once the record is
// durable (ErrFlushTimeout after Flush.Timeout; the context's error if it
// ends first; the sticky ErrBroken error if a flush failed; a lone writer
// that flushes for itself waits for that fsync, lone.go). The other
// policies return once the record is written and readable.
//
// An error other than those three means nothing was written
// (ErrDiskFull, ErrClosed, ErrMessageTooLarge, ErrInvalidMessage, a write
// error). Append does not allocate in steady state.
func (s *Store) Append(ctx context.Context, m *Message) (AppendResult, error) {
	msgs := [1]*Message{m}
	var res [1]AppendResult
	_, err := s.append(ctx, msgs[:], res[:])
	return res[0], err
}

// AppendBatch writes msgs contiguously in one segment, under one lock and
// with one copy, and waits for durability once (FlushSync). The batch is
// written whole or not at all; it must fit one segment. On
// ErrFlushTimeout or a context error the results describe the written
// records.
func (s *Store) AppendBatch(ctx context.Context, msgs []*Message) ([]AppendResult, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	res := make([]AppendResult, len(msgs))
	written, err := s.append(ctx, msgs, res)
	if !written {
		return nil, err
	}
	return res, err
}

// append encodes, appends and (FlushSync) waits; written says whether the
// records were written (so res is filled), whatever err says.
func (s *Store) append(ctx context.Context, msgs []*Message, res []AppendResult) (written bool, err error) {
	total := 0
	for _, m := range msgs {
		n, err := s.recordSize(m)
		if err != nil {
			return false, err
		}
		total += n
	}
	if total > s.maxRec {
		return false, fmt.Errorf("%w: %d bytes of records, a %d-byte segment takes at most %d",
			ErrMessageTooLarge, total, s.segSize, s.maxRec)
	}
	buf := s.getBuf(total)
	off := 0
	for _, m := range msgs {
		f := m.fields()
		n, err := record.EncodeUnsealed(buf.b[off:], &f)
		if err != nil { // recordSize checked the same
			s.putBuf(buf)
			return false, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
		}
		off += n
	}

	var w *waiter
	if s.policy == FlushSync {
		if err := s.acquireSlot(ctx); err != nil {
			s.putBuf(buf)
			return false, err
		}
		w = s.getWaiter()
	}
	end, err := s.appendLocked(buf.b, msgs, res, w)
	s.putBuf(buf)
	if err != nil {
		if w != nil {
			s.putWaiter(w)
			<-s.sem
		}
		return false, err
	}
	return true, s.acknowledge(ctx, end, w)
}

// acknowledge is an append's wait after its bytes are written up to end:
// for the flush that covers w (FlushSync), or for the hand-over of its
// bytes to the kernel; then the dispatcher is kicked.
func (s *Store) acknowledge(ctx context.Context, end int64, w *waiter) error {
	if w != nil {
		if !s.ownRound() {
			kick(s.flushKick) // the flusher's round kicks the dispatcher
		}
		return s.wait(ctx, w)
	}
	if s.needsHandOff() {
		if err := s.handOff(end); err != nil {
			return err
		}
	}
	kick(s.dispatchKick)
	return nil
}

// recordSize checks m and returns its record's size.
func (s *Store) recordSize(m *Message) (int, error) {
	if m.QueueID < 0 {
		return 0, fmt.Errorf("%w: queue id %d", ErrInvalidMessage, m.QueueID)
	}
	if m.SysFlag&record.FlagHole != 0 {
		return 0, fmt.Errorf("%w: sysflag %#x has the bit a repair's hole carries", ErrInvalidMessage, m.SysFlag)
	}
	if len(m.Body) > s.opts.MaxMessageSize {
		return 0, fmt.Errorf("%w: body of %d bytes, MaxMessageSize %d", ErrMessageTooLarge, len(m.Body), s.opts.MaxMessageSize)
	}
	f := m.fields()
	n, err := f.Size()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	return n, nil
}

// kick wakes a goroutine waiting on ch without blocking.
func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// appendLocked takes the append lock, assigns offsets and the store
// time, seals the records in buf and copies them into the active segment
// (rolling to a new one first if they do not fit).
func (s *Store) appendLocked(buf []byte, msgs []*Message, res []AppendResult, w *waiter) (end int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.appendableLocked(true); err != nil {
		return 0, err
	}
	if s.fenced.Load() {
		return 0, ErrFenced
	}
	g := s.mu.active
	if s.mu.poisoned || g == nil || g.sealed.Load() || int64(len(buf))+blankReserve > s.segSize-g.seg.Written() {
		if err := s.rollLocked(); err != nil {
			return 0, err
		}
		g = s.mu.active
	}
	phys := g.base + g.seg.Written()
	now := s.clock().UnixMilli()
	if now < s.mu.lastTs {
		now = s.mu.lastTs // store times never go back along the log
	}
	off := 0
	for i, m := range msgs {
		size := int(binary.BigEndian.Uint32(buf[off:]))
		var qoff int64
		if indexed(m.SysFlag) {
			c := s.counterLocked(m.Topic, m.QueueID)
			qoff = *c
			*c++
		}
		record.Seal(buf[off:off+size], qoff, phys+int64(off), now)
		res[i] = AppendResult{PhysicalOffset: phys + int64(off), QueueOffset: qoff, Size: int32(size), StoreTimestamp: now}
		off += size
	}
	if err := g.seg.Append(buf); err != nil {
		for i := len(msgs) - 1; i >= 0; i-- {
			if indexed(msgs[i].SysFlag) {
				*s.counterLocked(msgs[i].Topic, msgs[i].QueueID)--
			}
		}
		// The tail did not move, but part of buf may lie past it: seal the
		// segment before the next append so those bytes are never read.
		s.mu.poisoned = true
		s.m.writeErrors.Add(1)
		return 0, writeError(fmt.Sprintf("append %d bytes to %s at %d", len(buf), g.path, phys-g.base), err)
	}
	end = phys + int64(len(buf))
	s.written.Store(end)
	if s.ho.inAppend {
		s.storeHandedLocked(end)
	}
	s.mu.lastTs = now
	// Stored only when they change (an atomic store is a full fence):
	// the clock moves once a millisecond, not once an append.
	if g.lastTs.Load() != now {
		g.lastTs.Store(now)
	}
	if !g.hasRecords.Load() {
		g.hasRecords.Store(true)
	}
	for i, m := range msgs {
		s.mu.dispatch = append(s.mu.dispatch, dispatchReq{
			topic: m.Topic, qid: m.QueueID, size: res[i].Size, indexed: indexed(m.SysFlag),
			qoff: res[i].QueueOffset, phys: res[i].PhysicalOffset, tags: m.TagsCode,
			ts: now, nkeys: -1,
		})
		if s.kidx != nil {
			s.takeKeysLocked(&s.mu.dispatch[len(s.mu.dispatch)-1], m)
		}
	}
	if w != nil {
		s.pendLocked(w, end)
	}
	s.m.appends.Add(int64(len(msgs)))
	s.m.appendBytes.Add(int64(len(buf)))
	return end, nil
}

// appendableLocked says why nothing may be appended now (nil if it may):
// the store is closed or broken, or (writing) read-only on a full disk.
func (s *Store) appendableLocked(writing bool) error {
	if s.mu.closed {
		return ErrClosed
	}
	if err := s.Err(); err != nil {
		return err
	}
	if writing {
		return s.readOnlyErr() // a full disk (readonly.go)
	}
	return nil
}

// pendLocked queues w, waiting for durability up to end, for the flusher.
func (s *Store) pendLocked(w *waiter, end int64) {
	w.end = end
	s.m.waits.Add(1)
	s.mu.pending = append(s.mu.pending, w)
	s.pendingN.Store(int64(len(s.mu.pending)))
}

// counterLocked returns the next-queue-offset counter of (topic, qid).
func (s *Store) counterLocked(topic string, qid int32) *int64 {
	k := queueKey{topic, qid}
	c := s.mu.counters[k]
	if c == nil {
		c = new(int64)
		s.mu.counters[k] = c
	}
	return c
}

// rollLocked makes a new active segment after the current one, sealing the
// current one with a blank. On error nothing changed (the new file, if
// made, is removed).
func (s *Store) rollLocked() error {
	old := s.mu.active
	var base int64
	if old != nil {
		base = old.base + s.segSize
	} else {
		base = s.written.Load()
	}
	ng, err := s.createSegment(base)
	if err != nil {
		return err
	}
	if old != nil && !old.sealed.Load() {
		if err := s.sealLocked(old); err != nil {
			s.dropSegment(ng)
			return err
		}
	}
	if old != nil && (!s.ho.inAppend || s.staged) {
		// The log stays a prefix on file: every byte of the old segment
		// (its blank included) reaches the kernel before any byte of the
		// new one can (pwrite writes a lone writer's append through).
		if _, err := old.seg.WriteOut(); err != nil {
			s.dropSegment(ng)
			s.m.writeErrors.Add(1)
			return s.breakWith(fmt.Errorf("write out %s before rolling: %w", old.path, err))
		}
	}
	if sl, ok := segSealer(old); ok {
		// Its buffer (and stage) go: every byte is in the file now.
		if err := sl.Seal(); err != nil {
			s.dropSegment(ng)
			s.m.writeErrors.Add(1)
			return s.breakWith(fmt.Errorf("seal %s before rolling: %w", old.path, err))
		}
	}
	// The flusher syncs the directory before it reports any byte of ng
	// durable: set before written moves into ng.
	s.dirDirty.Store(true)
	s.segs.Lock()
	list := make([]*segment, len(s.segs.list), len(s.segs.list)+1)
	copy(list, s.segs.list)
	s.segs.list = append(list, ng)
	s.segs.Unlock()
	s.mu.active = ng
	s.mu.poisoned = false
	s.written.Store(base)
	s.m.rolls.Add(1)
	return nil
}

// dropSegment closes and removes a segment a failed roll made.
func (s *Store) dropSegment(ng *segment) {
	_ = ng.seg.Close() // holds nothing and is removed next
	if err := s.fs.Remove(ng.path); err != nil {
		s.log.Warn("storage: could not remove an unused segment", "path", ng.path, "err", err)
	}
}

// sealLocked closes g with a blank record over the rest of its capacity.
func (s *Store) sealLocked(g *segment) error {
	var b [record.BlankSize]byte
	rem := s.segSize - g.seg.Written()
	record.PutBlank(b[:], int32(rem))
	if err := g.seg.Append(b[:]); err != nil {
		s.mu.poisoned = true
		s.m.writeErrors.Add(1)
		return writeError(fmt.Sprintf("seal %s with a %d-byte blank", g.path, rem), err)
	}
	g.sealed.Store(true)
	s.written.Store(g.base + s.segSize)
	return nil
}

// segSealer is g's backend.Sealer, if g is a segment that has one.
func segSealer(g *segment) (backend.Sealer, bool) {
	if g == nil {
		return nil, false
	}
	sl, ok := g.seg.(backend.Sealer)
	return sl, ok
}

// createSegment creates the segment file starting at base.
func (s *Store) createSegment(base int64) (*segment, error) {
	path := s.segmentPath(base)
	sg, err := s.be.Create(s.segConfig(path, 0))
	if err != nil {
		s.m.writeErrors.Add(1)
		// A backend that failed after making the file (preallocate, map,
		// ring setup: ENOSPC, ENOMEM, EMFILE) closed it; remove it so no
		// stray segment past the log's end waits for recovery. The retry
		// creates it again.
		if rerr := s.fs.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			s.log.Warn("storage: could not remove a segment whose creation failed", "path", path, "err", rerr)
		}
		return nil, writeError("create segment "+path, err)
	}
	return &segment{base: base, path: path, seg: sg}, nil
}

func (s *Store) segmentPath(base int64) string { return filepath.Join(s.clDir, segmentName(base)) }
