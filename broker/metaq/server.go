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
	// Append stores m as the broker's send path does (store host, flush
	// policy, replication). A non-nil Refusal with res.Size > 0 means stored but
	// not as durable as promised (a flush or replica timeout); with
	// res.Size == 0, nothing was stored.
	Append func(m *storage.Message) (storage.AppendResult, *Refusal)
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

// Put stores a put's value and appends its answer to dst. born is the
// producer's address.
func (s *Server) Put(dst []byte, c *metaq.Command, value []byte, born netip.AddrPort) []byte {
	if c.Checksum != metaq.NoChecksum && metaq.Checksum(value) != c.Checksum {
		return metaq.AppendResult(dst, metaq.InternalServerError, fmt.Sprintf(
			"Checksum failure,message may be corrupted when transfering on networking: checksum %d sent, %d computed over %d bytes",
			c.Checksum, metaq.Checksum(value), len(value)), c.Opaque)
	}
	if c.TxKey != "" {
		return metaq.AppendResult(dst, metaq.BadRequest, "transactional put (key "+c.TxKey+") is not supported by this broker's text protocol", c.Opaque)
	}
	attr, payload, hasAttr, err := metaq.SplitData(c.Flag, value)
	if err != nil {
		return metaq.AppendResult(dst, metaq.BadRequest, err.Error(), c.Opaque)
	}
	if hasAttr && !record.ValidProperty(PropAttr, string(attr)) {
		return metaq.AppendResult(dst, metaq.BadRequest, "the attribute may not contain the bytes 0x01 or 0x02", c.Opaque)
	}
	queue, ref := s.d.PutQueue(c.Topic, c.Partition)
	if ref != nil {
		return metaq.AppendResult(dst, ref.Code, ref.Msg, c.Opaque)
	}
	q := s.pos.queue(c.Topic, queue)
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := s.pos.extendLocked(c.Topic, queue, q); err != nil {
		return metaq.AppendResult(dst, metaq.InternalServerError, "reading the queue's positions: "+err.Error(), c.Opaque)
	}
	pos, next := q.end, q.nextLocked()
	props := record.AppendProperty(nil, PropPos, strconv.FormatInt(pos, 10))
	if hasAttr {
		props = record.AppendProperty(props, PropAttr, string(attr))
	}
	m := &storage.Message{Topic: c.Topic, QueueID: queue, Flag: c.Flag, Body: payload, Properties: props,
		BornTimestamp: s.d.Now().UnixMilli(), BornHost: born}
	res, ref := s.d.Append(m)
	if res.Size <= 0 {
		if ref == nil {
			ref = &Refusal{metaq.InternalServerError, "the store took nothing"}
		}
		return metaq.AppendResult(dst, ref.Code, ref.Msg, c.Opaque)
	}
	n := metaq.EncodedLen(hasAttr, len(attr), len(payload))
	if res.QueueOffset == next {
		q.addLocked(n)
	} else {
		// Another writer's message came first and is not indexed yet:
		// wait for the dispatcher, then read the queue up to ours (its
		// stamp is off; the index, built from lengths, is right).
		pos = -1
		for deadline := s.d.Now().Add(dispatchWait); ; {
			if err := s.pos.extendLocked(c.Topic, queue, q); err != nil {
				break
			}
			if p, ok := q.positionOfLocked(res.QueueOffset); ok {
				pos = p
				break
			}
			if s.d.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if pos < 0 {
			s.d.Log.Warn("metaq: stored a put whose position is not known yet", "topic", c.Topic, "queue", queue, "queueOffset", res.QueueOffset)
			return metaq.AppendResult(dst, metaq.GatewayTimeout, "stored at queue offset "+strconv.FormatInt(res.QueueOffset, 10)+
				", but its position is not known yet", c.Opaque)
		}
	}
	if s.d.OnPut != nil {
		s.d.OnPut(c.Topic, len(payload))
	}
	if ref != nil {
		return metaq.AppendResult(dst, ref.Code, ref.Msg, c.Opaque)
	}
	return metaq.AppendResult(dst, metaq.Success, metaq.PutResult(res.PhysicalOffset, queue, pos), c.Opaque)
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
