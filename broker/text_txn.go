package broker

import (
	"errors"
	"sync"

	bmetaq "github.com/samsamq/samsa/broker/metaq"
	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/broker/xa"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/protocol/metaq"
	"github.com/samsamq/samsa/storage"
)

// MetaQ's local transactions on the text protocol, mapped onto Samsa's
// (package txn): "transaction <key> <session> BEGIN" opens a transaction
// on the connection; each "put ... <key> <opaque>" in it is stored as a
// half message (durable, invisible to consumers); COMMIT_ONE_PHASE
// settles them all with one txn.End commit (their final messages land in
// their queues and get positions then), ROLLBACK with one rollback. A
// connection that ends with a transaction open rolls it back; a broker
// that crashes first leaves its halves to the check-back, which finds no
// live producer of metaqTxGroup and discards them after
// transactionCheckMax rounds. A transaction key "XID:..." is an XA
// branch instead (text_xa.go).

// metaqTxGroup is the producer group of the text protocol's half messages.
const metaqTxGroup = "METAQ_TEXT_TX"

// metaqAppendHalf stores a put of transaction txKey as a half message:
// of metaqTxGroup, or of an XA branch (an "XID:..." key: group xa.Group,
// property SAMSA_XID).
func (b *Broker) metaqAppendHalf(m *storage.Message, txKey string) (storage.AppendResult, *bmetaq.Refusal) {
	group := metaqTxGroup
	if x, ok, err := metaqXID(txKey); ok {
		if err != nil {
			return storage.AppendResult{}, &bmetaq.Refusal{Code: metaq.BadRequest, Msg: err.Error()}
		}
		xaHalf(m, x)
		group = xa.Group
	}
	txn.ToHalf(m, group)
	res, ref := b.metaqAppend([]*storage.Message{m})
	if len(res) == 0 {
		return storage.AppendResult{}, ref
	}
	return res[0], ref
}

// textTx is one open transaction of a text connection.
type textTx struct {
	puts sync.WaitGroup // its puts being stored
	n    int            // puts read (the reader's count)
	xid  *xa.XID        // an XA branch's (text_xa.go); nil: a local transaction
	mu   sync.Mutex
	refs map[int]txn.Ref // the stored puts' halves by the order they were read
}

func (x *textTx) add(i int, h bmetaq.HalfRef) {
	x.mu.Lock()
	x.refs[i] = txn.Ref{HalfOffset: h.QueueOffset, CommitLogOffset: h.CommitLogOffset}
	x.mu.Unlock()
}

// ordered is the stored halves in the order their puts were read (the
// puts themselves run at once and are stored in any order): a commit
// appends the final messages in that order.
func (x *textTx) ordered() []txn.Ref {
	x.mu.Lock()
	defer x.mu.Unlock()
	refs := make([]txn.Ref, 0, len(x.refs))
	for i := 0; i < x.n; i++ {
		if r, ok := x.refs[i]; ok {
			refs = append(refs, r)
		}
	}
	return refs
}

