package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/samsamq/samsa/loadgen/killloop"
)

// Order is OutOfOrder's verdict.
type Order struct {
	// OutOfOrder counts first copies of a producer's message found in a
	// queue after a later message of the same producer.
	OutOfOrder int64 `json:"out_of_order"`
	// Unparsed counts ids that are not load ids (not judged).
	Unparsed int64 `json:"unparsed,omitempty"`
	// Sample names a few, as "q<queue>@<offset>: p1-7 after p1-9".
	Sample []string `json:"sample,omitempty"`
}

// OutOfOrder reads each queue of found in offset order and counts the
// messages that come after a later one of the same producer. A duplicate
// (an id already seen in any queue) is not judged again: a retried send's
// second copy is counted as a duplicate by the ledger, not here.
func OutOfOrder(found map[killloop.Pos]string) Order {
	var o Order
	pos := make([]killloop.Pos, 0, len(found))
	for p := range found {
		pos = append(pos, p)
	}
	slices.SortFunc(pos, func(a, b killloop.Pos) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Offset, b.Offset))
	})
	type key struct{ queue, producer int }
	last := map[key]int64{}
	lastID := map[key]string{}
	seen := make(map[string]bool, len(found))
	for _, p := range pos {
		id := found[p]
		if seen[id] {
			continue
		}
		seen[id] = true
		prod, seq, ok := killloop.ParseID(id)
		if !ok {
			o.Unparsed++
			continue
		}
		k := key{p.Queue, prod}
		if prev, ok := last[k]; ok && seq < prev {
			o.OutOfOrder++
			if len(o.Sample) < 10 {
				o.Sample = append(o.Sample, fmt.Sprintf("q%d@%d: %s after %s", p.Queue, p.Offset, id, lastID[k]))
			}
			continue
		}
		last[k], lastID[k] = seq, id
	}
	return o
}

// RoleSample is one broker's role as a poll saw it.
type RoleSample struct {
	Broker string    `json:"broker"` // the broker's address (or name)
	Master bool      `json:"master"`
	Epoch  int64     `json:"epoch"` // the master epoch it reported
	At     time.Time `json:"at"`
}

// Conflict is two brokers that claimed the master role in one epoch.
type Conflict struct {
	Epoch   int64     `json:"epoch"`
	Brokers [2]string `json:"brokers"`
	At      [2]time.Time
}

// TwoMasters returns every epoch in which more than one broker claimed to
// be master, with the first claim of each of the first two.
func TwoMasters(samples []RoleSample) []Conflict {
	type claim struct {
		broker string
		at     time.Time
	}
	first := map[int64][]claim{}
	for _, s := range samples {
		if !s.Master {
			continue
		}
		cs := first[s.Epoch]
		if !slices.ContainsFunc(cs, func(c claim) bool { return c.broker == s.Broker }) {
			first[s.Epoch] = append(cs, claim{s.Broker, s.At})
		}
	}
	var out []Conflict
	for e, cs := range first {
		if len(cs) > 1 {
			out = append(out, Conflict{Epoch: e, Brokers: [2]string{cs[0].broker, cs[1].broker}, At: [2]time.Time{cs[0].at, cs[1].at}})
		}
	}
	slices.SortFunc(out, func(a, b Conflict) int { return cmp.Compare(a.Epoch, b.Epoch) })
	return out
}

// Ack is one acknowledged send: when, and which broker answered it.
type Ack struct {
	At     time.Time
	Broker string
}

// RecoveredAfter is the time from a fault at t until the first
// acknowledgement after t answered by a broker other than gone (the
// master the fault took away), and false if there is none. acks must be
// in time order.
func RecoveredAfter(acks []Ack, t time.Time, gone string) (time.Duration, bool) {
	i, _ := slices.BinarySearchFunc(acks, t, func(a Ack, t time.Time) int { return a.At.Compare(t) })
	for ; i < len(acks); i++ {
		if acks[i].Broker != gone {
			return acks[i].At.Sub(t), true
		}
	}
	return 0, false
}

// LongestGap is the longest time without an acknowledgement in [from,
// to] (acks in time order), counting from from and up to to, and when it
// began: a fault that must not interrupt sends is judged by it, and where
// the gap lies (at the fault, or when what was killed came back) says
// what to look for in the logs.
func LongestGap(acks []Ack, from, to time.Time) (time.Duration, time.Time) {
	i, _ := slices.BinarySearchFunc(acks, from, func(a Ack, t time.Time) int { return a.At.Compare(t) })
	prev, gap, start := from, time.Duration(0), from
	for ; i < len(acks) && !acks[i].At.After(to); i++ {
		if d := acks[i].At.Sub(prev); d > gap {
			gap, start = d, prev
		}
		prev = acks[i].At
	}
	if d := to.Sub(prev); d > gap {
		gap, start = d, prev
	}
	return gap, start
}
