package broker

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// processEndTransaction answers END_TRANSACTION (37), usually one-way: the
// producer's verdict on its half messages (txn.go). Commit appends each
// final message and its op record; rollback only the op record; "not
// type" (the producer does not know yet) changes nothing and is left to
// the check-back. A half settled already is skipped: a duplicate or late
// verdict writes nothing. The header names one half; Samsa's client may
// list a whole transaction's halves in the body, one
// "queueOffset:commitLogOffset" a line, and they are settled together.
// A slave answers SLAVE_NOT_AVAILABLE (RocketMQ's answer).
func (b *Broker) processEndTransaction(_ *conn, req *protocol.Command) *protocol.Command {
	if b.isSlave() || b.txn == nil {
		return protocol.NewResponse(req, protocol.SlaveNotAvailable, "a slave broker does not settle transactions")
	}
	h := &protocol.EndTransactionRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	kind := settleCommit
	switch h.CommitOrRollback {
	case protocol.TransactionCommit:
	case protocol.TransactionRollback:
		kind = settleRollback
	case protocol.TransactionNotType:
		return protocol.NewResponse(req, protocol.Success, "transaction state unknown: left to the check-back")
	default:
		return protocol.NewResponse(req, protocol.InvalidParameter, "commitOrRollback "+strconv.Itoa(int(h.CommitOrRollback))+" is not commit or rollback")
	}
	refs := [][2]int64{{h.TranStateTableOffset, h.CommitLogOffset}}
	if len(req.Body) > 0 {
		var err error
		if refs, err = parseHalfList(req.Body); err != nil {
			return protocol.NewResponse(req, protocol.InvalidParameter, err.Error())
		}
	}
	hs := make([]halfRef, 0, len(refs))
	for _, ref := range refs {
		hr, err := b.readHalf(ref[0], ref[1])
		if err != nil {
			return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("find prepared transaction message %d at %d failed: %v", ref[0], ref[1], err))
		}
		if g, _ := record.LookupProperty(hr.rec.UserProperties(), propProducerGroup); string(g) != h.ProducerGroup {
			return protocol.NewResponse(req, protocol.SystemError, "the producer group is wrong: the half message belongs to "+string(g))
		}
		hs = append(hs, hr)
	}
	// Claim each open half; one settled already (or being settled) is
	// skipped.
	claimed := hs[:0]
	for _, hr := range hs {
		if b.txn.claim(hr.k) {
			claimed = append(claimed, hr)
		}
	}
	if len(claimed) == 0 {
		return protocol.NewResponse(req, protocol.Success, "settled already")
	}
	kinds := make([]int, len(claimed))
	for i := range claimed {
		kinds[i] = kind
		if kind == settleCommit && b.txn.needsSearch(claimed[i].k) && b.finalStored(&claimed[i]) {
			kinds[i] = settleOpOnly
		}
	}
	res, err := b.settle(claimed, kinds)
	if err != nil && !errors.Is(err, storage.ErrFlushTimeout) {
		b.stats.sendErrors.Add(1)
		return errorResponse(req, err)
	}
	code, remark := protocol.Success, ""
	if err != nil {
		code, remark = protocol.FlushDiskTimeout, "settled, but not flushed to disk within syncFlushTimeout"
	}
	if c, r := b.replicaStatus(res); c != protocol.Success {
		code, remark = c, r
	}
	return protocol.NewResponse(req, code, remark)
}

// parseHalfList reads an END_TRANSACTION body: "queueOffset:commitLogOffset"
// lines.
func parseHalfList(body []byte) ([][2]int64, error) {
	var out [][2]int64
	for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		a, c, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":"))
		k, err1 := strconv.ParseInt(string(a), 10, 64)
		p, err2 := strconv.ParseInt(string(c), 10, 64)
		if !ok || err1 != nil || err2 != nil || k < 0 || p < 0 {
			return nil, fmt.Errorf("bad half message reference %q in the END_TRANSACTION body", line)
		}
		out = append(out, [2]int64{k, p})
	}
	if len(out) > 4096 {
		return nil, fmt.Errorf("%d half messages in one END_TRANSACTION, limit 4096", len(out))
	}
	return out, nil
}
