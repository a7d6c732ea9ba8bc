package ha

import (
	"fmt"
	"math"
)

// Epoch is one entry of an epoch list: master term Epoch wrote the log
// from Start up to the next entry's Start (the last entry: up to the log's
// end). A master opens a new epoch each time it starts; a slave records
// the epochs of what it copies. Two logs that hold an entry with the same
// Epoch and Start hold the same bytes below that Start (every master
// first truncates to agree with the one before), which is what lets a
// slave find how much of its log it may keep.
type Epoch struct {
	Epoch uint64
	Start int64
}

// validEpochs checks that a list is ordered: epochs and starts strictly
// increasing, starts not negative, at most MaxEpochs entries.
func validEpochs(list []Epoch) error {
	if len(list) > MaxEpochs {
		return fmt.Errorf("%d epochs, at most %d", len(list), MaxEpochs)
	}
	for i, e := range list {
		if e.Start < 0 || e.Epoch == 0 {
			return fmt.Errorf("epoch %d at %d", e.Epoch, e.Start)
		}
		if i > 0 && (e.Epoch <= list[i-1].Epoch || e.Start <= list[i-1].Start) {
			return fmt.Errorf("epoch %d at %d follows epoch %d at %d", e.Epoch, e.Start, list[i-1].Epoch, list[i-1].Start)
		}
	}
	return nil
}

// ConsistentPoint returns how much of a log two replicas share: the last
// epoch both lists hold with the same start, and the smaller of the two
// ends of that epoch (an entry ends at the next entry's start, the last
// one at the log's end: localEnd, remoteEnd). It returns -1 when the lists
// share no epoch. Both lists must be ordered (validEpochs).
//
// A slave truncates its log to the point (or copies afresh when there is
// none) before it follows the master; it is RocketMQ's
// EpochFileCache.findConsistentPoint.
func ConsistentPoint(local []Epoch, localEnd int64, remote []Epoch, remoteEnd int64) int64 {
	j := len(remote) - 1
	for i := len(local) - 1; i >= 0; i-- {
		for j >= 0 && remote[j].Epoch > local[i].Epoch {
			j--
		}
		if j < 0 {
			return -1
		}
		if remote[j].Epoch != local[i].Epoch || remote[j].Start != local[i].Start {
			continue
		}
		return min(epochEnd(local, i, localEnd), epochEnd(remote, j, remoteEnd))
	}
	return -1
}

// epochEnd is where list[i] ends: the next entry's start, or end.
func epochEnd(list []Epoch, i int, end int64) int64 {
	if i+1 < len(list) {
		return min(list[i+1].Start, end)
	}
	return end
}

// TruncateEpochs drops the entries that start at or past off (they hold
// nothing once the log is cut at off) and returns the shortened list.
func TruncateEpochs(list []Epoch, off int64) []Epoch {
	n := len(list)
	for n > 0 && list[n-1].Start >= off {
		n--
	}
	return list[:n]
}

// epochFor returns the index of the entry holding offset off: the last
// one starting at or below it (the first entry when off precedes every
// start, which a master's list does not allow: see EpochFile), and the
// offset where that entry ends (math.MaxInt64 for the last entry).
func epochFor(list []Epoch, off int64) (int, int64) {
	i := len(list) - 1
	for i > 0 && list[i].Start > off {
		i--
	}
	if i+1 < len(list) {
		return i, list[i+1].Start
	}
	return i, math.MaxInt64
}

// recordEpoch applies the epoch of a transfer frame whose data starts at
// at (the slave's log end) to a slave's list: the same epoch as the last
// entry (same start) changes nothing; a newer one must start exactly at
// at (it opened where the slave's log ends) and is appended, replacing an
// entry that holds nothing; into an empty list any epoch starting at or
// below at goes. Anything else is ErrEpochMismatch. It returns the new
// list (which may share list's array) and whether it changed.
func recordEpoch(list []Epoch, e Epoch, at int64) ([]Epoch, bool, error) {
	if e.Epoch == 0 || e.Start < 0 || e.Start > at {
		return list, false, fmt.Errorf("%w: epoch %d starting at %d for data at %d", ErrEpochMismatch, e.Epoch, e.Start, at)
	}
	if len(list) == 0 {
		return append(list, e), true, nil
	}
	last := list[len(list)-1]
	switch {
	case e.Epoch == last.Epoch && e.Start == last.Start:
		return list, false, nil
	case e.Epoch > last.Epoch && e.Start == at && at >= last.Start:
		if last.Start == at {
			list = list[:len(list)-1]
		}
		return append(list, e), true, nil
	}
	return list, false, fmt.Errorf("%w: epoch %d starting at %d for data at %d after epoch %d starting at %d",
		ErrEpochMismatch, e.Epoch, e.Start, at, last.Epoch, last.Start)
}
