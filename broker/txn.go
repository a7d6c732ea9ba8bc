package broker

// Transactions, RocketMQ's way (broker/transaction/ in RocketMQ 4.x/5.x:
// TransactionalMessageBridge, TransactionalMessageServiceImpl,
// TransactionalMessageCheckService, EndTransactionProcessor), with one
// departure and one extension, both marked below.
//
// # Half messages
//
// A prepared send (sysflag TRANSACTION_PREPARED, or property TRAN_MSG=true)
// is checked against its real topic and queue as any send, then stored
// under RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC and REAL_QID in its
// properties and its sysflag's transaction bits cleared (so it is indexed
// in the half queue and nowhere else): consumers of the real topic never
// see it. Its half queue offset is its identity from then on.
//
// # Op records
//
// A half message is settled by one op record: topic
// RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0, tags "d" (RocketMQ's REMOVETAG),
// body the half queue offset in decimal. END_TRANSACTION with commit
// appends, in one Store.AppendBatch, the final message (real topic and
// queue restored, REAL_TOPIC, REAL_QID and TRAN_MSG removed, sysflag
// TRANSACTION_COMMIT, PreparedTxOffset the half's commit-log offset,
// property TRAN_PREPARED_QUEUE_OFFSET) and then the op record; rollback
// appends only the op record; a half discarded after transactionCheckMax
// check-backs is copied to TRANS_CHECK_MAX_TIME_TOPIC and gets an op record
// too.
//
// Settled at most once: txnState holds, for each half offset at or above
// the check progress, whether it is open, being settled or settled (and
// by which op). Every settlement claims the half first, so a duplicate or
// late END_TRANSACTION, or a check-back racing a commit, finds it taken
// and writes nothing: a committed message is delivered once.
//
// Departure from RocketMQ: a checked half is not appended again (RocketMQ's
// putBackHalfMsgQueue with TRANSACTION_CHECK_TIMES + 1). Its offset stays
// its identity, so an END_TRANSACTION answering an old check, or the
// producer's own late one, settles the same half as the newest; the check
// counts of open halves are saved after each check round that changed
// them, in config/transactionChecks.json.
//
// # Crash mid-commit
//
// A commit's batch is one contiguous write, and recovery keeps a prefix of
// the log: after a crash it is either whole, or its final messages are
// partly there without the op record. The second can only happen to a
// half stored before the broker started; before such a half is checked
// back or committed again, its real queue is searched (from the half's
// store time) for a record whose PreparedTxOffset is the half's commit-log
// offset. If one is there, only the op record is written.
//
// # Progress
//
// The check progress, as in RocketMQ, is two consumer offsets of the
// group CID_RMQ_SYS_TRANS in consumerOffset.json: the half queue offset
// below which every half is settled, and an op queue offset from which
// reading the op queue again rebuilds txnState. New reads the op queue
// from there before anything is served, so a restart with open half
// messages still checks them back and still refuses a duplicate commit.
//
// # Several messages in one transaction (ours, as MetaQ allowed)
//
// Samsa's client may put several half messages, to any topics of one
// broker, in one transaction: each carries the property SAMSA_TXN_ID, and
// the producer ends them with one END_TRANSACTION whose body lists every
// half as "queueOffset:commitLogOffset" lines. The broker settles them all
// in one AppendBatch (every final message, then every op record), so they
// become visible together or, after a crash mid-write, are repaired as
// above. A half left open (crash, lost END) is checked back like any: the
// client's checker answers for the transaction id, so every half of one
// transaction gets the same answer; all or nothing.
//
// # Replication
//
// Half and op records are CommitLog records like any and replicate with
// it; the progress offsets follow the master to its slaves with the other
// consumer offsets. Only a master answers END_TRANSACTION (a slave answers
// SLAVE_NOT_AVAILABLE, as RocketMQ) and runs the check service.

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/samsamq/samsa/storage/record"
)

// System topics, properties and the progress group (RocketMQ's
// TopicValidator, MessageConst, TransactionalMessageUtil).
const (
	TransHalfTopic         = "RMQ_SYS_TRANS_HALF_TOPIC"
	TransOpHalfTopic       = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TransCheckMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	transProgressGroup     = "CID_RMQ_SYS_TRANS"
	transOpTag             = "d"

	propTranPrepared           = "TRAN_MSG"
	propProducerGroup          = "PGROUP"
	propUniqKey                = "UNIQ_KEY"
	propTransactionID          = "__transactionId__"
	propCheckImmunity          = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	propPreparedQueueOff       = "TRAN_PREPARED_QUEUE_OFFSET"
	propCheckTimes             = "TRANSACTION_CHECK_TIMES"
	PropSamsaTransaction       = "SAMSA_TXN_ID" // ours: the transaction id shared by its half messages
	txnSettling          int64 = -2             // a window slot: being settled now
	txnOpen              int64 = -1             // a window slot: open
	// txnDropped: a window slot settled without an op record (the half
	// was lost to retention or corruption); the progress passes it.
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
		dirty  bool          // checks changed since saveChecks
		// searched: halves from before the start whose real queue was
		// searched for a final message left by a crash mid-commit.
		searched   map[int64]bool
		mustSearch map[int64]bool // searched even above startHalfMax (reopenToSearch)
	}
	// startHalfMax is the half queue's end when the broker started: a half
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

// addCheck counts a check-back of half k and returns the count before it.
func (t *txnState) checksOf(k int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.checks[k]
}

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
