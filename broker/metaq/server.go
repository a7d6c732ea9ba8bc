package metaq

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"github.com/samsamq/samsa/protocol/metaq"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Store is what the text protocol reads from the broker's store.
type Store interface {
	GetMessages(topic string, queueID int32, offset int64, maxMsgs int, maxBytes int,
		tagFilter func(tagsCode int64) bool) (storage.GetResult, error)
	MinQueueOffset(topic string, queueID int32) int64
	MaxQueueOffset(topic string, queueID int32) int64
}

// Refusal is a broker's "no" to a put or get: MetaQ's code and message.
type Refusal struct {
	Code int
	Msg  string
}

// Deps is what a Server needs from the broker.
type Deps struct {
	Store Store
	// Append stores msgs, all or none, as the broker's send path does
	// (store host, flush policy, replication). A non-nil Refusal with a
	// result per message means stored but not as durable as promised (a
	// flush or replica timeout); with no results, nothing was stored.
	Append func(msgs []*storage.Message) ([]storage.AppendResult, *Refusal)
	// AppendHalf stores m as a half message of transaction txKey (the
	// put's transaction key: a local "TX:..." or an XA "XID:...") (nil:
	// no transactions, a slave): a refusal with res.Size > 0 means stored
	// but not as durable as promised; with res.Size == 0, not stored.
	AppendHalf func(m *storage.Message, txKey string) (storage.AppendResult, *Refusal)
	// PutQueue resolves a put's topic and partition (-1: any) to a queue
	// to write, creating the topic where the broker would.
	PutQueue func(topic string, partition int32) (int32, *Refusal)
	// Readable says whether a get or offset may read topic's partition.
	Readable func(topic string, partition int32) *Refusal
	Now      func() time.Time
	Log      *slog.Logger
	// OnPut and OnGet count messages for the broker's stats (may be nil).
	OnPut func(topic string, bodyBytes int)
	OnGet func(topic string, msgs, bytes int)
}

// Server answers put, get and offset.
type Server struct {
	d   Deps
	pos positions
}

// New returns a Server over d.
func New(d Deps) *Server {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Server{d: d, pos: positions{store: d.Store, m: make(map[queueKey]*queueIndex)}}
}

// dispatchWait bounds how long a put waits for other writers' messages,
// appended to its queue just before it, to reach the queue's index.
const dispatchWait = 10 * time.Second

// message checks a put and makes its message (without the position
// stamp), or gives the refusal's answer.
func (s *Server) message(dst []byte, c *metaq.Command, value []byte, born netip.AddrPort) (*storage.Message, int, []byte) {
	if c.Checksum != metaq.NoChecksum && metaq.Checksum(value) != c.Checksum {
		return nil, 0, metaq.AppendResult(dst, metaq.InternalServerError, fmt.Sprintf(
			"Checksum failure,message may be corrupted when transfering on networking: checksum %d sent, %d computed over %d bytes",
			c.Checksum, metaq.Checksum(value), len(value)), c.Opaque)
	}
	attr, payload, hasAttr, err := metaq.SplitData(c.Flag, value)
	if err != nil {
		return nil, 0, metaq.AppendResult(dst, metaq.BadRequest, err.Error(), c.Opaque)
	}
	if hasAttr && !record.ValidProperty(PropAttr, string(attr)) {
		return nil, 0, metaq.AppendResult(dst, metaq.BadRequest, "the attribute may not contain the bytes 0x01 or 0x02", c.Opaque)
	}
	queue, ref := s.d.PutQueue(c.Topic, c.Partition)
	if ref != nil {
		return nil, 0, metaq.AppendResult(dst, ref.Code, ref.Msg, c.Opaque)
	}
	var props []byte
	if hasAttr {
		props = record.AppendProperty(props, PropAttr, string(attr))
	}
	m := &storage.Message{Topic: c.Topic, QueueID: queue, Flag: c.Flag, Body: payload, Properties: props,
		BornTimestamp: s.d.Now().UnixMilli(), BornHost: born}
	return m, metaq.EncodedLen(hasAttr, len(attr), len(payload)), nil
}

