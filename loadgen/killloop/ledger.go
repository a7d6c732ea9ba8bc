package killloop

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Pos is a message's place: queue id and queue offset.
type Pos struct {
	Queue  int
	Offset int64
}

// ack is one acknowledged (or stored-only) send.
type ack struct {
	pos   Pos
	epoch int
	// phys is the record's CommitLog offset (from the answer's offset
	// message id), -1 when unknown.
	phys int64
	// seq numbers the acknowledgements in the order they were recorded,
	// from 1: a replication check compares it with the lag sample's.
	seq int64
}

// sighting is the first id the live consumer read at a Pos.
type sighting struct {
	id    msgID
	epoch int
}

// Ledger records what the producers had acknowledged, what the consumer
// read while the broker was being killed, and what the final read-back
// found. Safe for concurrent use. Epochs number the broker's incarnations
// from 1; Restarted moves to the next one.
type Ledger struct {
	mu struct {
		sync.Mutex
		epoch     int
		restarted time.Time     // when the current incarnation was started
		firstAck  chan struct{} // closed at the current epoch's first ack
		recovery  time.Duration // restart → first ack of the current epoch
		sent      int64
		ackSeq    int64 // acknowledgements recorded so far
		ids       idTable
		acks      map[msgID]ack // SEND_OK answers
		// storedOnly are sends stored but answered otherwise (a
		// SYNC_MASTER's SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT, a
		// FLUSH_DISK_TIMEOUT): not acknowledged, counted by status.
		storedOnly map[msgID]ack
		byStatus   map[string]int64
		seen       map[Pos]sighting
		conflicts  map[Pos]bool // the live consumer read two ids at one Pos
		backwards  int64        // the live consumer was sent back below where it was
		final      map[Pos]msgID
	}
}

// NewLedger returns an empty ledger at epoch 1, started now.
func NewLedger() *Ledger {
	l := &Ledger{}
	l.mu.epoch = 1
	l.mu.restarted = time.Now()
	l.mu.firstAck = make(chan struct{})
	l.mu.acks = map[msgID]ack{}
	l.mu.storedOnly = map[msgID]ack{}
	l.mu.byStatus = map[string]int64{}
	l.mu.seen = map[Pos]sighting{}
	l.mu.conflicts = map[Pos]bool{}
	l.mu.final = map[Pos]msgID{}
	return l
}

// Restarted starts the next epoch at t (just before the broker process is
// started again) and returns it. Acknowledgements from then on count for
// the new incarnation: call it only once the old process is gone.
func (l *Ledger) Restarted(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.epoch++
	l.mu.restarted = t
	l.mu.firstAck = make(chan struct{})
	l.mu.recovery = 0
	return l.mu.epoch
}

// SinceRestart is the time since the current epoch's restart.
func (l *Ledger) SinceRestart() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Since(l.mu.restarted)
}

// FirstAck returns a channel closed at the current epoch's first
// acknowledgement.
func (l *Ledger) FirstAck() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.firstAck
}

// Recovery is the time from the current epoch's restart to its first
// acknowledgement (0 until there is one).
func (l *Ledger) Recovery() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.recovery
}

// Sent counts one send attempt.
func (l *Ledger) Sent() {
	l.mu.Lock()
	l.mu.sent++
	l.mu.Unlock()
}

// Acked records an acknowledged send of id at p, received at t.
func (l *Ledger) Acked(id string, p Pos, t time.Time) { l.AckedAt(id, p, -1, t) }

// AckedAt is Acked with the record's CommitLog offset (-1: unknown).
func (l *Ledger) AckedAt(id string, p Pos, phys int64, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.ackSeq++
	l.mu.acks[l.mu.ids.key(id)] = ack{pos: p, epoch: l.mu.epoch, phys: phys, seq: l.mu.ackSeq}
	if l.mu.recovery == 0 {
		l.mu.recovery = max(t.Sub(l.mu.restarted), time.Nanosecond)
		close(l.mu.firstAck)
	}
}

// StoredOnly records a send of id the broker stored at p (CommitLog
// offset phys, -1 unknown) but answered with status other than SEND_OK:
// not an acknowledgement.
func (l *Ledger) StoredOnly(id string, p Pos, phys int64, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.storedOnly[l.mu.ids.key(id)] = ack{pos: p, epoch: l.mu.epoch, phys: phys}
	l.mu.byStatus[status]++
}

