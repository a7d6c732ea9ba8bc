package metaq

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/samsamq/samsa/protocol/metaq"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Property names a text put stores.
const (
	PropPos  = "METAQ_POS"
	PropAttr = "METAQ_ATTR"
)

// scanBatch is how many records a scan of a queue reads at a time.
const scanBatch = 256

type queueKey struct {
	topic string
	queue int32
}

// queueIndex maps a queue's byte positions to queue offsets.
type queueIndex struct {
	mu     sync.Mutex
	loaded bool
	first  int64   // the queue offset of starts[0]
	starts []int64 // starts[i]: the position of queue offset first+i
	end    int64   // the position after the last indexed message
	// pending are puts waiting for the queue's writer; writing is true
	// while a put is the writer (Server.Put).
	pending []*PendingPut
	writing bool
}

// next is the queue offset after the last indexed message.
func (q *queueIndex) nextLocked() int64 { return q.first + int64(len(q.starts)) }

// addLocked indexes the message at queue offset next of length n.
func (q *queueIndex) addLocked(n int) {
	q.starts = append(q.starts, q.end)
	q.end += int64(n)
}

// positions holds every used queue's index.
type positions struct {
	store Store
	mu    sync.Mutex
	m     map[queueKey]*queueIndex
}

func (p *positions) queue(topic string, queue int32) *queueIndex {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := queueKey{topic, queue}
	q := p.m[k]
	if q == nil {
		q = &queueIndex{}
		p.m[k] = q
	}
	return q
}

// recordLen is a stored record's length in MetaQ's stream, and the
// position it was stamped with (-1 none).
func recordLen(b []byte) (n int, stamp int64, err error) {
	var r record.Record
	if err := record.DecodeUnchecked(b, &r); err != nil {
		return 0, -1, err
	}
	props := r.UserProperties()
	attr, hasAttr := record.LookupProperty(props, PropAttr)
	stamp = -1
	if v, ok := record.LookupProperty(props, PropPos); ok {
		if s, err := strconv.ParseInt(string(v), 10, 64); err == nil && s >= 0 {
			stamp = s
		}
	}
	return metaq.EncodedLen(hasAttr, len(attr), len(r.Body)), stamp, nil
}

// extendLocked brings q up to what the store has dispatched: the first
// use reads the queue from its first retained message; later ones read
// what arrived since and drop what retention removed.
func (p *positions) extendLocked(topic string, queue int32, q *queueIndex) error {
	min, max := p.store.MinQueueOffset(topic, queue), p.store.MaxQueueOffset(topic, queue)
	anchor, anchorAt := int64(-1), -1
	if !q.loaded {
		q.first, q.starts, q.end = min, nil, 0
	}
	if q.loaded && min > q.first {
		// Retention removed messages: forget their positions.
		drop := min - q.first
		if drop >= int64(len(q.starts)) {
			q.first, q.starts = min, nil // end stays: the next message starts there
		} else {
			q.starts = append(q.starts[:0:0], q.starts[drop:]...)
			q.first = min
		}
	}
	for next := q.nextLocked(); next < max; next = q.nextLocked() {
		res, err := p.store.GetMessages(topic, queue, next, scanBatch, 1<<20, nil)
		var ce *storage.CorruptRecordError
		if errors.As(err, &ce) {
			// A corrupt record occupies no bytes: MetaQ consumers never
			// see it (a get skips it too).
			for i := next; i < res.NextOffset && i < max; i++ {
				q.addLocked(0)
			}
			if res.NextOffset <= next {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if res.Status != storage.Found || len(res.Records) == 0 {
			break
		}
		if res.QueueOffsets[0] != next {
			return fmt.Errorf("metaq: reading queue %s:%d at %d got offset %d", topic, queue, next, res.QueueOffsets[0])
		}
		for i, b := range res.Records {
			if res.QueueOffsets[i] != q.nextLocked() {
				break
			}
			n, stamp, err := recordLen(b)
			if err != nil {
				return err
			}
			if !q.loaded && anchorAt < 0 && stamp >= 0 {
				anchor, anchorAt = stamp, len(q.starts)
			}
			q.addLocked(n)
		}
	}
	if !q.loaded {
		q.loaded = true
		if anchorAt >= 0 && anchor >= q.starts[anchorAt] {
			shift := anchor - q.starts[anchorAt]
			for i := range q.starts {
				q.starts[i] += shift
			}
			q.end += shift
		}
	}
	return nil
}

// where is what a position means in a queue.
type where int

const (
	atMessage where = iota // a message starts at the position
	atEnd                  // the position is the end: nothing yet
	moved                  // not a valid position: the answer is 301 with pos
)

// lookupLocked finds pos in q: the queue offset of the message starting
// there, or where to go instead.
func (q *queueIndex) lookupLocked(pos int64) (w where, queueOffset, valid int64) {
	switch {
	case pos == q.end:
		return atEnd, q.nextLocked(), pos
	case pos > q.end:
		return moved, 0, q.end
	case len(q.starts) == 0 || pos < q.starts[0]:
		if len(q.starts) == 0 {
			return moved, 0, q.end
		}
		return moved, 0, q.starts[0]
	}
	// The last message starting at or before pos (zero-length entries
	// share a start: take the first of them).
	i := sort.Search(len(q.starts), func(i int) bool { return q.starts[i] > pos }) - 1
	for i > 0 && q.starts[i-1] == q.starts[i] {
		i--
	}
	if q.starts[i] != pos {
		return moved, 0, q.starts[i]
	}
	return atMessage, q.first + int64(i), pos
}

// positionOfLocked is the position of queue offset off (false when q does
// not index it).
func (q *queueIndex) positionOfLocked(off int64) (int64, bool) {
	i := off - q.first
	if i < 0 || i >= int64(len(q.starts)) {
		return 0, false
	}
	return q.starts[i], true
}