// HalfRef identifies a transaction's put: its half message.
type HalfRef struct {
	QueueOffset, CommitLogOffset int64
}

// PutHalf stores a put inside a transaction as a half message
// (Deps.AppendHalf): no consumer sees it until the transaction commits.
// Its position is known only then, so the answer's offset is -1.
func (s *Server) PutHalf(dst []byte, c *metaq.Command, value []byte, born netip.AddrPort) ([]byte, HalfRef, bool) {
	if s.d.AppendHalf == nil {
		return metaq.AppendResult(dst, metaq.ServiceUnavailable, "this broker takes no transactions (a slave)", c.Opaque), HalfRef{}, false
	}
	m, _, refused := s.message(dst, c, value, born)
	if refused != nil {
		return refused, HalfRef{}, false
	}
	queue := m.QueueID
	res, ref := s.d.AppendHalf(m, c.TxKey)
	if res.Size <= 0 {
		if ref == nil {
			ref = &Refusal{metaq.InternalServerError, "the store took nothing"}
		}
		return metaq.AppendResult(dst, ref.Code, ref.Msg, c.Opaque), HalfRef{}, false
	}
	h := HalfRef{res.QueueOffset, res.PhysicalOffset}
	if ref != nil {
		return metaq.AppendResult(dst, ref.Code, ref.Msg, c.Opaque), h, true
	}
	return metaq.AppendResult(dst, metaq.Success, metaq.PutResult(res.PhysicalOffset, queue, -1), c.Opaque), h, true
}

// Put stores a put's value and appends its answer to dst: Submit, then
// Wait. born is the producer's address.
func (s *Server) Put(dst []byte, c *metaq.Command, value []byte, born netip.AddrPort) []byte {
	p, refused := s.Submit(dst, c, value, born)
	if refused != nil {
		return refused
	}
	return s.Wait(dst, p)
}