// transaction answers a transaction command; false to end the connection.
// The reader alone touches t.txs.
func (t *textConn) transaction(cmd *metaq.Command) bool {
	if xid, ok, err := metaqXID(cmd.TxKey); ok {
		return t.xaTransaction(cmd, xid, err)
	}
	x := t.txs[cmd.TxKey]
	switch cmd.TxType {
	case "BEGIN":
		if x != nil {
			t.answer(metaq.AppendResult(nil, metaq.BadRequest, "transaction "+cmd.TxKey+" is begun already", cmd.Opaque), nil)
			return true
		}
		if t.c.b.txn == nil {
			t.answer(metaq.AppendResult(nil, metaq.ServiceUnavailable, "this broker takes no transactions (a slave)", cmd.Opaque), nil)
			return true
		}
		t.txs[cmd.TxKey] = &textTx{refs: make(map[int]txn.Ref)}
		t.answer(metaq.AppendResult(nil, metaq.Success, "", cmd.Opaque), nil)
	case "END":
		t.answer(metaq.AppendResult(nil, metaq.Success, "", cmd.Opaque), nil)
	case "COMMIT_ONE_PHASE", "ROLLBACK":
		if x == nil {
			t.answer(metaq.AppendResult(nil, metaq.BadRequest, "transaction "+cmd.TxKey+" is not begun on this connection", cmd.Opaque), nil)
			return true
		}
		delete(t.txs, cmd.TxKey)
		v := txn.Commit
		if cmd.TxType == "ROLLBACK" {
			v = txn.Rollback
		}
		return t.run(cmd, func() ([]byte, []byte) {
			x.puts.Wait() // its puts read before this line are stored first
			code, msg := t.c.b.endTextTx(x, v)
			return metaq.AppendResult(nil, code, msg, cmd.Opaque), nil
		})
	default:
		t.answer(metaq.AppendResult(nil, metaq.BadRequest, cmd.TxType+" is not supported for a local transaction (key TX:...); use BEGIN, COMMIT_ONE_PHASE, ROLLBACK, or an XA key XID:<formatId>:<gtrid hex>:<bqual hex>:<qualifier>", cmd.Opaque), nil)
	}
	return true
}

// putInTx stores a put of transaction cmd.TxKey; value is read.
func (t *textConn) putInTx(cmd *metaq.Command, value []byte) bool {
	x := t.txs[cmd.TxKey]
	if x == nil {
		t.answer(metaq.AppendResult(nil, metaq.BadRequest, "transaction "+cmd.TxKey+" is not begun on this connection", cmd.Opaque), nil)
		return true
	}
	x.puts.Add(1)
	i := x.n
	x.n++
	ok := t.run(cmd, func() ([]byte, []byte) {
		defer x.puts.Done()
		a, h, stored := t.c.b.metaq.PutHalf(nil, cmd, value, t.c.bornHost())
		if stored {
			x.add(i, h)
		}
		return a, nil
	})
	if !ok {
		x.puts.Done()
	}
	return ok
}

// rollbackOpen rolls back the transactions a connection left open.
func (t *textConn) rollbackOpen() {
	for key, x := range t.txs {
		x.puts.Wait()
		if x.xid != nil { // an XA branch left active: rollback-only, rolled back by the broker's sweep
			if err := t.c.b.xa.End(*x.xid, x.ordered(), xa.TMFAIL); err != nil {
				t.c.b.log.Warn("broker: ending an XA branch a text connection left active failed", "key", key, "err", err)
			}
			continue
		}
		if code, msg := t.c.b.endTextTx(x, txn.Rollback); code != metaq.Success {
			t.c.b.log.Warn("broker: rolling back a text transaction left open failed; the check-back will discard it",
				"key", key, "remote", t.c.addr, "err", msg)
		}
	}
	clear(t.txs)
}

// endTextTx settles a transaction's halves: MetaQ's code and message.
func (b *Broker) endTextTx(x *textTx, v txn.Verdict) (int, string) {
	refs := x.ordered()
	if len(refs) == 0 {
		return metaq.Success, ""
	}
	res, err := b.txn.End(metaqTxGroup, v, refs)
	var refErr *txn.RefError
	switch {
	case errors.As(err, &refErr):
		return metaq.InternalServerError, refErr.Error()
	case errors.Is(err, txn.ErrSettled):
		return metaq.Success, "settled already"
	case err != nil && !errors.Is(err, storage.ErrFlushTimeout):
		b.stats.sendErrors.Add(1)
		return metaqCode(err), "store error: " + err.Error()
	}
	code, msg := metaq.Success, ""
	if err != nil {
		code, msg = metaq.GatewayTimeout, "settled, but not flushed to disk within syncFlushTimeout"
	}
	if c, r := b.repl.replicaStatus(res); c != protocol.Success {
		code, msg = metaq.GatewayTimeout, "settled, but not on the slaves: "+r
	}
	return code, msg
}
