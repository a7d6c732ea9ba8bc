package loadgen

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Every payload carries, in its first 16 bytes:
//
//	bytes  field     why
//	0..8   due ns    intended (open loop) or actual send time, Unix ns: e2e latency
//	8..10  run tag   random per run: a message left in a topic by another run is not this run's
//	10..12 producer  index of the producer among the run's producers
//	12..16 sequence  the producer's message number: with producer, the message's identity
//
// The identity lets the consumers' side count a redelivered message once
// (its redelivery counted apart) and find acknowledged messages that never
// arrived.
const (
	headerSize   = 16
	maxProducers = 1 << 16
)

func putHeader(p []byte, dueNs int64, tag uint16, producer int, seq int64) {
	binary.BigEndian.PutUint64(p[0:8], uint64(dueNs))
	binary.BigEndian.PutUint16(p[8:10], tag)
	binary.BigEndian.PutUint16(p[10:12], uint16(producer))
	binary.BigEndian.PutUint32(p[12:16], uint32(seq))
}

func readHeader(p []byte) (dueNs int64, tag uint16, producer int, seq uint32, ok bool) {
	if len(p) < headerSize {
		return 0, 0, 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(p[0:8])), binary.BigEndian.Uint16(p[8:10]),
		int(binary.BigEndian.Uint16(p[10:12])), binary.BigEndian.Uint32(p[12:16]), true
}

// bitset is a growable set of sequence numbers, safe for concurrent use.
type bitset struct {
	mu struct {
		sync.Mutex
		words []uint64
	}
}

// add sets bit i and reports whether it was clear.
func (b *bitset) add(i uint32) bool {
	w, m := int(i/64), uint64(1)<<(i%64)
	b.mu.Lock()
	defer b.mu.Unlock()
	if w >= len(b.mu.words) {
		grown := make([]uint64, max(w+1, 2*len(b.mu.words)))
		copy(grown, b.mu.words)
		b.mu.words = grown
	}
	fresh := b.mu.words[w]&m == 0
	b.mu.words[w] |= m
	return fresh
}

// missing counts the bits set in b and clear in other.
func (b *bitset) missing(other *bitset) int64 {
	b.mu.Lock()
	mine := append([]uint64(nil), b.mu.words...)
	b.mu.Unlock()
	other.mu.Lock()
	defer other.mu.Unlock()
	var n int
	for i, w := range mine {
		if i < len(other.mu.words) {
			w &^= other.mu.words[i]
		}
		n += bits.OnesCount64(w)
	}
	return int64(n)
}

// deliveries records which messages were acknowledged and which each
// consumer group received. Every method is safe for concurrent use.
type deliveries struct {
	tag uint16
	// Producers and groups are numbered topic by topic: producer p sends
	// to topic p/perTopic, group g reads topic g/groupsPerTopic.
	perTopic, groupsPerTopic int
	acked                    []bitset   // [producer]
	groups                   [][]bitset // [group][producer - the first of its topic's]
	// duplicates are deliveries of a message its group had already had.
	duplicates atomic.Int64
	// foreign are messages without this run's header (another run's, or
	// too short): not counted as received.
	foreign atomic.Int64
}

func newDeliveries(topics, perTopic, groupsPerTopic int) *deliveries {
	d := &deliveries{tag: uint16(rand.Uint32()), perTopic: perTopic, groupsPerTopic: groupsPerTopic,
		acked: make([]bitset, topics*perTopic), groups: make([][]bitset, topics*groupsPerTopic)}
	for g := range d.groups {
		d.groups[g] = make([]bitset, perTopic) // a group reads one topic: its producers only
	}
	return d
}

// received records one delivery to group g and returns the message's due
// time and whether this is its first delivery to g; ok is false for a
// message that is not this run's.
func (d *deliveries) received(g int, p []byte) (dueNs int64, first, ok bool) {
	due, tag, prod, seq, ok := readHeader(p)
	lo := g / d.groupsPerTopic * d.perTopic // the group's topic's first producer
	if !ok || tag != d.tag || prod < lo || prod >= lo+d.perTopic {
		d.foreign.Add(1) // another run's, or (a driver's mix-up) another topic's
		return 0, false, false
	}
	if !d.groups[g][prod-lo].add(seq) {
		d.duplicates.Add(1)
		return due, false, true
	}
	return due, true, true
}

// ack records that producer prod's message seq was acknowledged.
func (d *deliveries) ack(prod int, seq int64) { d.acked[prod].add(uint32(seq)) }

// neverReceived counts, over every group, acknowledged messages the group
// did not receive.
func (d *deliveries) neverReceived() int64 {
	var n int64
	for g := range d.groups {
		t := g / d.groupsPerTopic
		for i := range d.perTopic {
			n += d.acked[t*d.perTopic+i].missing(&d.groups[g][i])
		}
	}
	return n
}

// export is a share's delivery sets (Result.Deliveries): what its
// producers (global indices ids) had acknowledged and what every group
// received here; empty sets are left out.
func (d *deliveries) export(ids []int) ([]DeliverySet, error) {
	var out []DeliverySet
	add := func(group, prod int, b *bitset) error {
		enc, err := b.encode()
		if err != nil || enc == nil {
			return err
		}
		out = append(out, DeliverySet{Group: group, Producer: prod, Bits: enc})
		return nil
	}
	for _, p := range ids {
		if err := add(-1, p, &d.acked[p]); err != nil {
			return nil, err
		}
	}
	for g := range d.groups {
		lo := g / d.groupsPerTopic * d.perTopic
		for i := range d.groups[g] {
			if err := add(g, lo+i, &d.groups[g][i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// encode is the set's words, little-endian, DEFLATE-compressed; nil when
// the set is empty.
func (b *bitset) encode() ([]byte, error) {
	b.mu.Lock()
	words := b.mu.words
	for len(words) > 0 && words[len(words)-1] == 0 {
		words = words[:len(words)-1]
	}
	raw := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(raw[8*i:], w)
	}
	b.mu.Unlock()
	if len(raw) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	zw, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// or adds to b the set enc encodes (bitset.encode), reading at most
// limit bytes of words: a set cannot hold more messages than the run sent.
func (b *bitset) or(enc []byte, limit int64) error {
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(enc)), limit+1))
	if err != nil {
		return fmt.Errorf("delivery set: %w", err)
	}
	if int64(len(raw)) > limit {
		return fmt.Errorf("delivery set: more than %d bytes: more messages than were sent", limit)
	}
	if len(raw)%8 != 0 {
		return errors.New("delivery set: not whole 64-bit words")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(raw) / 8
	if n > len(b.mu.words) {
		grown := make([]uint64, n)
		copy(grown, b.mu.words)
		b.mu.words = grown
	}
	for i := range n {
		b.mu.words[i] |= binary.LittleEndian.Uint64(raw[8*i:])
	}
	return nil
}

// count is the number of bits set.
func (b *bitset) count() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int
	for _, w := range b.mu.words {
		n += bits.OnesCount64(w)
	}
	return int64(n)
}