// AckSeq is the number of acknowledgements recorded so far: every ack
// with a seq at most this was recorded before the call.
func (l *Ledger) AckSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.ackSeq
}

// Seen records that the live consumer read id at p.
func (l *Ledger) Seen(id string, p Pos) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.mu.ids.key(id)
	s, ok := l.mu.seen[p]
	if !ok {
		l.mu.seen[p] = sighting{id: k, epoch: l.mu.epoch}
		return
	}
	if s.id != k {
		l.mu.conflicts[p] = true
	}
}

// Backwards counts a live pull that the broker sent below the offset it
// asked for (the queue got shorter).
func (l *Ledger) Backwards() {
	l.mu.Lock()
	l.mu.backwards++
	l.mu.Unlock()
}

// Final records what the read-back after the last cycle found at p.
func (l *Ledger) Final(id string, p Pos) {
	l.mu.Lock()
	l.mu.final[p] = l.mu.ids.key(id)
	l.mu.Unlock()
}

// Tally is the ledger's verdict.
type Tally struct {
	// Sent counts send attempts; Acked the distinct acknowledged ids.
	Sent  int64 `json:"sent"`
	Acked int64 `json:"acked"`
	// Stored counts the messages the read-back found.
	Stored int64 `json:"stored"`
	// Lost counts acknowledged ids the read-back did not find anywhere.
	Lost int64 `json:"lost"`
	// LostByEpoch counts them by the incarnation that acknowledged them.
	LostByEpoch map[int]int64 `json:"-"`
	// AckedByEpoch counts acknowledged ids by incarnation.
	AckedByEpoch map[int]int64 `json:"-"`
	// LostSample names a few lost ids with where they were acknowledged.
	LostSample []string `json:"lost_sample,omitempty"`
	// Duplicates counts read-back messages whose id was already read
	// back at another offset.
	Duplicates int64 `json:"duplicates"`
	// OffsetsReused counts positions where the live consumer read one id
	// and the read-back found another (or the consumer read two).
	OffsetsReused int64 `json:"offsets_reused"`
	// AckedReassigned counts acknowledged positions that hold another id
	// at the end.
	AckedReassigned int64 `json:"acked_offsets_reassigned"`
	// SeenLost counts ids the live consumer read that the read-back did
	// not find anywhere: served, then taken back by a crash.
	SeenLost int64 `json:"seen_lost"`
	// Backwards counts live pulls sent below the offset asked for.
	Backwards int64 `json:"backwards"`
	// UnackedStored counts failed sends that were stored all the same
	// (allowed: the answer was lost, not the message).
	UnackedStored int64 `json:"unacked_stored"`
	// StoredNotAcked counts sends answered as stored but not with
	// SEND_OK (a SYNC_MASTER's SLAVE_NOT_AVAILABLE and
	// FLUSH_SLAVE_TIMEOUT: on the master, not known replicated);
	// NotAckedByStatus counts them by answer.
	StoredNotAcked   int64            `json:"stored_not_acked,omitempty"`
	NotAckedByStatus map[string]int64 `json:"not_acked_by_status,omitempty"`
}

// Tally compares acknowledgements and sightings with the read-back.
func (l *Ledger) Tally() Tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, where := l.compareLocked(l.mu.final)
	t.Sent, t.Backwards = l.mu.sent, l.mu.backwards
	for p, s := range l.mu.seen {
		got, ok := l.mu.final[p]
		if l.mu.conflicts[p] || (ok && got != s.id) {
			t.OffsetsReused++
		}
		if _, ok := where[s.id]; !ok {
			t.SeenLost++
		}
	}
	return t
}

