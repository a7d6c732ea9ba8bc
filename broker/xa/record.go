package xa

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/samsamq/samsa/broker/txn"
)

// LogTopic holds the branch records (queue 0): a prepare record when a
// branch is prepared, a decision record when a prepared branch is
// committed or rolled back. They are CommitLog records like any, so they
// replicate with the log and a promoted replica rebuilds its prepared
// branches from them (the package doc's "Log").
const LogTopic = "RMQ_SYS_XA_BRANCH_TOPIC"

// Record kinds, a record's first byte after the version (and its tag).
const (
	KindPrepare  = 'P' // the branch is prepared; the record lists its halves
	KindCommit   = 'C' // the prepared branch's halves are committed
	KindRollback = 'R' // the prepared branch's halves are rolled back
	// KindFloor: every branch still prepared has its last prepare
	// record at or above Floor (a LogTopic queue offset); a replay
	// starts at the last floor record's Floor.
	KindFloor = 'F'
)

const recordVersion = 1

// Record is one branch record of LogTopic.
type Record struct {
	Kind       byte
	XID        XID
	PreparedAt time.Time // prepare records only (ms)
	Halves     []txn.Ref // prepare records only
	Floor      int64     // floor records only
	// At is the record's queue offset in LogTopic, as read (not
	// encoded).
	At int64
}

// recordFixed is a record's bytes before the GTRID: version 1, kind 1,
// format id 4, GTRID length 1.
const recordFixed = 7

// Encode is the record's body:
//
//	offset        size  field
//	0             1     version (1): a later layout is refused, not misread
//	1             1     kind: 'P', 'C' or 'R'
//	2             4     format id
//	6             1     GTRID length g (1..64)
//	7             g     GTRID
//	7+g           1     BQUAL length q (0..64)
//	8+g           q     BQUAL
//	then, for 'P' only:
//	8+g+q         8     prepared at, unix ms
//	16+g+q        2     halves n (1..4096)
//	18+g+q        16n   each half: half queue offset 8, commit-log offset 8
//
// All big-endian. A decision record ends after the BQUAL. A floor record
// is version 1, kind 'F' 1, floor 8 (a LogTopic queue offset), no XID.
func (r *Record) Encode() ([]byte, error) {
	if r.Kind == KindFloor {
		if r.Floor < 0 {
			return nil, fmt.Errorf("xa: a floor record at %d", r.Floor)
		}
		return binary.BigEndian.AppendUint64([]byte{recordVersion, KindFloor}, uint64(r.Floor)), nil
	}
	if err := r.XID.Validate(); err != nil {
		return nil, err
	}
	switch r.Kind {
	case KindPrepare:
		if len(r.Halves) == 0 || len(r.Halves) > maxHalves {
			return nil, fmt.Errorf("xa: a prepare record of %d halves, want 1 to %d", len(r.Halves), maxHalves)
		}
	case KindCommit, KindRollback:
	default:
		return nil, fmt.Errorf("xa: record kind %q", r.Kind)
	}
	n := recordFixed + len(r.XID.GTRID) + 1 + len(r.XID.BQUAL)
	if r.Kind == KindPrepare {
		n += 10 + 16*len(r.Halves)
	}
	b := make([]byte, 0, n)
	b = append(b, recordVersion, r.Kind)
	b = binary.BigEndian.AppendUint32(b, uint32(r.XID.FormatID))
	b = append(b, byte(len(r.XID.GTRID)))
	b = append(b, r.XID.GTRID...)
	b = append(b, byte(len(r.XID.BQUAL)))
	b = append(b, r.XID.BQUAL...)
	if r.Kind == KindPrepare {
		b = binary.BigEndian.AppendUint64(b, uint64(r.PreparedAt.UnixMilli()))
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Halves)))
		for _, h := range r.Halves {
			b = binary.BigEndian.AppendUint64(b, uint64(h.HalfOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(h.CommitLogOffset))
		}
	}
	return b, nil
}

