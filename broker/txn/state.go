package txn

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/samsamq/samsa/storage/record"
)

// A window slot: the op queue offset that settled its half, or one of
// these.
const (
	txnSettling int64 = -2 // being settled now
	txnOpen     int64 = -1 // open
	// txnDropped: settled without an op record (the half was lost to
	// retention or corruption); the progress passes it.
	txnDropped int64 = math.MaxInt64
)

// txnState is what is known of the half messages at or above base: for
// each, the op queue offset that settled it, txnOpen or txnSettling (8
// bytes a half; the oldest open half bounds the window, and the check
// service bounds its age). Safe for concurrent use; no goroutines.
type txnState struct {
	mu struct {
		sync.Mutex
		base   int64         // every half below is settled
		win    []int64       // win[i]: half base+i
		checks map[int64]int // check-backs sent, per open half
		dirty  bool          // checks changed since checkCounts
		// searched: halves from before New whose real queue was
		// searched for a final message left by a crash mid-commit.
		searched   map[int64]bool
		mustSearch map[int64]bool // searched even above startHalfMax (reopenToSearch)
	}
	// startHalfMax is the half queue's end when the Service was made: a half
	// below it may have a final message without its op record.
	startHalfMax int64
}

func newTxnState(base, startHalfMax int64) *txnState {
	t := &txnState{startHalfMax: startHalfMax}
	t.mu.base = base
	t.mu.checks = make(map[int64]int)
	t.mu.searched = make(map[int64]bool)
	t.mu.mustSearch = make(map[int64]bool)
	return t
}

// slotLocked returns half k's slot, growing the window; nil below base.
func (t *txnState) slotLocked(k int64) *int64 {
	i := k - t.mu.base
	if i < 0 {
		return nil
	}
	for int64(len(t.mu.win)) <= i {
		t.mu.win = append(t.mu.win, txnOpen)
	}
	return &t.mu.win[i]
}

// claim marks the open halves of ks as being settled and reports whether
// all were open; when one is not, nothing is claimed.
func (t *txnState) claim(ks ...int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range ks {
		if s := t.slotLocked(k); s == nil || *s != txnOpen {
			return false
		}
	}
	for _, k := range ks {
		*t.slotLocked(k) = txnSettling
	}
	return true
}

// settled records half k's op (opOffset), or reopens it (opOffset < 0) when
// its settlement failed.
func (t *txnState) settled(k, opOffset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.slotLocked(k); s != nil {
		if opOffset < 0 {
			opOffset = txnOpen
		}
		*s = opOffset
	}
	if _, ok := t.mu.checks[k]; ok && opOffset >= 0 {
		delete(t.mu.checks, k)
		t.mu.dirty = true
	}
}

// state returns half k's slot value (an op offset, txnOpen, txnSettling);
// below base it is settled (0).
func (t *txnState) state(k int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.slotLocked(k); s != nil {
		return *s
	}
	return 0
}

// openBelow returns the open halves in [base, end), oldest first, at most
// limit of them, under one lock.
func (t *txnState) openBelow(end int64, limit int) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int64
	for k := t.mu.base; k < end && len(out) < limit; k++ {
		if i := k - t.mu.base; i >= int64(len(t.mu.win)) || t.mu.win[i] == txnOpen {
			out = append(out, k)
		}
	}
	return out
}

// advance moves base over the settled prefix and returns the progress to
// persist: base, and the lowest op offset still needed to rebuild the
// window (opEnd when none is).
func (t *txnState) advance(opEnd int64) (base, opFrom int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for n < len(t.mu.win) && t.mu.win[n] >= 0 {
		n++
	}
	t.mu.win = append(t.mu.win[:0], t.mu.win[n:]...)
	t.mu.base += int64(n)
	for k := range t.mu.checks {
		if k < t.mu.base {
			delete(t.mu.checks, k)
			t.mu.dirty = true
		}
	}
	for k := range t.mu.searched {
		if k < t.mu.base {
			delete(t.mu.searched, k)
		}
	}
	opFrom = opEnd
	for _, op := range t.mu.win {
		if op >= 0 && op < opFrom {
			opFrom = op
		}
	}
	return t.mu.base, opFrom
}

// checksOf returns the check-backs of half k so far.
func (t *txnState) checksOf(k int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.checks[k]
}

// addCheck counts a check-back of half k.
func (t *txnState) addCheck(k int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.checks[k]++
	t.mu.dirty = true
}

// checkCounts returns the check counts to save, or nil when they did not
// change since the last call.
func (t *txnState) checkCounts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.mu.dirty {
		return nil
	}
	t.mu.dirty = false
	out := make(map[string]int, len(t.mu.checks))
	for k, n := range t.mu.checks {
		out[strconv.FormatInt(k, 10)] = n
	}
	return out
}

// loadCheckCounts restores saved check counts of halves at or above base.
func (t *txnState) loadCheckCounts(m map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ks, n := range m {
		if k, err := strconv.ParseInt(ks, 10, 64); err == nil && k >= t.mu.base {
			t.mu.checks[k] = n
		}
	}
}

// needsSearch reports whether half k may have a final message left
// without its op by a crash, and marks it searched.
func (t *txnState) needsSearch(k int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.searched[k] || (k >= t.startHalfMax && !t.mu.mustSearch[k]) {
		return false
	}
	t.mu.searched[k] = true
	delete(t.mu.mustSearch, k)
	return true
}

// reopenToSearch reopens half k whose final message was stored and whose
// op record failed: before it is committed or checked again, its real
// queue is searched, as after a crash.
func (t *txnState) reopenToSearch(k int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.slotLocked(k); s != nil {
		*s = txnOpen
	}
	delete(t.mu.searched, k)
	t.mu.mustSearch[k] = true
}

// opHalfOffset parses an op record's body (the half queue offset).
func opHalfOffset(body []byte) (int64, error) {
	k, err := strconv.ParseInt(string(body), 10, 64)
	if err != nil || k < 0 {
		return 0, fmt.Errorf("broker: op record body %q is not a half queue offset", body)
	}
	return k, nil
}

// withoutProps returns props without the named pairs (a new slice).
func withoutProps(props []byte, names ...string) []byte {
	out := make([]byte, 0, len(props)+48) // room for a property or two more
	record.ForEachProperty(props, func(k, v []byte) bool {
		for _, n := range names {
			if string(k) == n {
				return true
			}
		}
		out = append(out, k...)
		out = append(out, record.NameValueSeparator)
		out = append(out, v...)
		out = append(out, record.PropertySeparator)
		return true
	})
	return out
}
