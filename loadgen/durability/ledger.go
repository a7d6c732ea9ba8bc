package durability

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Pos is a message's place: queue id and queue offset.
type Pos struct {
	Queue  int
	Offset int64
}

// ack is one acknowledged send.
type ack struct {
	pos   Pos
	epoch int
}

// sighting is the first id the live consumer read at a Pos.
type sighting struct {
	id    string
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
		acks      map[string]ack
		seen      map[Pos]sighting
		conflicts map[Pos]bool // the live consumer read two ids at one Pos
		backwards int64        // the live consumer was sent back below where it was
		final     map[Pos]string
	}
}

// NewLedger returns an empty ledger at epoch 1, started now.
func NewLedger() *Ledger {
	l := &Ledger{}
	l.mu.epoch = 1
	l.mu.restarted = time.Now()
	l.mu.firstAck = make(chan struct{})
	l.mu.acks = map[string]ack{}
	l.mu.seen = map[Pos]sighting{}
	l.mu.conflicts = map[Pos]bool{}
	l.mu.final = map[Pos]string{}
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
func (l *Ledger) Acked(id string, p Pos, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.acks[id] = ack{pos: p, epoch: l.mu.epoch}
	if l.mu.recovery == 0 {
		l.mu.recovery = max(t.Sub(l.mu.restarted), time.Nanosecond)
		close(l.mu.firstAck)
	}
}

// Seen records that the live consumer read id at p.
func (l *Ledger) Seen(id string, p Pos) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.mu.seen[p]
	if !ok {
		l.mu.seen[p] = sighting{id: id, epoch: l.mu.epoch}
		return
	}
	if s.id != id {
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
	l.mu.final[p] = id
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
}

// Tally compares acknowledgements and sightings with the read-back.
func (l *Ledger) Tally() Tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := Tally{Sent: l.mu.sent, Acked: int64(len(l.mu.acks)), Stored: int64(len(l.mu.final)),
		Backwards: l.mu.backwards}
	where := make(map[string]Pos, len(l.mu.final))
	for p, id := range l.mu.final {
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
	var lost []string
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
		if got, ok := l.mu.final[a.pos]; ok && got != id {
			t.AckedReassigned++
		}
	}
	sort.Strings(lost)
	for _, id := range lost[:min(len(lost), 10)] {
		a := l.mu.acks[id]
		t.LostSample = append(t.LostSample, sampleLine(id, a))
	}
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

func sampleLine(id string, a ack) string {
	return fmt.Sprintf("%s acked at q%d@%d by incarnation %d", id, a.pos.Queue, a.pos.Offset, a.epoch)
}
