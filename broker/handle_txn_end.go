package broker

import (
	"errors"
	"strconv"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// handleEndTransaction answers END_TRANSACTION (37), usually one-way: the
// producer's verdict on its half messages (txn.Service.End). Commit
// appends each final message and its op record; rollback only the op
// record; "not type" (the producer does not know yet) changes nothing and
// is left to the check-back. A half settled already is skipped: a
// duplicate or late verdict writes nothing. The header names one half;
// Samsa's client may list a whole transaction's halves in the body, one
// "queueOffset:commitLogOffset" a line, and they are settled together.
// A slave answers SLAVE_NOT_AVAILABLE (RocketMQ's answer).
func (b *Broker) handleEndTransaction(_ *conn, req *protocol.Command) *protocol.Command {
	if b.repl.isSlave() || b.txn == nil {
		return protocol.NewResponse(req, protocol.SlaveNotAvailable, "a slave broker does not settle transactions")
	}
	h := &protocol.EndTransactionRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	v := txn.Commit
	switch h.CommitOrRollback {
	case protocol.TransactionCommit:
	case protocol.TransactionRollback:
		v = txn.Rollback
	case protocol.TransactionNotType:
		return protocol.NewResponse(req, protocol.Success, "transaction state unknown: left to the check-back")
	default:
		return protocol.NewResponse(req, protocol.InvalidParameter, "commitOrRollback "+strconv.Itoa(int(h.CommitOrRollback))+" is not commit or rollback")
	}
	refs := []txn.Ref{{HalfOffset: h.TranStateTableOffset, CommitLogOffset: h.CommitLogOffset}}
	if len(req.Body) > 0 {
		var err error
		if refs, err = txn.ParseRefs(req.Body); err != nil {
			return protocol.NewResponse(req, protocol.InvalidParameter, err.Error())
		}
	}
	res, err := b.txn.End(h.ProducerGroup, v, refs)
	var refErr *txn.RefError
	switch {
	case errors.As(err, &refErr):
		return protocol.NewResponse(req, protocol.SystemError, refErr.Error())
	case errors.Is(err, txn.ErrSettled):
		return protocol.NewResponse(req, protocol.Success, "settled already")
	case err != nil && !errors.Is(err, storage.ErrFlushTimeout):
		b.stats.sendErrors.Add(1)
		return errorResponse(req, err)
	}
	code, remark := protocol.Success, ""
	if err != nil {
		code, remark = protocol.FlushDiskTimeout, "settled, but not flushed to disk within syncFlushTimeout"
	}
	if c, r := b.repl.replicaStatus(res); c != protocol.Success {
		code, remark = c, r
	}
	return protocol.NewResponse(req, code, remark)
}
