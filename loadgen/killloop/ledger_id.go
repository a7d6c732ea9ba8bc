package killloop

import (
	"strconv"
	"strings"
)

// msgID is a message id as the ledger keeps it: 64 bits, no pointer. A
// long chaos run acknowledges tens of millions of messages, and with the
// ids as strings the ledger's maps were gigabytes of pointers that every
// GC cycle had to mark: the harness stalled for up to 1.8 s at a time
// (its producers with it) on a two-core machine. A map whose keys and
// values hold no pointer is not scanned at all.
//
// The load's ids, "p<producer>-<seq>" in canonical decimal, are packed
// (producer in bits 40-62, seq in bits 0-39); any other id (tests, a
// foreign body) is interned and numbered with bit 63 set.
type msgID uint64

const (
	internedBit = msgID(1) << 63
	seqBits     = 40
	maxSeq      = 1<<seqBits - 1
	maxProducer = 1<<(63-seqBits) - 1
)

// packID packs a canonical "p<producer>-<seq>" id.
func packID(s string) (msgID, bool) {
	rest, ok := strings.CutPrefix(s, "p")
	if !ok {
		return 0, false
	}
	ps, qs, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	p, ok := canonicalUint(ps, maxProducer)
	if !ok {
		return 0, false
	}
	q, ok := canonicalUint(qs, maxSeq)
	if !ok {
		return 0, false
	}
	return msgID(p<<seqBits | q), true
}

// canonicalUint parses s as decimal with no leading zero (so that
// formatting it again gives s), at most max.
func canonicalUint(s string, max uint64) (uint64, bool) {
	if len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && v <= max
}

// idTable turns ids into msgIDs and back; ids that do not pack are
// interned. Not safe for concurrent use: the ledger's lock covers it.
type idTable struct {
	interned map[string]msgID
	names    []string
}

// key is s's msgID.
func (t *idTable) key(s string) msgID {
	if k, ok := packID(s); ok {
		return k
	}
	if k, ok := t.interned[s]; ok {
		return k
	}
	if t.interned == nil {
		t.interned = map[string]msgID{}
	}
	k := internedBit | msgID(len(t.names))
	t.interned[s] = k
	t.names = append(t.names, s)
	return k
}

// name is the id k stands for.
func (t *idTable) name(k msgID) string {
	if k&internedBit != 0 {
		return t.names[k&^internedBit]
	}
	return "p" + strconv.FormatUint(uint64(k>>seqBits), 10) + "-" + strconv.FormatUint(uint64(k&maxSeq), 10)
}

// keys converts a read's ids at each place.
func (t *idTable) keys(found map[Pos]string) map[Pos]msgID {
	out := make(map[Pos]msgID, len(found))
	for p, s := range found {
		out[p] = t.key(s)
	}
	return out
}
