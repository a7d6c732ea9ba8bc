package txn

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Verdict is a producer's END_TRANSACTION decision.
type Verdict int

const (
	Commit   Verdict = iota // store the final messages, then the op records
	Rollback                // store the op records only
)

// Ref names one half message as END_TRANSACTION does: its half queue
// offset (tranStateTableOffset) and commit-log offset.
type Ref struct {
	HalfOffset, CommitLogOffset int64
}

// ErrSettled: every half an END_TRANSACTION names is settled already, or
// being settled: a duplicate or late verdict, which writes nothing.
var ErrSettled = errors.New("settled already")

// RefError: a half an END_TRANSACTION names cannot be settled by it (not
// found where it says, or of another producer group). Nothing was written.
type RefError struct{ msg string }

func (e *RefError) Error() string { return e.msg }

// End settles the halves refs as their producer group decided (RocketMQ's
// EndTransactionProcessor): Commit appends each final message and then
// every op record in one Config.Append, Rollback only the op records. A
// half settled already is skipped; when all are, End returns ErrSettled.
// A half whose final message a crash left stored gets its op record only.
// Every half must be found at its commit-log offset and belong to group,
// else End returns a *RefError and writes nothing. Otherwise it returns
// the append's results and error (storage.ErrFlushTimeout: stored, not yet
// flushed). Safe for concurrent use.
func (s *Service) End(group string, v Verdict, refs []Ref) ([]storage.AppendResult, error) {
	hs := make([]halfRef, 0, len(refs))
	for _, ref := range refs {
		hr, err := s.readHalf(ref.HalfOffset, ref.CommitLogOffset)
		if err != nil {
			return nil, &RefError{fmt.Sprintf("find prepared transaction message %d at %d failed: %v", ref.HalfOffset, ref.CommitLogOffset, err)}
		}
		if g, _ := record.LookupProperty(hr.rec.UserProperties(), PropProducerGroup); string(g) != group {
			return nil, &RefError{"the producer group is wrong: the half message belongs to " + string(g)}
		}
		hs = append(hs, hr)
	}
	// Claim each open half; one settled already (or being settled) is
	// skipped.
	claimed := hs[:0]
	for _, hr := range hs {
		if s.state().claim(hr.k) {
			claimed = append(claimed, hr)
		}
	}
	if len(claimed) == 0 {
		return nil, ErrSettled
	}
	kind := settleCommit
	if v == Rollback {
		kind = settleRollback
	}
	kinds := make([]int, len(claimed))
	for i := range claimed {
		kinds[i] = kind
		if kind == settleCommit && s.state().needsSearch(claimed[i].k) && s.finalStored(&claimed[i]) {
			kinds[i] = settleOpOnly
		}
	}
	return s.settle(claimed, kinds)
}

// Property returns the property name of the half ref names (found at its
// commit-log offset), and whether it has it.
func (s *Service) Property(ref Ref, name string) (string, bool, error) {
	hr, err := s.readHalf(ref.HalfOffset, ref.CommitLogOffset)
	if err != nil {
		return "", false, fmt.Errorf("find half message %d at %d: %w", ref.HalfOffset, ref.CommitLogOffset, err)
	}
	v, ok := record.LookupProperty(hr.rec.UserProperties(), name)
	return string(v), ok, nil
}

// maxRefs bounds the halves one END_TRANSACTION may name.
const maxRefs = 4096

// ParseRefs reads an END_TRANSACTION body of Samsa's client: one
// "queueOffset:commitLogOffset" a line, at most 4096.
func ParseRefs(body []byte) ([]Ref, error) {
	var out []Ref
	for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		a, c, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":"))
		k, err1 := strconv.ParseInt(string(a), 10, 64)
		p, err2 := strconv.ParseInt(string(c), 10, 64)
		if !ok || err1 != nil || err2 != nil || k < 0 || p < 0 {
			return nil, fmt.Errorf("bad half message reference %q in the END_TRANSACTION body", line)
		}
		out = append(out, Ref{k, p})
	}
	if len(out) > maxRefs {
		return nil, fmt.Errorf("%d half messages in one END_TRANSACTION, limit %d", len(out), maxRefs)
	}
	return out, nil
}