var errShort = errors.New("xa: branch record too short")

// DecodeRecord reads an Encode'd body. It allocates no more than the body
// holds: every count is checked against the bytes left.
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	if len(b) < recordFixed {
		return r, errShort
	}
	if b[0] != recordVersion {
		return r, fmt.Errorf("xa: branch record version %d, want %d", b[0], recordVersion)
	}
	r.Kind = b[1]
	if r.Kind == KindFloor {
		if len(b) != 10 {
			return r, fmt.Errorf("xa: a floor record of %d bytes, want 10", len(b))
		}
		if r.Floor = int64(binary.BigEndian.Uint64(b[2:])); r.Floor < 0 {
			return r, fmt.Errorf("xa: a floor record at %d", r.Floor)
		}
		return r, nil
	}
	if r.Kind != KindPrepare && r.Kind != KindCommit && r.Kind != KindRollback {
		return r, fmt.Errorf("xa: branch record kind %q", r.Kind)
	}
	r.XID.FormatID = int32(binary.BigEndian.Uint32(b[2:]))
	g := int(b[6])
	p := recordFixed
	if len(b) < p+g+1 {
		return r, errShort
	}
	r.XID.GTRID = append([]byte(nil), b[p:p+g]...)
	p += g
	q := int(b[p])
	p++
	if len(b) < p+q {
		return r, errShort
	}
	r.XID.BQUAL = append([]byte(nil), b[p:p+q]...)
	p += q
	if err := r.XID.Validate(); err != nil {
		return r, err
	}
	if r.Kind != KindPrepare {
		if p != len(b) {
			return r, fmt.Errorf("xa: %d bytes after a decision record", len(b)-p)
		}
		return r, nil
	}
	if len(b) < p+10 {
		return r, errShort
	}
	r.PreparedAt = time.UnixMilli(int64(binary.BigEndian.Uint64(b[p:])))
	n := int(binary.BigEndian.Uint16(b[p+8:]))
	p += 10
	if n == 0 || n > maxHalves {
		return r, fmt.Errorf("xa: a prepare record of %d halves, want 1 to %d", n, maxHalves)
	}
	if len(b)-p != 16*n {
		return r, fmt.Errorf("xa: a prepare record of %d halves has %d bytes for them, want %d", n, len(b)-p, 16*n)
	}
	r.Halves = make([]txn.Ref, n)
	for i := range r.Halves {
		r.Halves[i] = txn.Ref{HalfOffset: int64(binary.BigEndian.Uint64(b[p:])), CommitLogOffset: int64(binary.BigEndian.Uint64(b[p+8:]))}
		p += 16
	}
	return r, nil
}

// Replay folds branch records, in log order, into the branches still
// prepared at the end, by XID.String(): a prepare record prepares its
// branch (again, if its XID was used before and settled); a decision
// record ends it; a decision record of an XID not prepared is counted in
// Ignored and changes nothing (a branch decided twice, or whose prepare
// record is before the log's start).
type Replay struct {
	Prepared map[string]Record
	Ignored  int // decision records of no prepared branch
	// Watch, when set, names XIDs whose decision records Decided
	// collects (Open: the branches its file lists).
	Watch   map[string]bool
	Decided map[string]bool
	// Floor is where the replay started (the last floor record's);
	// End is past the last record read (queue offset + 1).
	Floor, End int64
}

// Add folds one record.
func (p *Replay) Add(r Record) {
	if p.Prepared == nil {
		p.Prepared = map[string]Record{}
	}
	if r.Kind == KindFloor {
		return
	}
	k := r.XID.String()
	if r.Kind == KindPrepare {
		p.Prepared[k] = r
		return
	}
	if p.Watch[k] {
		if p.Decided == nil {
			p.Decided = map[string]bool{}
		}
		p.Decided[k] = true
	}
	if _, ok := p.Prepared[k]; !ok {
		p.Ignored++
		return
	}
	delete(p.Prepared, k)
}