// Submit checks a put and queues it on its queue, or returns the
// refusal's answer (appended to dst). Every queued put must be waited for
// (Wait), or the puts queued behind it wait for ever. A connection
// submits its puts in the order it reads them, so that they are stored in
// that order.
//
// Puts to one queue are written in batches, in the order they were
// submitted: a put that finds no writer becomes the queue's writer,
// appends the batch at the head of the waiting puts (its own among them)
// in one Deps.Append (one fsync under sync flush), and hands the writer's
// role to the first put still waiting; the others wait for their results.
// The queue's lock is not held during the append, so gets and other puts
// go on meanwhile.
func (s *Server) Submit(dst []byte, c *metaq.Command, value []byte, born netip.AddrPort) (*PendingPut, []byte) {
	if c.TxKey != "" {
		return nil, metaq.AppendResult(dst, metaq.BadRequest, "a transactional put goes through PutHalf", c.Opaque)
	}
	m, n, refused := s.message(dst, c, value, born)
	if refused != nil {
		return nil, refused
	}
	p := &PendingPut{m: m, n: n, opaque: c.Opaque, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	p.q = s.pos.queue(m.Topic, m.QueueID)
	q := p.q
	q.mu.Lock()
	q.pending = append(q.pending, p)
	p.writer = !q.writing
	q.writing = true
	q.mu.Unlock()
	return p, nil
}

// Wait writes p (as its queue's writer) or waits until it is written,
// and appends its answer to dst.
func (s *Server) Wait(dst []byte, p *PendingPut) []byte {
	q := p.q
	if !p.writer {
		select {
		case <-p.done:
		case <-p.wake: // the writer's role, handed over: p is first in line
			p.writer = true
		}
	}
	if p.writer {
		q.mu.Lock()
		s.writeLocked(q, q.takeLocked()) // p's batch
		if len(q.pending) > 0 {
			q.pending[0].wake <- struct{}{}
		} else {
			q.writing = false
		}
		q.mu.Unlock()
		<-p.done
	}
	if p.ref != nil {
		return metaq.AppendResult(dst, p.ref.Code, p.ref.Msg, p.opaque)
	}
	if s.d.OnPut != nil {
		s.d.OnPut(p.m.Topic, len(p.m.Body))
	}
	return metaq.AppendResult(dst, metaq.Success, metaq.PutResult(p.res.PhysicalOffset, p.m.QueueID, p.pos), p.opaque)
}

// PendingPut is a submitted put waiting for its queue's writer.
type PendingPut struct {
	q      *queueIndex
	writer bool // p writes its batch (set by Submit, or handed over)
	opaque int32
	m      *storage.Message
	n      int   // its length in the queue's byte stream
	pos    int64 // its position, once stored
	res    storage.AppendResult
	ref    *Refusal // the answer when not a plain success
	done   chan struct{}
	wake   chan struct{} // the writer's role handed to this put
}

// Batch bounds: a queue's writer appends at most putBatch messages and,
// past the first, putBatchBytes bytes of them at once.
const (
	putBatch      = 64
	putBatchBytes = 1 << 20
)

// takeLocked takes the next batch of pending puts.
func (q *queueIndex) takeLocked() []*PendingPut {
	n, bytes := 1, len(q.pending[0].m.Body)
	for n < len(q.pending) && n < putBatch && bytes+len(q.pending[n].m.Body) <= putBatchBytes {
		bytes += len(q.pending[n].m.Body)
		n++
	}
	batch := q.pending[:n:n]
	q.pending = q.pending[n:]
	if len(q.pending) == 0 {
		q.pending = nil
	}
	return batch
}

// writeLocked appends batch to q's queue and answers its puts. It
// unlocks q.mu during the append.
func (s *Server) writeLocked(q *queueIndex, batch []*PendingPut) {
	defer func() {
		for _, p := range batch {
			close(p.done)
		}
	}()
	topic, queue := batch[0].m.Topic, batch[0].m.QueueID
	if err := s.pos.extendLocked(topic, queue, q); err != nil {
		for _, p := range batch {
			p.ref = &Refusal{metaq.InternalServerError, "reading the queue's positions: " + err.Error()}
		}
		return
	}
	msgs := make([]*storage.Message, len(batch))
	pos := q.end
	for i, p := range batch {
		p.m.Properties = record.AppendProperty(p.m.Properties, PropPos, strconv.FormatInt(pos, 10))
		pos += int64(p.n)
		msgs[i] = p.m
	}
	q.mu.Unlock()
	res, ref := s.d.Append(msgs)
	q.mu.Lock()
	if len(res) != len(batch) || res[0].Size <= 0 {
		if ref == nil {
			ref = &Refusal{metaq.InternalServerError, "the store took nothing"}
		}
		for _, p := range batch {
			p.ref = ref
		}
		return
	}
	for i, p := range batch {
		p.res, p.ref = res[i], ref
		next := q.nextLocked()
		switch {
		case res[i].QueueOffset == next:
			p.pos = q.end
			q.addLocked(p.n)
		case res[i].QueueOffset < next:
			p.pos, _ = q.positionOfLocked(res[i].QueueOffset) // a get's read indexed it meanwhile
		default:
			p.pos = s.waitIndexedLocked(topic, queue, q, res[i].QueueOffset)
		}
		if p.pos < 0 && p.ref == nil {
			s.d.Log.Warn("metaq: stored a put whose position is not known yet", "topic", topic, "queue", queue, "queueOffset", res[i].QueueOffset)
			p.ref = &Refusal{metaq.GatewayTimeout, "stored at queue offset " + strconv.FormatInt(res[i].QueueOffset, 10) +
				", but its position is not known yet"}
		}
	}
}

// waitIndexedLocked waits until the index holds queue offset off: another
// writer's messages came first and are not indexed yet, so it waits for
// the dispatcher and reads the queue up to off (the stamps of the puts
// after them are off; the index, built from lengths, is right). -1 when
// it waited dispatchWait in vain.
func (s *Server) waitIndexedLocked(topic string, queue int32, q *queueIndex, off int64) int64 {
	for deadline := s.d.Now().Add(dispatchWait); ; {
		if err := s.pos.extendLocked(topic, queue, q); err != nil {
			return -1
		}
		if p, ok := q.positionOfLocked(off); ok {
			return p
		}
		if s.d.Now().After(deadline) {
			return -1
		}
		q.mu.Unlock()
		time.Sleep(time.Millisecond)
		q.mu.Lock()
	}
}

// locate maps a get's or offset's position to a queue offset.
func (s *Server) locate(topic string, partition int32, pos int64) (where, int64, int64, error) {
	q := s.pos.queue(topic, partition)
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := s.pos.extendLocked(topic, partition, q); err != nil {
		return 0, 0, 0, err
	}
	w, off, valid := q.lookupLocked(pos)
	return w, off, valid, nil
}

// Get answers a get: "value" with the message set, or "result". The
// answer is dst extended, plus the set (nil with a result), written after
// it.
func (s *Server) Get(dst []byte, c *metaq.Command) (head, set []byte) {
	if ref := s.d.Readable(c.Topic, c.Partition); ref != nil {
		return metaq.AppendResult(dst, ref.Code, ref.Msg, c.Opaque), nil
	}
	w, off, valid, err := s.locate(c.Topic, c.Partition, c.Offset)
	switch {
	case err != nil:
		return metaq.AppendResult(dst, metaq.InternalServerError, "reading the queue's positions: "+err.Error(), c.Opaque), nil
	case w == moved:
		return metaq.AppendResult(dst, metaq.Moved, strconv.FormatInt(valid, 10), c.Opaque), nil
	case w == atEnd:
		return notFound(dst, c), nil
	}
	max := int(c.MaxSize)
	msgs := 0
	for len(set) < max {
		res, err := s.d.Store.GetMessages(c.Topic, c.Partition, off, scanBatch, max-len(set), nil)
		var ce *storage.CorruptRecordError
		if errors.As(err, &ce) && res.NextOffset > off {
			off = res.NextOffset // it occupies no bytes (positions.go)
			continue
		}
		if err != nil {
			if len(set) > 0 {
				break
			}
			return metaq.AppendResult(dst, metaq.InternalServerError, "reading the queue: "+err.Error(), c.Opaque), nil
		}
		if res.Status != storage.Found || len(res.Records) == 0 || res.QueueOffsets[0] != off {
			break
		}
		for _, b := range res.Records {
			var r record.Record
			if err := record.DecodeUnchecked(b, &r); err != nil {
				return metaq.AppendResult(dst, metaq.InternalServerError, "decoding a stored record: "+err.Error(), c.Opaque), nil
			}
			props := r.UserProperties()
			attr, hasAttr := record.LookupProperty(props, PropAttr)
			if set == nil {
				set = make([]byte, 0, min(max, metaq.EncodedLen(hasAttr, len(attr), len(r.Body))*len(res.Records)))
			}
			set = metaq.AppendMessage(set, r.PhysOffset, r.Flag, hasAttr, attr, r.Body)
			msgs++
			if len(set) >= max {
				break
			}
		}
		off = res.NextOffset
	}
	if len(set) == 0 {
		return notFound(dst, c), nil
	}
	if len(set) > max {
		set = set[:max] // MetaQ's slice: the last message may be cut
	}
	if s.d.OnGet != nil {
		s.d.OnGet(c.Topic, msgs, len(set))
	}
	return metaq.AppendValueHead(dst, len(set), c.Opaque), set
}

func notFound(dst []byte, c *metaq.Command) []byte {
	return metaq.AppendResult(dst, metaq.NotFound, "Could not find message at position "+strconv.FormatInt(c.Offset, 10), c.Opaque)
}

// Offset answers MetaQ's offset command: the nearest valid position.
func (s *Server) Offset(dst []byte, c *metaq.Command) []byte {
	if ref := s.d.Readable(c.Topic, c.Partition); ref != nil {
		return metaq.AppendResult(dst, ref.Code, ref.Msg, c.Opaque)
	}
	_, _, valid, err := s.locate(c.Topic, c.Partition, c.Offset)
	if err != nil {
		return metaq.AppendResult(dst, metaq.InternalServerError, "reading the queue's positions: "+err.Error(), c.Opaque)
	}
	return metaq.AppendResult(dst, metaq.Success, strconv.FormatInt(valid, 10), c.Opaque)
}