// compareLocked compares the acknowledgements with what a read found at
// each position (the read-back at the end, or a replica's copy): stored,
// duplicates, lost, reassigned, and where each id was found (its first
// copy).
func (l *Ledger) compareLocked(found map[Pos]msgID) (Tally, map[msgID]Pos) {
	t := Tally{Acked: int64(len(l.mu.acks)), Stored: int64(len(found)), StoredNotAcked: int64(len(l.mu.storedOnly))}
	if len(l.mu.byStatus) > 0 {
		t.NotAckedByStatus = maps.Clone(l.mu.byStatus)
	}
	where := make(map[msgID]Pos, len(found))
	for p, id := range found {
		if q, dup := where[id]; dup {
			t.Duplicates++
			if p.Queue < q.Queue || (p.Queue == q.Queue && p.Offset < q.Offset) {
				where[id] = p // keep the first copy's place, for determinism
			}
			continue
		}
		where[id] = p
		if _, ok := l.mu.acks[id]; !ok {
			t.UnackedStored++
		}
	}
	var lost []msgID
	t.AckedByEpoch = map[int]int64{}
	for id, a := range l.mu.acks {
		t.AckedByEpoch[a.epoch]++
		if _, ok := where[id]; !ok {
			t.Lost++
			if t.LostByEpoch == nil {
				t.LostByEpoch = map[int]int64{}
			}
			t.LostByEpoch[a.epoch]++
			lost = append(lost, id)
		}
		if got, ok := found[a.pos]; ok && got != id {
			t.AckedReassigned++
		}
	}
	// The sample is the first ten by name.
	type named struct {
		name string
		k    msgID
	}
	byName := make([]named, len(lost))
	for i, k := range lost {
		byName[i] = named{l.mu.ids.name(k), k}
	}
	slices.SortFunc(byName, func(a, b named) int { return strings.Compare(a.name, b.name) })
	for _, n := range byName[:min(len(byName), 10)] {
		t.LostSample = append(t.LostSample, sampleLine(n.name, l.mu.acks[n.k]))
	}
	return t, where
}

func sampleLine(id string, a ack) string {
	if a.phys >= 0 && a.seq > 0 {
		return fmt.Sprintf("%s acked at q%d@%d (commit log %d) by incarnation %d", id, a.pos.Queue, a.pos.Offset, a.phys, a.epoch)
	}
	return fmt.Sprintf("%s acked at q%d@%d by incarnation %d", id, a.pos.Queue, a.pos.Offset, a.epoch)
}

// Found is what the read-back recorded with Final: the id at each place.
func (l *Ledger) Found() map[Pos]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[Pos]string, len(l.mu.final))
	for p, k := range l.mu.final {
		out[p] = l.mu.ids.name(k)
	}
	return out
}

// Compare compares the acknowledgements with a read of a replica's copy
// (found: the id at each place) as Tally compares them with the
// read-back's; the live reader's sightings are left out.
func (l *Ledger) Compare(found map[Pos]string) Tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, _ := l.compareLocked(l.mu.ids.keys(found))
	t.Sent = l.mu.sent
	return t
}

// ReplicaCheck is a replica's copy compared with the acknowledgements and
// with a lag sample taken before the copy stopped growing.
type ReplicaCheck struct {
	// Tally's Lost counts the acknowledged messages the copy lacks.
	Tally
	// MissingBeforeSample counts missing messages acknowledged before the
	// sample (AckSeq at most the sample's); BeyondLag those of them whose
	// record lies below the replica's acknowledged offset in the sample,
	// or whose offset is unknown.
	MissingBeforeSample, BeyondLag int64
	// StoredNotAckedMissing counts stored-only sends the copy lacks.
	StoredNotAckedMissing int64
}

// CheckReplica compares the acknowledgements with a replica's copy
// (found: the id at each place) and with a lag sample taken when AckSeq
// was ackSeq and the replica had acknowledged the log up to ackOffset.
func (l *Ledger) CheckReplica(found map[Pos]string, ackSeq, ackOffset int64) ReplicaCheck {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, where := l.compareLocked(l.mu.ids.keys(found))
	c := ReplicaCheck{Tally: t}
	for id, a := range l.mu.acks {
		if _, ok := where[id]; ok || a.seq > ackSeq {
			continue
		}
		c.MissingBeforeSample++
		if a.phys < 0 || a.phys < ackOffset {
			c.BeyondLag++
		}
	}
	for id := range l.mu.storedOnly {
		if _, ok := where[id]; !ok {
			c.StoredNotAckedMissing++
		}
	}
	return c
}
